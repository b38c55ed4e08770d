//! Coverage: every example is proved to write its output exactly once
//! (no error, no note), within the time a compile can afford; a kernel too
//! large to enumerate gets the note, not an error; an accumulating
//! `MatMul` may add into its elements from one thread only; accumulating
//! stores (`Move<add>`) from any threads and blocks, into an accumulating
//! output that nothing else writes; a block reduction separates shared
//! writes as a `sync` does.

use std::time::{Duration, Instant};

use super::codes_of;
use crate::check::check_file_warned;
use crate::check::codes;
use crate::syntax::parse_file;

#[test]
fn every_example_is_proved_covered() {
    let dir = format!("{}/examples", env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("examples") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|ext| ext != "gph") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("example");
        let file = parse_file("example.gph", &src).expect("parses");
        let start = Instant::now();
        let (_, warnings) =
            check_file_warned(&file, &[]).unwrap_or_else(|d| panic!("{}: {d:#?}", path.display()));
        let spent = start.elapsed();
        assert!(warnings.is_empty(), "{}: {warnings:#?}", path.display());
        // Generous against a loaded machine (the heaviest file, seven GEMM
        // kernels each walked at three samples for coverage and for races,
        // takes about half a second alone); an unoptimised build is slower.
        if !cfg!(debug_assertions) {
            assert!(
                spent < Duration::from_millis(2000),
                "{}: checked in {spent:?}",
                path.display()
            );
        }
        seen += 1;
    }
    assert!(seen >= 10, "only {seen} examples");
}

#[test]
fn a_kernel_past_the_budget_gets_a_note() {
    // 4096 blocks × 1024 threads × 2 elements: 2^23 writes.
    let src = "%a:[2, 1024, 4096].fp32.GL\n#b:[4096].block\n#t:[1024].thread\n\
               %a <- Init<0.0><<<#b, #t>>>() {\n\
               @i = #b.indices()\n@j = #t.indices()\n\
               #one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
               %a[_, @j, @i] <- Init<0.0><<<#one, #me>>>()\n}\n";
    let file = parse_file("big.gph", src).expect("parses");
    let (_, warnings) = check_file_warned(&file, &[]).expect("accepted");
    let found: Vec<&str> = warnings.iter().map(|d| d.code).collect();
    assert_eq!(found, [codes::COVERAGE_NOT_PROVED]);
    assert!(warnings[0].message.contains("too large to enumerate"));
}

const ACCUMULATE: &str = "%a:[4, 4].fp32.GL\n%b:[4, 4].fp32.GL\n%c:[4, 4].fp32.GL\n\
    #b:[1].block\n#t:[THREADS].thread\n\
    %c <- MatMul<<<#b, #t>>>(%a, %b) {\n\
    @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
    for (k = 0; k < 4; k += 1) {\n for (n = 0; n < 4; n += 1) {\n\
    %c[@i % 4, n] <- MatMul<<<#one, #me>>>(%a[@i % 4, k], %b[k, n])\n}}\n}\n";

#[test]
fn a_matmul_adds_into_an_element_from_one_thread_only() {
    // Four threads, one row each, adding over k: covered.
    assert_eq!(
        codes_of(&ACCUMULATE.replace("THREADS", "4")),
        Vec::<&str>::new()
    );
    // Eight threads: rows 0..3 get a second thread adding in.
    assert_eq!(
        codes_of(&ACCUMULATE.replace("THREADS", "8")),
        [codes::WRITTEN_TWICE]
    );
}

#[test]
fn a_barrier_on_the_block_id_is_accepted() {
    let src = "%a:[64, 2].fp32.GL\n#b:[2].block\n#t:[64].thread\n\
               %a <- Init<0.0><<<#b, #t>>>() {\n\
               @i = #b.indices()\n@j = #t.indices()\n\
               #one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
               if (@i == 0) {\n sync\n}\n\
               %a[@j, @i] <- Init<0.0><<<#one, #me>>>()\n}\n";
    assert_eq!(codes_of(src), Vec::<&str>::new());
}

/// Each thread writes its shared element, reduces, then writes its
/// neighbour's: the second writes meet the first unless a barrier is
/// between.
const NEIGHBOURS: &str = "%a:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
    %a <- Init<0.0><<<#b, #t>>>() {\n\
    @j = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
    %s:[64].fp32.SH\n%v:[].fp32.RF\n%r:[].fp32.RF\n\
    %v <- Init<1.0><<<#one, #me>>>()\n\
    %s[@j] <- Move<<<#one, #me>>>(%v)\n\
    %r <- Reduction<add, []><<<#one, GROUP>>>(%v)\n\
    %s[(@j + 1) % 64] <- Move<<<#one, #me>>>(%r)\n\
    %a[@j] <- Init<0.0><<<#one, #me>>>()\n}\n";

#[test]
fn a_block_reduction_is_a_barrier_and_a_warp_reduction_is_not() {
    // The block's 64 threads reduce together, through a `bar.sync`.
    assert_eq!(
        codes_of(&NEIGHBOURS.replace("GROUP", "#t")),
        Vec::<&str>::new()
    );
    // Each warp reduces alone: thread 31's second write meets thread 32's first.
    assert_eq!(
        codes_of(&NEIGHBOURS.replace("GROUP", "#t.tile(32)")),
        [codes::UNSYNCHRONISED_WRITES]
    );
}

/// A split K: block z multiplies k = 2z, 2z + 1 into registers, and each
/// thread stores its row of partial sums into `%c` with `STORE`, under the
/// outermost `ROOT`.
const SPLIT: &str = "%a:[4, 4].fp32.GL\n%b:[4, 4].fp32.GL\n%c:[4, 4].fp32.GL\n\
    #g:[2].block\n#t:[4].thread\n\
    %c <- ROOT<<<#g, #t>>>(%a, %b) {\n\
    @z = #g.indices()\n@i = #t.indices()\n\
    #one:[].block = #g.scalar()\n#me:[].thread = #t.scalar()\n\
    %acc:[1, 4].fp32.RF\n%acc <- Init<0.0><<<#one, #me>>>()\n\
    for (k = 0; k < 2; k += 1) {\n for (n = 0; n < 4; n += 1) {\n\
    %acc[0, n] <- MatMul<<<#one, #me>>>(%a[@i, 2 * @z + k], %b[2 * @z + k, n])\n}}\n\
    EXTRA\n%c[@i, _] <- STORE<<<#one, #me>>>(%acc)\n}\n";

fn split(root: &str, store: &str, extra: &str) -> Vec<&'static str> {
    codes_of(
        &SPLIT
            .replace("ROOT", root)
            .replace("STORE", store)
            .replace("EXTRA", extra),
    )
}

#[test]
fn blocks_add_partial_sums_into_an_accumulating_output() {
    // Both blocks add into every element: a split K, covered.
    assert_eq!(split("MatMul", "Move<add>", ""), Vec::<&str>::new());
    assert_eq!(split("MatMul", "Move<masked, add>", ""), Vec::<&str>::new());
    // The same stores overwriting: the second block's is a double write.
    assert_eq!(split("MatMul", "Move", ""), [codes::WRITTEN_TWICE]);
}

#[test]
fn an_add_needs_an_output_that_accumulates_and_nothing_else_writing_it() {
    // The contract `C = A·B` has no place for the old value an add keeps.
    assert_eq!(
        split("MatMul<overwrite>", "Move<add>", ""),
        [codes::ADD_NOT_ACCUMULATED]
    );
    // Block 0 overwrites row 0 first, then both blocks add into it: the
    // result depends on the blocks' order.
    let overwrite = "if (@z == 0 && @i == 0) { %c[0, _] <- Move<<<#one, #me>>>(%acc) }";
    assert_eq!(
        split("MatMul", "Move<add>", overwrite),
        [codes::ADD_NOT_ACCUMULATED]
    );
}

#[test]
fn the_split_k_example_is_refused_with_plain_stores() {
    let path = format!(
        "{}/examples/gemm_f16_tma_sm90.gph",
        env!("CARGO_MANIFEST_DIR")
    );
    let src = std::fs::read_to_string(path).expect("example");
    assert!(src.contains("Move<masked, add>"));
    assert_eq!(codes_of(&src), Vec::<&str>::new());
    assert_eq!(
        codes_of(&src.replace("Move<masked, add>", "Move<masked>")),
        [codes::WRITTEN_TWICE]
    );
}
