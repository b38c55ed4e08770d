//! Races between reads and writes of shared memory (`E0285`): a thread
//! reading what another wrote, or writing what another read, needs a `sync`
//! between; its own elements it may read and rewrite freely; a collective
//! read (`ldmatrix`) hands its lanes what other lanes wrote; a spec whose
//! outermost is the generic `Spec` (no coverage walk) is walked too; blocks
//! whose shared memory is past the walk's bound together are walked as many
//! as fit. A read of a shared element nothing has written yet is `E0298`.

use super::codes_of;
use crate::check::codes;

/// Each of 64 threads writes `%tile[WRITE]`, then `BETWEEN`, then reads
/// `%tile[READ]` into `%dst[@i]`, then `AFTER`.
fn stage(write: &str, between: &str, read: &str, after: &str) -> String {
    format!(
        "%src:[64].fp32.GL\n%dst:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
         %dst <- ROOT<<<#b, #t>>>(%src) {{\n\
         @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
         %tile:[64].fp32.SH\n\
         %tile[{write}] <- Move<<<#one, #me>>>(%src[@i])\n\
         {between}\n\
         %dst[@i] <- Move<<<#one, #me>>>(%tile[{read}])\n\
         {after}\n}}\n"
    )
}

#[test]
fn a_read_of_another_threads_write_needs_a_sync() {
    let root = |text: String| text.replace("ROOT", "Move");
    assert_eq!(
        codes_of(&root(stage("@i", "", "63 - @i", ""))),
        [codes::UNSYNCHRONISED_READ]
    );
    assert_eq!(
        codes_of(&root(stage("@i", "sync", "63 - @i", ""))),
        Vec::<&str>::new()
    );
    // Its own element, a thread reads back without one.
    assert_eq!(
        codes_of(&root(stage("@i", "", "@i", ""))),
        Vec::<&str>::new()
    );
}

#[test]
fn a_write_of_what_another_thread_read_needs_a_sync() {
    // After the barrier each thread reads its neighbour's element, then
    // overwrites its own, which its other neighbour may not have read yet.
    let rewrite = "%tile[@i] <- Move<<<#one, #me>>>(%src[@i])";
    let text = stage("@i", "sync", "63 - @i", rewrite).replace("ROOT", "Spec");
    assert_eq!(codes_of(&text), [codes::UNSYNCHRONISED_READ]);
    let fenced =
        stage("@i", "sync", "63 - @i", &format!("sync\n{rewrite}")).replace("ROOT", "Spec");
    assert_eq!(codes_of(&fenced), Vec::<&str>::new());
}

#[test]
fn an_ldmatrix_reads_what_other_lanes_wrote() {
    let path = format!("{}/examples/mma_m16n8k16.gph", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(path).expect("example");
    assert_eq!(codes_of(&src), Vec::<&str>::new());
    // The one `sync` between the staging stores and the `ldmatrix`.
    assert_eq!(
        src.matches("\n        sync\n").count(),
        1,
        "the example changed"
    );
    let unsynchronised = src.replace("\n        sync\n", "\n");
    assert_eq!(codes_of(&unsynchronised), [codes::UNSYNCHRONISED_READ]);
}

/// Each of 64 threads copies `%src[@i]` into `%tile[@i]` with `cp.async`
/// (and `%src[63 - @i]` into `%later[@i]` after `BETWEEN`), then `AFTER`,
/// then reads back its own `%tile[@i]` and `%later[@i]`.
fn copies(between: &str, after: &str) -> String {
    format!(
        "%src:[64].fp32.GL\n%dst:[64, 2].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
         %dst <- Spec<<<#b, #t>>>(%src) {{\n\
         @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
         %tile:[64].fp32.SH\n%later:[64].fp32.SH\n\
         %tile[@i] <- Move<async><<<#one, #me>>>(%src[@i])\n\
         {between}\n\
         %later[@i] <- Move<async><<<#one, #me>>>(%src[63 - @i])\n\
         {after}\n\
         %dst[@i, 0] <- Move<<<#one, #me>>>(%tile[@i])\n\
         %dst[@i, 1] <- Move<<<#one, #me>>>(%later[@i])\n}}\n"
    )
}

#[test]
fn a_copy_is_read_only_after_a_wait_has_seen_its_group() {
    let ok = Vec::<&str>::new();
    let early = [codes::ASYNC_EARLY_READ];
    // Both groups closed and waited for.
    assert_eq!(
        codes_of(&copies("async_commit", "async_commit\nasync_wait(0)")),
        ok
    );
    // No wait at all, or a wait before the second group is closed: the
    // uncommitted copy is in no group the wait sees.
    assert_eq!(codes_of(&copies("async_commit", "async_commit")), early);
    assert_eq!(codes_of(&copies("async_commit", "async_wait(0)")), early);
    // `async_wait(1)` leaves the newer group in flight.
    assert_eq!(
        codes_of(&copies("async_commit", "async_commit\nasync_wait(1)")),
        early
    );
    // One group for both, waited for.
    assert_eq!(codes_of(&copies("", "async_commit\nasync_wait(0)")), ok);
}

/// Refilling the stage the next k-tile reads: only a walk with more
/// k-tiles than stages reaches the refill, which the third, larger sample
/// of the dims gives (K = 130: three k-tiles of 64, against three stages).
#[test]
fn a_pipeline_that_refills_the_stage_it_reads_is_refused() {
    let path = format!("{}/examples/gemm_f16.gph", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(path).expect("example");
    let wrong = src.replace(
        "%sA[(k + STAGES - 1) % STAGES]",
        "%sA[(k + STAGES) % STAGES]",
    );
    assert_ne!(wrong, src, "the example changed");
    let found = codes_of(&wrong);
    assert!(found.contains(&codes::UNSYNCHRONISED_READ), "{found:?}");
    assert!(found.contains(&codes::ASYNC_EARLY_READ), "{found:?}");
}

#[test]
fn blocks_past_the_bound_together_are_walked_as_many_as_fit() {
    // 128 blocks × 65536 shared elements: more than the walk's bound of
    // 2^22 together, so it follows the first blocks and the last; the race
    // (a read of the neighbour's write with no `sync`) is in every block.
    let src = |between: &str| {
        format!(
            "%src:[64, 128].fp32.GL\n%dst:[64, 128].fp32.GL\n#b:[128].block\n#t:[64].thread\n\
             %dst <- Move<<<#b, #t>>>(%src) {{\n\
             @g = #b.indices()\n@i = #t.indices()\n\
             #one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
             %tile:[65536].fp32.SH\n\
             %tile[@i] <- Move<<<#one, #me>>>(%src[@i, @g])\n\
             {between}\n\
             %dst[@i, @g] <- Move<<<#one, #me>>>(%tile[63 - @i])\n}}\n"
        )
    };
    // (Coverage decides too: it follows the output alone, not every
    // block's shared elements at once, as it did while it held E0282.)
    assert_eq!(codes_of(&src("")), [codes::UNSYNCHRONISED_READ]);
    assert_eq!(codes_of(&src("sync")), Vec::<&str>::new());
}

/// 64 threads: `BEFORE`, then each reads `%tile[@i]` into `%dst[@i]`, then
/// `AFTER`; `%tile` is shared.
fn read_between(before: &str, after: &str) -> String {
    format!(
        "%src:[64].fp32.GL\n%dst:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
         %dst <- Move<<<#b, #t>>>(%src) {{\n\
         @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
         %tile:[64].fp32.SH\n\
         {before}\n\
         %dst[@i] <- Move<<<#one, #me>>>(%tile[@i])\n\
         {after}\n}}\n"
    )
}

#[test]
fn a_shared_element_nothing_wrote_is_not_read() {
    let write = "%tile[@i] <- Move<<<#one, #me>>>(%src[@i])";
    assert_eq!(
        codes_of(&read_between(&format!("{write}\nsync"), "")),
        Vec::<&str>::new()
    );
    // Threads 32 to 63 read elements no thread writes (E0298).
    let half = format!("if (@i < 32) {{ {write} }}\nsync");
    assert_eq!(
        codes_of(&read_between(&half, "")),
        [codes::UNWRITTEN_SHARED_READ]
    );
    // The other half written on the other arm: every element is.
    let both = format!("if (@i < 32) {{ {write} }} else {{ {write} }}\nsync");
    assert_eq!(codes_of(&read_between(&both, "")), Vec::<&str>::new());
    // Written only after the read: the read saw nothing.
    assert_eq!(
        codes_of(&read_between("", &format!("sync\n{write}"))),
        [codes::UNWRITTEN_SHARED_READ]
    );
}

#[test]
fn a_pipeline_that_reads_a_stage_before_filling_it_reads_nothing() {
    // Two stages: step k reads stage k % 2 and fills stage (k + 1) % 2;
    // without the prologue that fills stage 0, step 0 reads it empty.
    let source = |prologue: &str| {
        format!(
            "%src:[64].fp32.GL\n%dst:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n\
             %dst <- Move<<<#b, #t>>>(%src) {{\n\
             @i = #t.indices()\n#one:[].block = #b.scalar()\n#me:[].thread = #t.scalar()\n\
             %stage:[2, 64].fp32.SH\n%sum:[1].fp32.RF\n\
             {prologue}\nsync\n\
             for (k = 0; k < 2; k += 1) {{\n\
             %sum[0] <- Move<<<#one, #me>>>(%stage[k % 2, 63 - @i])\n\
             %stage[(k + 1) % 2, @i] <- Move<<<#one, #me>>>(%sum[0])\n\
             sync\n}}\n\
             %dst[@i] <- Move<<<#one, #me>>>(%stage[0, @i])\n}}\n"
        )
    };
    let prologue = "%stage[0, @i] <- Move<<<#one, #me>>>(%src[@i])";
    assert_eq!(codes_of(&source(prologue)), Vec::<&str>::new());
    assert_eq!(codes_of(&source("")), [codes::UNWRITTEN_SHARED_READ]);
}

#[test]
fn two_threads_writing_one_element_race_under_a_generic_root_too() {
    // Threads 2i and 2i + 1 both write element i: the race walk finds it
    // under `Move` and under the generic `Spec` (a fused kernel's root,
    // which the coverage walk does not judge), once either way.
    for root in ["Move", "Spec"] {
        let text = stage("@i / 2", "sync", "@i / 2", "").replace("ROOT", root);
        assert_eq!(codes_of(&text), [codes::UNSYNCHRONISED_WRITES], "{root}");
    }
    let apart = stage("@i", "sync", "@i", "").replace("ROOT", "Spec");
    assert_eq!(codes_of(&apart), Vec::<&str>::new());
}

#[test]
fn a_refill_of_a_stage_still_being_read_races_once_the_pipeline_wraps() {
    // gemm_bias_relu's three-stage pipeline with its wait and `sync` one
    // k-step early: the last k-step's fragments are read after the `sync`,
    // and the next k-tile's first step refills that stage. Only a K of
    // more than three k-tiles refills a stage it has read (the deeper
    // sample of the race walk, 264 here).
    let path = format!("{}/examples/gemm_bias_relu.gph", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(path).expect("example");
    assert_eq!(codes_of(&src), Vec::<&str>::new());
    let wait = "if (kk == KSTEPS - 1) {";
    assert_eq!(src.matches(wait).count(), 1, "the example changed");
    let early = src.replace(wait, "if (kk == KSTEPS - 2) {");
    assert_eq!(codes_of(&early), [codes::UNSYNCHRONISED_READ]);
}
