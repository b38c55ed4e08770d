//! Every pointwise operator lowered from source, one small kernel each:
//! the PTX holds the instructions docs/pointwise.md names for it, and it
//! assembles with ptxas on every target from the one it needs up (skipped
//! without the tools, unless GRAPHENE_REQUIRE_PTXAS=1).

mod ptx_support;
mod support;

use graphene::compile::{Options, compile};
use graphene::ptx::{Arch, Module};

/// A kernel in which each of 64 threads applies `kind` to its two
/// consecutive elements of `inputs` global tensors of `scalar`.
fn kernel(kind: &str, inputs: usize, scalar: &str) -> String {
    let names = ["a", "b", "c", "d"];
    let mut text = String::from("kernel pointwise {\n");
    for name in &names[..inputs] {
        text += &format!("    %{name}:[128].{scalar}.GL\n");
    }
    text += &format!("    %out:[128].{scalar}.GL\n    #g:[1].block\n    #t:[64].thread\n");
    let all: Vec<String> = names[..inputs].iter().map(|n| format!("%{n}")).collect();
    text += &format!("    %out <- {kind}<<<#g, #t>>>({}) {{\n", all.join(", "));
    text += "        #one:[].block = #g.scalar()\n        #me:[].thread = #t.scalar()\n";
    text += "        @i = #t.indices()\n";
    for name in names[..inputs].iter().chain(&["out"]) {
        text += &format!("        %{name}2:[64].[2].{scalar}.GL = %{name}.tile([2])\n");
    }
    let mine: Vec<String> = names[..inputs]
        .iter()
        .map(|n| format!("%{n}2[@i]"))
        .collect();
    text += &format!(
        "        %out2[@i] <- {kind}<<<#one, #me>>>({})\n    }}\n}}\n",
        mine.join(", ")
    );
    text
}

fn lower(kind: &str, inputs: usize, scalar: &str, arch: Option<Arch>) -> Module {
    let options = Options {
        arch,
        ..Options::default()
    };
    let text = kernel(kind, inputs, scalar);
    compile("pointwise.gph", &text, &options)
        .unwrap_or_else(|d| panic!("{kind} on {scalar}: {d:#?}\n{text}"))
        .module
        .expect("PTX was asked for")
}

/// (spec kind, inputs, the PTX instructions it must contain on fp32).
const FP32_FORMS: [(&str, usize, &[&str]); 25] = [
    ("UnaryPointwise<relu>", 1, &["max.f32"]),
    ("UnaryPointwise<exp>", 1, &["mul.f32", "ex2.approx.f32"]),
    ("UnaryPointwise<exp2>", 1, &["ex2.approx.f32"]),
    ("UnaryPointwise<rsqrt>", 1, &["rsqrt.approx.f32"]),
    ("UnaryPointwise<neg>", 1, &["neg.f32"]),
    ("UnaryPointwise<abs>", 1, &["abs.f32"]),
    ("UnaryPointwise<log>", 1, &["lg2.approx.f32", "0f3F317218"]),
    ("UnaryPointwise<sqrt>", 1, &["sqrt.rn.f32"]),
    ("UnaryPointwise<rcp>", 1, &["rcp.rn.f32"]),
    ("UnaryPointwise<tanh>", 1, &["tanh.approx.f32"]),
    (
        "UnaryPointwise<sigmoid>",
        1,
        &["0fBFB8AA3B", "ex2.approx.f32", "rcp.approx.f32"],
    ),
    (
        "UnaryPointwise<gelu>",
        1,
        &[
            "0f3D372713",
            "0fC0135761",
            "ex2.approx.f32",
            "rcp.approx.f32",
        ],
    ),
    ("BinaryPointwise<add>", 2, &["add.f32"]),
    ("BinaryPointwise<sub>", 2, &["sub.f32"]),
    ("BinaryPointwise<mul>", 2, &["mul.f32"]),
    ("BinaryPointwise<max>", 2, &["max.f32"]),
    ("BinaryPointwise<min>", 2, &["min.f32"]),
    ("BinaryPointwise<div>", 2, &["div.rn.f32"]),
    ("TernaryPointwise<fma>", 3, &["fma.rn.f32"]),
    ("Select<eq>", 4, &["setp.eq.f32", "selp.f32"]),
    ("Select<ne>", 4, &["setp.ne.f32", "selp.f32"]),
    ("Select<lt>", 4, &["setp.lt.f32", "selp.f32"]),
    ("Select<le>", 4, &["setp.le.f32", "selp.f32"]),
    ("Select<gt>", 4, &["setp.gt.f32", "selp.f32"]),
    ("Select<ge>", 4, &["setp.ge.f32", "selp.f32"]),
];

fn assert_contains(text: &str, wanted: &[&str], what: &str) {
    for needle in wanted {
        assert!(text.contains(needle), "{what}: no `{needle}` in\n{text}");
    }
}

#[test]
fn every_fp32_operator_lowers_to_its_documented_form() {
    for (kind, inputs, wanted) in FP32_FORMS {
        let text = lower(kind, inputs, "fp32", None).to_ptx().unwrap();
        assert_contains(&text, wanted, kind);
        // Two elements a thread: the form appears once per element.
        let first = wanted[wanted.len() - 1];
        assert_eq!(text.matches(first).count(), 2, "{kind}:\n{text}");
    }
}

#[test]
fn tanh_raises_the_target_and_is_refused_below_sm_75() {
    // tanh.approx needs sm_75, which no `--arch` names: the default is the
    // next requestable target, sm_80.
    let text = lower("UnaryPointwise<tanh>", 1, "fp32", None)
        .to_ptx()
        .unwrap();
    assert!(text.contains(".target sm_80"), "{text}");
    assert!(text.contains(".version 7.0"), "{text}");
    let options = Options {
        arch: Some(Arch::Sm70),
        ..Options::default()
    };
    let text = kernel("UnaryPointwise<tanh>", 1, "fp32");
    let Err(refused) = compile("tanh.gph", &text, &options) else {
        panic!("sm_70 has no tanh.approx");
    };
    let message = format!("{refused:?}");
    assert!(message.contains("sm_75"), "{message}");
}

/// (kind, inputs, scalar, instructions that must appear, that must not).
type SixteenBitCase = (
    &'static str,
    usize,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn sixteen_bit_operators_use_pairs_where_the_isa_has_them_else_fp32() {
    let cases: [SixteenBitCase; 8] = [
        (
            "TernaryPointwise<fma>",
            3,
            "fp16",
            &["fma.rn.f16x2"],
            &["cvt.f32", "cvt.rn"],
        ),
        (
            "TernaryPointwise<fma>",
            3,
            "bf16",
            &["fma.rn.bf16x2"],
            &["cvt.f32", "cvt.rn"],
        ),
        (
            "UnaryPointwise<abs>",
            1,
            "bf16",
            &["and.b32"],
            &["cvt.f32", "cvt.rn"],
        ),
        (
            "BinaryPointwise<div>",
            2,
            "fp16",
            &["cvt.f32.f16", "div.rn.f32", "cvt.rn.f16.f32"],
            &["f16x2"],
        ),
        (
            "UnaryPointwise<tanh>",
            1,
            "fp16",
            &["tanh.approx.f32", "cvt.rn.f16.f32"],
            &["tanh.approx.f16"],
        ),
        (
            "UnaryPointwise<gelu>",
            1,
            "bf16",
            &["ex2.approx.f32", "cvt.rn.bf16.f32"],
            &[],
        ),
        (
            "Select<gt>",
            4,
            "fp16",
            &["setp.gt.f32", "selp.f32", "cvt.rn.f16.f32"],
            &[],
        ),
        (
            "UnaryPointwise<sqrt>",
            1,
            "bf16",
            &["sqrt.rn.f32", "cvt.rn.bf16.f32"],
            &[],
        ),
    ];
    for (kind, inputs, scalar, wanted, unwanted) in cases {
        let text = lower(kind, inputs, scalar, Some(Arch::Sm90))
            .to_ptx()
            .unwrap();
        assert_contains(&text, wanted, kind);
        for needle in unwanted {
            assert!(
                !text.contains(needle),
                "{kind} on {scalar}: `{needle}` in\n{text}"
            );
        }
    }
}

#[test]
fn every_operator_assembles_on_every_target_it_allows() {
    if !ptx_support::tools_available() {
        return;
    }
    // fp32 at the floor and at Hopper; the 16-bit types where their
    // packed forms and conversions exist (fp16 pairs at sm_80, bf16 at sm_90).
    let targets = [
        ("fp32", Arch::Sm70),
        ("fp32", Arch::Sm90),
        ("fp16", Arch::Sm80),
        ("bf16", Arch::Sm90),
    ];
    for (kind, inputs, _) in FP32_FORMS {
        for (scalar, arch) in targets {
            if kind.contains("tanh") && arch == Arch::Sm70 {
                continue;
            }
            let module = lower(kind, inputs, scalar, Some(arch));
            ptx_support::check_module(&module, arch, &[]);
        }
    }
}
