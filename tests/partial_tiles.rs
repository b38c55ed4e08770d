//! Partial tiles end to end on the CPU executor: a copy over `.tile_partial`
//! views with `Move<masked>` is correct and stays inside its tensors at
//! every length, and it is the predicates that keep it there — with them
//! stripped from the PTX, the executor reports the accesses past the end.

use graphene::compile::{self, Options};
use graphene::exec::FindingKind;
use graphene::launch::{CpuRun, DimArg, run_kernel_cpu, select};

/// Each thread copies one element of N through a register; the loads and
/// stores of the last block's threads past N are masked.
const MASKED_COPY: &str = "
kernel copy_any {
    %X:[N].fp32.GL
    %Y:[N].fp32.GL
    #grid:[ceil_div(N, 256)].block
    #block:[256].thread
    %Y <- Move<<<#grid, #block>>>(%X) {
        @b = #grid.indices()
        @t = #block.indices()
        #one:[].block = #grid.scalar()
        #me:[].thread = #block.scalar()
        %r:[1].fp32.RF
        %r <- Move<masked><<<#one, #me>>>(%X.tile_partial([256])[@b].tile([1])[@t])
        %Y.tile_partial([256])[@b].tile([1])[@t] <- Move<masked><<<#one, #me>>>(%r)
    }
}
";

/// Each thread copies 4 consecutive elements (one 16-byte vector where the
/// whole vector exists and is aligned, element by element otherwise).
const MASKED_VECTOR_COPY: &str = "
kernel copy_vectors {
    %X:[N].fp32.GL
    %Y:[N].fp32.GL
    #grid:[ceil_div(N, 512)].block
    #block:[128].thread
    %Y <- Move<<<#grid, #block>>>(%X) {
        @b = #grid.indices()
        @t = #block.indices()
        #one:[].block = #grid.scalar()
        #me:[].thread = #block.scalar()
        %r:[4].fp32.RF
        %r <- Move<masked><<<#one, #me>>>(%X.tile_partial([512])[@b].tile([4])[@t])
        %Y.tile_partial([512])[@b].tile([4])[@t] <- Move<masked><<<#one, #me>>>(%r)
    }
}
";

fn run(source: &str, ptx_edit: impl Fn(&str) -> String, n: u32) -> CpuRun {
    let compiled = compile::compile("copy.gph", source, &Options::default())
        .unwrap_or_else(|d| panic!("does not compile: {d:?}"));
    let dims = [DimArg {
        name: "N".into(),
        value: n,
    }];
    let selected = select(&compiled, None, &dims).unwrap_or_else(|e| panic!("{e}"));
    let ptx = ptx_edit(&compiled.text);
    run_kernel_cpu(&ptx, &selected[0].plan, &selected[0].contract, 7, true)
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn masked_copies_are_correct_and_in_bounds_at_every_length() {
    for source in [MASKED_COPY, MASKED_VECTOR_COPY] {
        for n in [1, 3, 255, 256, 257, 514, 1000] {
            let run = run(source, str::to_string, n);
            assert!(
                run.exec.findings.is_empty(),
                "N = {n}: {:#?}",
                run.exec.findings
            );
            assert!(run.passed(), "N = {n}: {}", run.line());
        }
    }
}

#[test]
fn without_the_predicates_the_copy_leaves_its_tensors() {
    // `@%p3 ld.global.f32 …` → `ld.global.f32 …`.
    let unguarded = |ptx: &str| {
        ptx.lines()
            .map(|line| {
                let trimmed = line.trim_start();
                match trimmed.strip_prefix('@') {
                    Some(rest) if rest.contains("ld.global") || rest.contains("st.global") => {
                        rest.split_once(' ').map_or(line, |(_, op)| op).to_string()
                    }
                    Some(_) | None => line.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let run = run(MASKED_COPY, unguarded, 1000);
    assert!(
        run.exec
            .findings
            .iter()
            .any(|f| matches!(f.kind, FindingKind::GlobalOutOfBounds { .. })),
        "{:#?}",
        run.exec.findings
    );
    assert!(!run.passed());
}
