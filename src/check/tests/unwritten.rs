//! Reads of register elements a thread has not written (`E0296`): a value
//! loaded on one path and read on every path, an accumulator never
//! initialised, and — the same reads, all written first — nothing.

use super::codes_of;
use crate::check::codes;

/// 64 threads, each with a register `%v` of two elements: `BODY`, then
/// `%dst[@i] <- %v[0] + %v[1]`-like reads (`READ`).
fn kernel(body: &str, read: &str) -> String {
    format!(
        "%src:[64].fp32.GL\n%dst:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
         %dst <- Move<<<#b, #t>>>(%src) {{\n\
         @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
         %v:[2].fp32.RF\n\
         {body}\n\
         {read}\n}}\n"
    )
}

#[test]
fn a_register_written_on_some_paths_only_is_read_unwritten() {
    let read = "%dst[@i] <- Move<<<#one, #me>>>(%v[0])";
    let load = "%v[0] <- Move<<<#one, #me>>>(%src[@i])";
    assert_eq!(codes_of(&kernel(load, read)), Vec::<&str>::new());
    // Threads 32 to 63 never load it.
    let some = format!("if (@i < 32) {{ {load} }}");
    assert_eq!(
        codes_of(&kernel(&some, read)),
        [codes::UNWRITTEN_REGISTER_READ]
    );
    // Written on both arms: every thread has it.
    let both = format!("if (@i < 32) {{ {load} }} else {{ %v <- Init<0.0><<<#one, #me>>>() }}");
    assert_eq!(codes_of(&kernel(&both, read)), Vec::<&str>::new());
    // The other element was written, not this one.
    let other = "%v[1] <- Move<<<#one, #me>>>(%src[@i])";
    assert_eq!(
        codes_of(&kernel(other, read)),
        [codes::UNWRITTEN_REGISTER_READ]
    );
}

#[test]
fn an_accumulating_spec_reads_its_output() {
    // `%c = %c + %a·%a` over 1×1 operands: a MatMul adds into C.
    let source = |init: &str| {
        kernel(
            &format!(
                "%a:[1, 1].fp32.RF\n%c:[1, 1].fp32.RF\n{init}\n\
                 %a[0, 0] <- Move<<<#one, #me>>>(%src[@i])\n\
                 %c <- MatMul<<<#one, #me>>>(%a, %a)"
            ),
            "%dst[@i] <- Move<<<#one, #me>>>(%c[0, 0])",
        )
    };
    assert_eq!(codes_of(&source("")), [codes::UNWRITTEN_REGISTER_READ]);
    assert_eq!(
        codes_of(&source("%c <- Init<0.0><<<#one, #me>>>()")),
        Vec::<&str>::new()
    );
}
