//! The golden harness itself (`tests/support/golden.rs`): only `BLESS=1`
//! rewrites an expected file — `BLESS=0`, other values and no value compare —
//! and a missing expected file fails, naming its path.

mod support;

use std::ffi::OsStr;

use support::golden::{self, Outcome};

/// Set in the child run of this test binary: the expected file it compares
/// a changed result with, under the `BLESS` the parent chose.
const CHILD_GOLDEN: &str = "GRAPHENE_GOLDEN_HARNESS_CHILD";

#[test]
fn only_bless_1_blesses() {
    assert!(golden::blesses(Some(OsStr::new("1"))));
    for value in ["0", "", "true", "yes", "01", "1 ", "2"] {
        assert!(
            !golden::blesses(Some(OsStr::new(value))),
            "BLESS={value:?} blesses"
        );
    }
    assert!(!golden::blesses(None), "an unset BLESS blesses");
}

#[test]
fn a_differing_result_is_reported_and_left_unwritten() {
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("case.out");
    std::fs::write(&path, "old\n").unwrap();
    assert_eq!(golden::compare_as(false, &path, "old\n"), Outcome::Matches);
    assert_eq!(
        golden::compare_as(false, &path, "new\n"),
        Outcome::Differs {
            expected: "old\n".to_string()
        }
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    assert_eq!(golden::compare_as(true, &path, "new\n"), Outcome::Blessed);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
}

#[test]
#[should_panic(expected = "never_written.out: no expected file")]
fn a_missing_expected_file_fails_naming_it() {
    let folder = tempfile::tempdir().unwrap();
    golden::compare_as(false, &folder.path().join("never_written.out"), "text\n");
}

/// Runs this test again in a child process whose environment holds `bless`
/// as `BLESS` (or none), comparing `new` with the expected file at `path`;
/// whether the child passed.
fn child_passes(bless: Option<&str>, path: &std::path::Path) -> bool {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "bless_0_does_not_bless", "--nocapture"])
        .env(CHILD_GOLDEN, path);
    match bless {
        Some(value) => command.env(golden::BLESS, value),
        None => command.env_remove(golden::BLESS),
    };
    command
        .output()
        .expect("the test binary runs again")
        .status
        .success()
}

/// End to end through the environment, as a developer would run it: a
/// changed result under `BLESS=0` (or no `BLESS`) fails and leaves the
/// expected file as it was; under `BLESS=1` it passes and rewrites it.
#[test]
fn bless_0_does_not_bless() {
    if let Some(path) = std::env::var_os(CHILD_GOLDEN) {
        golden::check(std::path::Path::new(&path), "new\n");
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("case.out");
    for bless in [Some("0"), None] {
        std::fs::write(&path, "old\n").unwrap();
        assert!(!child_passes(bless, &path), "BLESS={bless:?} accepted it");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "old\n",
            "BLESS={bless:?} rewrote the expected file"
        );
    }
    assert!(child_passes(Some("1"), &path), "BLESS=1 did not accept it");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
}
