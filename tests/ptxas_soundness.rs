//! What the compiler accepts, ptxas assembles: source text copied into
//! `--annotate` comments (non-ASCII, control characters) and tensor or dim
//! names PTX reserves (`WARP_SZ`) reach ptxas only in forms it accepts.

mod ptx_support;
mod support;

use graphene::compile::{self, Options};
use graphene::ptx::Arch;

/// A copy kernel whose tensors and dim are named `tensor` and `dim`, with
/// `comment` after its atomic moves.
fn copy_kernel(tensor: &str, dim: &str, comment: &str) -> String {
    format!(
        "kernel copy {{\n    %{tensor}:[8, 256, {dim}].fp16.GL\n    %dst:[8, 256, {dim}].fp16.GL\n    \
         #blocks:[{dim}].block\n    #threads:[256].thread\n    \
         %dst <- Move<<<#blocks, #threads>>>(%{tensor}) {{\n        @b = #blocks.indices()\n        \
         @t = #threads.indices()\n        #one:[].block = #blocks.scalar()\n        \
         #me:[].thread = #threads.scalar()\n        %v:[8].fp16.RF\n        \
         %v <- Move<<<#one, #me>>>(%{tensor}[_, @t, @b])   {comment}\n        \
         %dst[_, @t, @b] <- Move<<<#one, #me>>>(%v)\n    }}\n}}\n"
    )
}

fn assembles(source: &str) -> String {
    let options = Options {
        annotate: true,
        ..Options::default()
    };
    let module = compile::compile("copy.gph", source, &options)
        .unwrap_or_else(|d| panic!("does not compile: {d:#?}"))
        .module
        .expect("PTX was asked for");
    let text = module.to_ptx().unwrap();
    assert!(text.is_ascii(), "{text}");
    if ptx_support::tools_available() {
        ptx_support::check_module(&module, Arch::Sm70, &[]);
    }
    text
}

#[test]
fn annotated_source_text_reaches_ptxas_as_ascii() {
    let text = assembles(&copy_kernel("src", "B", "// 8×fp16 → 16 B\u{7}"));
    assert!(
        text.contains("// 8\\u{d7}fp16 \\u{2192} 16 B\\u{7}"),
        "{text}"
    );
}

#[test]
fn tensors_and_dims_named_warp_sz_are_renamed_in_the_ptx() {
    let text = assembles(&copy_kernel("WARP_SZ", "WARP_SZ", "// plain"));
    assert!(text.contains(".param .u64 WARP_SZ_2"), "{text}");
    assert!(text.contains(".param .u32 WARP_SZ_3"), "{text}");
}
