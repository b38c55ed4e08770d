//! The warpgroup multiply with A in registers (`wgmma` RS form), on
//! examples/fmha_sm90.gph and mutations of it: O += P·V takes P from the
//! registers the scores' accumulators were rounded into. The selection
//! emits the `/regA` form (four registers for A, no transpose bit for A);
//! the checker follows those registers while the multiply may read them;
//! an empty `mma_commit` is a group `mma_wait` counts; and a wait placed
//! after register work is pinned there (`membar.cta`).

mod ptx_support;
mod support;

use graphene::compile::{Options, check, compile};
use graphene::diag::Diagnostic;
use graphene::ptx::Arch;

const EXAMPLE: &str = include_str!("../examples/fmha_sm90.gph");

/// The example with `from` replaced by `to` (which must occur once).
fn mutated(from: &str, to: &str) -> String {
    assert_eq!(EXAMPLE.matches(from).count(), 1, "`{from}` must occur once");
    EXAMPLE.replacen(from, to, 1)
}

/// The base kernel only (the file's causal variant would double every count).
fn base_only() -> Options {
    Options {
        kernels: vec!["fmha_sm90".to_string()],
        ..Options::default()
    }
}

fn ptx(src: &str) -> String {
    let options = base_only();
    if let Err(errors) = check("fmha_sm90", src, &options) {
        panic!("{errors:#?}");
    }
    let compiled = compile("fmha_sm90", src, &options).unwrap_or_else(|e| panic!("{e:#?}"));
    compiled
        .module
        .expect("PTX was asked for")
        .to_ptx()
        .unwrap()
}

fn check_errors(src: &str) -> Vec<Diagnostic> {
    check("fmha_sm90", src, &base_only()).map_or_else(|errors| errors, |_| Vec::new())
}

fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.contains(needle))
        .collect()
}

/// The P·V multiply of the loop: the statement whose A is `%ph`.
const PV: &str = "%oacc <- MatMul<async><<<#one, #wgs>>>(%ph[0, kk], %wV[kk])";

#[test]
fn p_times_v_reads_a_from_four_registers_without_a_transpose_bit() {
    let text = ptx(EXAMPLE);
    let pv = lines_with(&text, "wgmma.mma_async.sync.aligned.m64n64k16");
    assert_eq!(pv.len(), 8, "BC/16 k-steps of O += P·V");
    for line in &pv {
        // d (32 accumulators), {a0..a3}, b-desc, scale-d, scale-a,
        // scale-b, trans-b: V is N-major, so B is transposed.
        let a = line.split('}').nth(1).unwrap();
        assert!(a.trim_start().starts_with(", {%r"), "{line}");
        assert_eq!(a.split('{').nth(1).unwrap().split(',').count(), 4, "{line}");
        assert!(line.ends_with(", 1, 1, 1, 1;"), "{line}");
    }
    // S = Q·Kᵀ reads both from shared memory: two descriptors, two bits.
    let s = lines_with(&text, "wgmma.mma_async.sync.aligned.m64n128k16");
    assert_eq!(s.len(), 4);
    assert!(s.iter().all(|l| l.ends_with(", 1, 1, 1, 0, 0;")), "{s:?}");
    if ptx_support::tools_available() {
        let options = base_only();
        let module = compile("fmha_sm90", EXAMPLE, &options)
            .unwrap()
            .module
            .unwrap();
        let expected = [("fmha_sm90", ptx_support::mnemonics(&["HGMMA", "MUFU"]))];
        let expected: Vec<(&str, Vec<String>)> = expected
            .iter()
            .map(|(name, sass)| (*name, sass.clone()))
            .collect();
        ptx_support::check_module(&module, Arch::Sm90a, &expected);
    }
}

#[test]
fn an_a_in_registers_of_another_shape_is_refused_with_the_shape_it_needs() {
    // One 64×8 accumulator tile's worth (4 halves) is not a 64×16 A.
    let src = mutated(
        PV,
        "%oacc <- MatMul<async><<<#one, #wgs>>>(%ph[0, kk][0, 0], %wV[kk])",
    );
    let Err(errors) = compile("fmha_sm90", &src, &base_only()) else {
        panic!("a 4-element A must be refused");
    };
    let text = format!("{errors:?}");
    assert!(
        text.contains("takes 8 elements of A per thread from registers"),
        "{text}"
    );
}

#[test]
fn p_overwritten_while_the_multiply_may_read_it_is_an_error() {
    // Rounding the scores into P again right after O += P·V is issued
    // writes P while that multiply may still read it.
    let src = mutated(
        &format!("{PV}\n            }}\n            mma_commit"),
        &format!(
            "{PV}\n            }}\n            %ph <- Move<<<#one, #me>>>(%sc)\n            mma_commit"
        ),
    );
    let errors = check_errors(&src);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].code, "E0262");
    assert_eq!(
        errors[0].message,
        "`%ph` is overwritten while a `MatMul<async>` may still be reading it"
    );
    // Without the wait after it, O's next use reads accumulators in flight.
    let src = mutated(
        &format!("{PV}\n            }}\n            mma_commit\n            mma_wait(0)"),
        &format!("{PV}\n            }}\n            mma_commit"),
    );
    let errors = check_errors(&src);
    assert!(
        errors.iter().all(|d| d.message
            == "`%oacc` is used while a `MatMul<async>` may still be writing it"),
        "{errors:#?}"
    );
    assert!(!errors.is_empty());
}

#[test]
fn reading_p_while_the_multiply_reads_it_is_allowed() {
    // A second multiply reading the same P before the wait is fine.
    let src = mutated(PV, &format!("{PV}\n                {PV}"));
    assert!(check_errors(&src).is_empty(), "{:#?}", check_errors(&src));
}

#[test]
fn an_empty_mma_commit_is_a_group_that_waits_count() {
    // S's group, then an empty one: `mma_wait(1)` leaves only the empty
    // group pending, so the scores may be read. Counting only non-empty
    // groups would keep S pending and refuse the softmax.
    let src = mutated(
        "            mma_commit\n            mma_wait(0)\n\n            // Keys past S",
        "            mma_commit\n            mma_commit\n            mma_wait(1)\n\n            // Keys past S",
    );
    assert!(check_errors(&src).is_empty(), "{:#?}", check_errors(&src));
    // And `mma_wait(2)` there leaves S pending: refused.
    let src = mutated(
        "            mma_commit\n            mma_wait(0)\n\n            // Keys past S",
        "            mma_commit\n            mma_commit\n            mma_wait(2)\n\n            // Keys past S",
    );
    let errors = check_errors(&src);
    assert!(
        errors
            .iter()
            .any(|d| d.code == "E0262" && d.message.contains("`%sc`")),
        "{errors:#?}"
    );
}

#[test]
fn a_wait_after_register_work_is_pinned_below_it() {
    // The example waits right after each commit: nothing to pin.
    assert!(lines_with(&ptx(EXAMPLE), "membar").is_empty());
    // Register work between S's commit and its wait: `membar.cta` right
    // before the wait, so that ptxas does not hoist the wait above it.
    let src = mutated(
        "            mma_commit\n            mma_wait(0)\n\n            // Keys past S",
        "            mma_commit\n            %l <- BinaryPointwise<add><<<#one, #me>>>(%l, %l)\n            mma_wait(0)\n\n            // Keys past S",
    );
    let text = ptx(&src);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let pinned: Vec<usize> = (1..lines.len())
        .filter(|&i| lines[i].starts_with("wgmma.wait_group") && lines[i - 1] == "membar.cta;")
        .collect();
    assert_eq!(pinned.len(), 1, "{text}");
    assert_eq!(lines_with(&text, "membar").len(), 1, "{text}");
}
