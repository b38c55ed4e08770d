//! The warpgroup `MatMul` from IR text: a warpgroup multiplies 64×16 tiles
//! of A by 16×N tiles of B straight from 128-byte-swizzled shared memory
//! (`wgmma.mma_async`, sm_90a). `MatMul<async>` k-steps form one batch
//! (one `wgmma.fence`, then `mma_commit` / `mma_wait`); a plain `MatMul` waits
//! for itself. The PTX assembles for sm_90a with `HGMMA` in its SASS, and
//! the specs the instruction cannot take are refused with the reason.

mod ptx_support;
mod support;

use graphene::compile::{Options, check, compile};
use graphene::diag::Diagnostic;
use graphene::ptx::{Arch, Module};

fn lower(name: &str, src: &str, arch: Option<Arch>) -> Result<Module, Vec<Diagnostic>> {
    let options = Options {
        arch,
        ..Options::default()
    };
    if let Err(d) = check(name, src, &options) {
        panic!("{name}: {d:#?}");
    }
    compile(name, src, &options).map(|compiled| compiled.module.expect("PTX was asked for"))
}

/// One warpgroup computes C (64×N, fp32) = A (64×64) · B (64×N), both
/// staged in shared memory K-major under `Swizzle<3,3,3>`, in four k-steps
/// written as `kind`; `a_tile` and `group` pick A's tile and the executing
/// group (the knobs the refusals turn).
fn kernel(n: i64, kind: &str, a_tile: &str, group: &str, sync: &str) -> String {
    format!(
        "
const N = {n}
kernel wgmma_n{n} {{
    %A:[64, 64 : 64, 1].fp16.GL
    %B:[64, N : 1, 64].fp16.GL
    %C:[64, N : N, 1].fp32.GL
    #b:[1].block
    #t:[128].thread
    %C <- MatMul<overwrite><<<#b, #t>>>(%A, %B) {{
        #one:[].block = #b.scalar()
        #me:[].thread = #t.scalar()
        #wg = #t.tile(128)
        #warp = #t.tile(32)
        @w, @l = #warp.indices()
        #lanes = #warp.reshape(1, [4, 8])
        @w2, (@ct, @cg) = #lanes.indices()
        %sA:[64, 64 : 64, 1].fp16.SH.Swizzle<3, 3, 3>
        %sB:[64, N : 1, 64].fp16.SH.Swizzle<3, 3, 3>
        #cp = #t.reshape(0, [8, 16])
        @kc, @r = #cp.indices()
        for (i = 0; i < 4; i += 1) {{
            %sA.tile([16, 8])[i, @kc][@r, _] <- Move<<<#one, #me>>>(%A.tile([16, 8])[i, @kc][@r, _])
        }}
        for (i = 0; i < N / 16; i += 1) {{
            %sB.tile([8, 16])[@kc, i][_, @r] <- Move<<<#one, #me>>>(%B.tile([8, 16])[@kc, i][_, @r])
        }}
        sync
        %acc:[1, N/8].[2, 1].[1, 2].fp32.RF
        %acc <- Init<0.0><<<#one, #me>>>()
        for (kk = 0; kk < 4; kk += 1) {{
            %acc <- {kind}<<<#one, {group}>>>(%sA.tile({a_tile})[0, kk], %sB.tile([16, N])[kk, 0])
        }}
        {sync}
        %wC = %C.tile([16, 8])
        for (j = 0; j < N/8; j += 1) {{
            %cl = %wC[@w, j].tile([8, 8]).tile([1, 2])[_, _, @cg, @ct]
            for (h = 0; h < 2; h += 1) {{
                %cl[h, 0] <- Move<<<#one, #me>>>(%acc[0, j][h, 0])
            }}
        }}
    }}
}}
"
    )
}

fn batched(n: i64) -> String {
    kernel(
        n,
        "MatMul<async>",
        "[64, 16]",
        "#wg",
        "mma_commit\n        mma_wait(0)",
    )
}

fn lines_starting(text: &str, prefix: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| line.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

fn check_errors(src: &str) -> Vec<Diagnostic> {
    check("pending", src, &Options::default()).map_or_else(|errors| errors, |_| Vec::new())
}

fn refusal(src: &str, arch: Option<Arch>) -> String {
    let errors = lower("refused", src, arch).expect_err("the spec must be refused");
    errors
        .iter()
        .map(|error| format!("{error:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn async_k_steps_form_one_batch_and_assemble_for_sm_90a() {
    for n in [64, 256] {
        let src = batched(n);
        let module = lower("batched", &src, None).unwrap_or_else(|e| panic!("{e:#?}"));
        let text = module.to_ptx().unwrap();
        assert!(text.contains(".target sm_90a"), "{text}");
        let mmas = lines_starting(&text, "wgmma.mma_async");
        assert_eq!(mmas.len(), 4, "{text}");
        for line in &mmas {
            assert!(
                line.starts_with(&format!(
                    "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 {{"
                )),
                "{line}"
            );
            assert!(line.ends_with(", 1, 1, 1, 0, 0;"), "{line}");
            let accumulators = line.split('{').nth(1).unwrap().split('}').next().unwrap();
            assert_eq!(accumulators.split(',').count(), (n / 2) as usize);
        }
        assert_eq!(lines_starting(&text, "wgmma.fence").len(), 1, "{text}");
        assert_eq!(lines_starting(&text, "wgmma.commit_group").len(), 1);
        assert_eq!(
            lines_starting(&text, "wgmma.wait_group"),
            ["wgmma.wait_group.sync.aligned 0;"]
        );
        // The descriptor's fields: stride 1024 bytes, 128-byte swizzle.
        assert!(
            text.contains(&format!("{}", 0x4000_0040_0001_0000_i64)),
            "{text}"
        );
        if ptx_support::tools_available() {
            let expected = [(
                format!("wgmma_n{n}"),
                ptx_support::mnemonics(&["HGMMA", "WARPGROUP"]),
            )];
            let expected: Vec<(&str, Vec<String>)> = expected
                .iter()
                .map(|(name, sass)| (name.as_str(), sass.clone()))
                .collect();
            ptx_support::check_module(&module, Arch::Sm90a, &expected);
        }
    }
}

#[test]
fn a_plain_matmul_waits_for_itself() {
    let src = kernel(64, "MatMul", "[64, 16]", "#wg", "");
    let text = lower("plain", &src, None).unwrap().to_ptx().unwrap();
    assert_eq!(lines_starting(&text, "wgmma.mma_async").len(), 4);
    assert_eq!(lines_starting(&text, "wgmma.fence").len(), 4, "{text}");
    assert_eq!(lines_starting(&text, "wgmma.commit_group").len(), 4);
    assert_eq!(lines_starting(&text, "wgmma.wait_group").len(), 4);
}

#[test]
fn the_warpgroup_multiply_needs_sm_90a() {
    let reason = refusal(&batched(64), Some(Arch::Sm90));
    assert!(reason.contains("sm_90a"), "{reason}");
}

#[test]
fn a_warp_cannot_run_it() {
    let src = batched(64).replace("<<<#one, #wg>>>", "<<<#one, #warp>>>");
    let reason = refusal(&src, None);
    assert!(reason.contains("warpgroup"), "{reason}");
}

#[test]
fn a_tile_that_does_not_begin_an_8_row_group_is_refused() {
    // The second of two 64-row tiles 65 rows apart: the swizzle's rows are
    // out of step with the hardware's.
    let src = batched(64)
        .replace("%sA.", "%sA[1].")
        .replace("%sA:[64, 64 : 64, 1]", "%sA:[2 : 4160].[64, 64 : 64, 1]");
    let reason = refusal(&src, None);
    assert!(reason.contains("8-row group"), "{reason}");
}

#[test]
fn an_unswizzled_tile_is_refused() {
    let src = batched(64).replace(
        "%sA:[64, 64 : 64, 1].fp16.SH.Swizzle<3, 3, 3>",
        "%sA:[64, 64 : 64, 1].fp16.SH",
    );
    let reason = refusal(&src, None);
    assert!(reason.contains("Swizzle<3,3,3>"), "{reason}");
}

/// The accumulators are used only once a wait has seen their group
/// complete: `mma_wait(1)` leaves the one group in flight, a missing
/// `mma_commit` leaves the multiplies in no group at all, and a loop that
/// only commits leaves its last group running after it.
#[test]
fn accumulators_in_flight_are_refused_by_the_checker() {
    let cases = [
        ("mma_commit\n        mma_wait(1)", true),
        ("mma_commit", true),
        ("mma_wait(0)", true),
        ("", true),
        ("mma_commit\n        mma_wait(0)", false),
    ];
    for (sync, refused) in cases {
        let errors = check_errors(&kernel(64, "MatMul<async>", "[64, 16]", "#wg", sync));
        let found = errors.iter().any(|d| d.code == "E0262");
        assert_eq!(found, refused, "{sync:?}: {errors:#?}");
    }
    // Committed inside the loop: never waited for, the epilogue still races
    // it; waited for in every iteration, it does not.
    let step = "(%sA.tile([64, 16])[0, kk], %sB.tile([16, N])[kk, 0])";
    for (inside, refused) in [
        ("mma_commit", true),
        ("mma_commit\n            mma_wait(0)", false),
    ] {
        let src = batched(64)
            .replace(step, &format!("{step}\n            {inside}"))
            .replace("        mma_commit\n        mma_wait(0)\n", "");
        let errors = check_errors(&src);
        let found = errors.iter().any(|d| d.code == "E0262");
        assert_eq!(found, refused, "{inside:?}: {errors:#?}");
    }
}

/// Loops are followed twice only where they leave multiplies in flight, and
/// the walk has a budget: forty nested loops around a multiply check at once.
#[test]
fn deep_loop_nests_around_a_multiply_check_quickly() {
    let step =
        "%acc <- MatMul<async><<<#one, #wg>>>(%sA.tile([64, 16])[0, kk], %sB.tile([16, N])[kk, 0])";
    let depth = 40;
    let open: String = (0..depth)
        .map(|d| format!("for (n{d} = 0; n{d} < M; n{d} += 1) {{\n"))
        .collect();
    let close = "}\n".repeat(depth);
    let src = batched(64)
        .replace("const N = 64", "const N = 64\nconst M = 2")
        .replace(step, &format!("{open}{step}\nmma_commit\n{close}"));
    let started = std::time::Instant::now();
    let errors = check_errors(&src);
    assert!(errors.iter().all(|d| d.code == "E0262"), "{errors:#?}");
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
}

/// One warpgroup computes C (64×64) = A · B with A stored M-major and B
/// N-major, in global and shared memory alike: 64×8 atoms of 8 k-rows of 64
/// elements, `a_k` and `b_k` the atoms' distance along K in elements.
fn mn_major(a_k: i64, b_k: i64) -> String {
    format!(
        "
kernel wgmma_mn_major {{
    %A:[64, 64 : 1, 64].fp16.GL
    %B:[64, 64 : 64, 1].fp16.GL
    %C:[64, 64 : 64, 1].fp32.GL
    #b:[1].block
    #t:[128].thread
    %C <- MatMul<overwrite><<<#b, #t>>>(%A, %B) {{
        #one:[].block = #b.scalar()
        #me:[].thread = #t.scalar()
        #wg = #t.tile(128)
        #warp = #t.tile(32)
        @w, @l = #warp.indices()
        #lanes = #warp.reshape(1, [4, 8])
        @w2, (@ct, @cg) = #lanes.indices()
        %sA:[64, (8, 8) : 1, (64, {a_k})].fp16.SH.Swizzle<3, 3, 3>
        %sB:[(8, 8), 64 : (64, {b_k}), 1].fp16.SH.Swizzle<3, 3, 3>
        #cp = #t.reshape(0, [8, 16])
        @c, @r = #cp.indices()
        for (i = 0; i < 4; i += 1) {{
            %sA.tile([8], [16])[@c, i][_, @r] <- Move<<<#one, #me>>>(%A.tile([8], [16])[@c, i][_, @r])
            %sB.tile([16], [8])[i, @c][@r, _] <- Move<<<#one, #me>>>(%B.tile([16], [8])[i, @c][@r, _])
        }}
        sync
        %acc:[1, 8].[2, 1].[1, 2].fp32.RF
        %acc <- Init<0.0><<<#one, #me>>>()
        for (kk = 0; kk < 4; kk += 1) {{
            %acc <- MatMul<<<#one, #wg>>>(%sA.tile([64, 16])[0, kk], %sB.tile([16, 64])[kk, 0])
        }}
        %wC = %C.tile([16, 8])
        for (j = 0; j < 8; j += 1) {{
            %cl = %wC[@w, j].tile([8, 8]).tile([1, 2])[_, _, @cg, @ct]
            for (h = 0; h < 2; h += 1) {{
                %cl[h, 0] <- Move<<<#one, #me>>>(%acc[0, j][h, 0])
            }}
        }}
    }}
}}
"
    )
}

#[test]
fn mn_major_operands_are_read_transposed_with_their_atom_distances() {
    let src = mn_major(512, 1024);
    let module = lower("mn_major", &src, None).unwrap_or_else(|e| panic!("{e:#?}"));
    let text = module.to_ptx().unwrap();
    let mmas = lines_starting(&text, "wgmma.mma_async");
    assert_eq!(mmas.len(), 4, "{text}");
    for line in &mmas {
        // A and B both transposed.
        assert!(line.ends_with(", 1, 1, 1, 1, 1;"), "{line}");
    }
    // A: atoms 1024 bytes apart along K (SBO 64 units), LBO the default
    // 1024 bytes; B: 2048 bytes along K (SBO 128 units).
    let a_fields = (1_i64 << 62) | (64 << 32) | (64 << 16);
    let b_fields = (1_i64 << 62) | (128 << 32) | (64 << 16);
    assert!(text.contains(&a_fields.to_string()), "{text}");
    assert!(text.contains(&b_fields.to_string()), "{text}");
    if ptx_support::tools_available() {
        let expected = [(
            "wgmma_mn_major",
            ptx_support::mnemonics(&["HGMMA", "WARPGROUP"]),
        )];
        ptx_support::check_module(&module, Arch::Sm90a, &expected);
    }
}

#[test]
fn mn_major_atoms_off_the_swizzle_period_are_refused() {
    // Atoms 768 elements apart along K: not a multiple of 1024 bytes.
    let reason = refusal(&mn_major(768, 1024), None);
    assert!(reason.contains("MN-major"), "{reason}");
    assert!(reason.contains("768"), "{reason}");
}
