//! The REPL's session: names kept across lines, values shown, lookups by
//! name, and a failed line leaving the session as it was.

use pretty_assertions::assert_eq;

use super::{attempt, eval_with, run, session, shown_text};
use crate::check::{Session, Shown, codes, group_type_text};
use crate::expr::Expr;

#[test]
fn lines_define_names_for_later_lines() {
    let mut s = Session::new();
    assert_eq!(
        run(&mut s, "const BM = 16"),
        Shown::Const {
            name: "BM".to_string(),
            value: 16
        }
    );
    let Shown::Tensor { name, view } = run(&mut s, "%1:[BM, BM : BM, 1].fp16.SH") else {
        panic!("a tensor")
    };
    assert_eq!(name.as_deref(), Some("1"));
    assert_eq!(view.base, Expr::Const(0));
    assert_eq!(s.const_value("BM"), Some(16));
    assert_eq!(s.tensor("1"), Some(&view));
    assert_eq!(s.buffer(view.buffer).map(|b| b.name.as_str()), Some("1"));

    run(&mut s, "#warp:[32].thread");
    let Shown::Group { ty, .. } = run(&mut s, "#g = #warp.tile(8).reshape(0, [2,2])") else {
        panic!("a group")
    };
    assert_eq!(
        group_type_text(&ty, &s.names()),
        "[2,2 : 8,16].[8 : 1].thread"
    );
    assert_eq!(s.group("g"), Some(&ty));
    let Shown::Indices(bound) = run(&mut s, "(@m, _), @r = #g.indices()") else {
        panic!("indices")
    };
    let names: Vec<&str> = bound.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["m", "r"]);
    assert_eq!(eval_with(s.index("r").unwrap(), 13, 0, &[]), 5);
    assert_eq!(s.defined(), ["%1", "#g", "#warp", "@m", "@r"]);
    assert_eq!(
        shown_text(&mut s, "%1.tile([8,8])[@m, 0]"),
        "[8,8 : 16,1].fp16.SH"
    );
}

#[test]
fn a_failed_line_changes_nothing() {
    let mut s = session(&["%a:[12].fp32.SH"]);
    // The tile fails; `%b` stays undefined and can be defined next.
    assert_eq!(
        attempt(&mut s, "%b = %a.tile(5)"),
        Err(vec![codes::BAD_TILE])
    );
    assert_eq!(s.tensor("b"), None);
    assert!(attempt(&mut s, "%b = %a.tile(4)").is_ok());
    // A definition that also names a new dim is rolled back whole.
    assert_eq!(
        attempt(&mut s, "%c:[M].fp32.SH"),
        Err(vec![codes::ALLOCATION_NOT_CONSTANT])
    );
    assert!(s.names().dims.is_empty());
    // A duplicate is refused and the first definition kept.
    let first = s.tensor("a").cloned();
    assert_eq!(
        attempt(&mut s, "%a:[4].fp32.RF"),
        Err(vec![codes::DUPLICATE])
    );
    assert_eq!(s.tensor("a").cloned(), first);
}

#[test]
fn expressions_are_shown_without_being_named() {
    let mut s = session(&["#w:[32].thread"]);
    let before = s.defined();
    assert_eq!(
        shown_text(&mut s, "#w.tile([4,2 : 1,16])"),
        "[4 : 4].[(4,2) : (1,16)].thread"
    );
    assert_eq!(s.defined(), before);
    assert_eq!(attempt(&mut s, "#w[0]"), Err(vec![codes::BAD_OPERATION]));
}

#[test]
fn specs_and_kernels_are_checked_whole() {
    let mut s = session(&["%x:[32].fp32.GL", "#b:[1].block", "#t:[32].thread"]);
    let Shown::Spec(spec) = run(&mut s, "%x <- Init<0.0><<<#b, #t>>>()") else {
        panic!("a spec")
    };
    assert!(spec.body.is_none());
    assert_eq!(
        attempt(&mut s, "%x <- Init<0.0><<<#b, #t.tile(8)>>>()"),
        Err(vec![codes::LAUNCH_NOT_DECLARED])
    );
    assert_eq!(attempt(&mut s, "sync"), Err(vec![codes::KERNEL_SCOPE]));
    run(&mut s, "const N = 64");
    let Shown::Kernel(kernel) = run(
        &mut s,
        "kernel k { %y:[N].fp32.GL\n#b:[1].block\n#t:[N].thread\n%y <- Init<1.0><<<#b, #t>>>() }",
    ) else {
        panic!("a kernel")
    };
    assert_eq!(kernel.name, "k");
    // The kernel's names stay inside it.
    assert_eq!(s.tensor("y"), None);
    assert_eq!(run(&mut s, ""), Shown::Nothing);
}
