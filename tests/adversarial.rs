//! The adversarial input families of `benches/adversarial.rs` at a moderate
//! size: each is accepted, or refused with the diagnostic that names its
//! problem (the bench measures their time and memory at ~10 MB).

mod adversarial_support;

use adversarial_support as inputs;
use graphene::check::Session;
use graphene::compile::{Options, check_line, compile};
use graphene::diag::Diagnostic;

fn outcome(text: &str) -> Result<(), Vec<Diagnostic>> {
    compile("adversarial.gph", text, &Options::default()).map(|_| ())
}

fn codes(text: &str) -> Vec<&'static str> {
    outcome(text)
        .err()
        .unwrap_or_default()
        .iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn a_huge_unknown_identifier_is_one_undefined_name() {
    let found = outcome(&inputs::unknown_identifier(200_000)).unwrap_err();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].code, "E0200");
}

#[test]
fn many_similar_names_still_suggest_the_nearest() {
    let found = outcome(&inputs::similar_names(5_000)).unwrap_err();
    assert_eq!(found[0].code, "E0200");
    let help = found[0].help.as_deref().unwrap_or_default();
    assert!(help.contains("NAME_0000000"), "{help}");
}

#[test]
fn thousands_of_chained_constants_check() {
    assert_eq!(outcome(&inputs::const_lines(5_000)), Ok(()));
}

#[test]
fn chains_deeper_than_the_limit_are_one_nesting_error() {
    for text in [
        inputs::chained_calls(5_000),
        inputs::conjunction(5_000),
        inputs::long_sum(5_000),
    ] {
        assert_eq!(codes(&text), ["E0119"]);
    }
    // Below the limit, each is an ordinary program.
    assert_eq!(outcome(&inputs::conjunction(50)), Ok(()));
    assert_eq!(outcome(&inputs::long_sum(50)), Ok(()));
}

#[test]
fn a_long_unrolled_loop_lowers() {
    let compiled = compile(
        "unrolled.gph",
        &inputs::unrolled(2_000),
        &Options::default(),
    )
    .unwrap();
    let ptx = compiled.ptx().unwrap();
    // Each iteration stores its own element: the loop was unrolled.
    assert!(ptx.matches("st.global").count() >= 2_000);
}

#[test]
fn a_huge_repl_line_is_accepted() {
    let mut session = Session::new();
    let line = inputs::repl_line(200_000);
    let checked = check_line(&mut session, &line, |_| Ok::<(), Vec<Diagnostic>>(()));
    assert!(checked.is_ok());
}
