//! Skipping a test visibly. The test harness has no skip status, so a test
//! that cannot check anything here returns early and passes; the line written
//! here is what keeps that pass from reading as a check. It goes straight to
//! the process's stderr — `eprintln!` would be captured and shown only for
//! failing tests — where `scripts/test.sh` finds it in its log and counts the
//! skips per reason.

use std::io::Write;

/// The variable that makes the NVIDIA tools mandatory (`scripts/test.sh`
/// sets it to `1`).
pub const REQUIRE_TOOLS: &str = "GRAPHENE_REQUIRE_PTXAS";

/// Whether ptxas and nvdisasm are required: then a check that needs them
/// fails instead of skipping.
pub fn tools_required() -> bool {
    std::env::var(REQUIRE_TOOLS).is_ok_and(|value| value == "1")
}

/// Writes `skipped: <reason> (<detail>) [<test>]` to stderr. `reason` is the
/// short, fixed part the skips are counted by (it holds no `(` or `[`);
/// `detail` says what was found on this machine.
pub fn skip(reason: &str, detail: &str) {
    assert!(
        !reason.contains(['(', '[']),
        "a skip reason is counted up to its first `(` or `[`: {reason:?}"
    );
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("unnamed test");
    let line = format!("skipped: {reason} ({detail}) [{test}]\n");
    // One write per line, so that lines of tests running at once do not mix.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Skips a check that needs ptxas or nvdisasm, which `detail` says are
/// missing — or fails when the tools are required.
pub fn skip_without_tools(detail: &str) {
    assert!(
        !tools_required(),
        "{REQUIRE_TOOLS}=1 but {detail}; run `source scripts/nvidia-tools.sh`"
    );
    skip("NVIDIA tools missing", detail);
}
