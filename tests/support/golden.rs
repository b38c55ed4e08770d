//! The golden-file harness: golden data lives under the workspace's
//! `tests/golden/<area>/`, a result is compared with its expected file byte
//! for byte, and `BLESS=1` — read here and nowhere else — rewrites the
//! expected files instead. Unset, `BLESS=0` or any other value compares, and
//! a missing expected file is a failure that names its path, so that a run
//! can never accept a changed output it was not asked to.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The environment variable that asks for expected files to be rewritten.
pub const BLESS: &str = "BLESS";

/// Whether a value of `BLESS` asks for rewriting: exactly `1`.
pub fn blesses(value: Option<&OsStr>) -> bool {
    value.is_some_and(|value| value == "1")
}

/// Whether this run rewrites expected files (`BLESS=1`).
pub fn blessing() -> bool {
    blesses(std::env::var_os(BLESS).as_deref())
}

/// `tests/golden/<area>` of the workspace. The REPL crate's manifest is one
/// folder below the workspace's, so the nearest `tests/golden` above the
/// running crate's manifest is the one.
pub fn dir(area: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest
        .ancestors()
        .map(|folder| folder.join("tests/golden"))
        .find(|candidate| candidate.is_dir())
        .unwrap_or_else(|| panic!("no tests/golden above {}", manifest.display()));
    root.join(area)
}

/// What comparing a result with its expected file found.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The expected file holds exactly the result.
    Matches,
    /// `BLESS=1`: the result was written as the expected file.
    Blessed,
    /// The expected file holds something else.
    Differs {
        /// The expected file's text.
        expected: String,
    },
}

/// Compares `actual` with the expected file at `path`, or writes it there
/// when `bless`. Panics, naming the path, when the file is missing or
/// unreadable and `bless` is false.
pub fn compare_as(bless: bool, path: &Path, actual: &str) -> Outcome {
    if bless {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|error| panic!("{}: {error}", parent.display()));
        }
        std::fs::write(path, actual).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        return Outcome::Blessed;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|error| {
        panic!(
            "{}: no expected file ({error}); `BLESS=1` writes it",
            path.display()
        )
    });
    if expected == actual {
        Outcome::Matches
    } else {
        Outcome::Differs { expected }
    }
}

/// [`compare_as`] under this run's `BLESS`.
pub fn compare(path: &Path, actual: &str) -> Outcome {
    compare_as(blessing(), path, actual)
}

/// Fails with a line-by-line difference when `actual` differs from the
/// expected file at `path` (rewriting it instead under `BLESS=1`).
pub fn check(path: &Path, actual: &str) {
    if let Outcome::Differs { expected } = compare(path, actual) {
        pretty_assertions::assert_eq!(
            expected.as_str(),
            actual,
            "{} differs (`BLESS=1` rewrites it)",
            path.display()
        );
    }
}
