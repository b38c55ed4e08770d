//! Robustness of the front end: no input makes it panic or overflow the
//! stack, every rejected input gets at least one diagnostic whose spans lie
//! inside the input, and every accepted input prints to text that parses
//! back to the same tree.
//!
//! Inputs (seeded, deterministic; about 118,000 per run): 45,000 random
//! byte strings, 45,000 random token soups over the grammar's vocabulary,
//! every truncation of every corpus file (about 7,000), and single-token
//! mutations (delete, duplicate, swap with the next, replace with a
//! vocabulary token) of every corpus file (about 22,000).
//! The corpus is the examples, the golden diagnostic cases and the programs
//! below.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use graphene::diag::Diagnostic;
use graphene::syntax::{File, parse_file, print_file, strip_spans, tokenize};

/// The pipeline under test. The checker joins here: parse, then check.
fn front_end(src: &str) -> Result<File, Vec<Diagnostic>> {
    parse_file("fuzz.gph", src)
}

/// SplitMix64: a small, well-mixed, seeded generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const VOCABULARY: [&str; 75] = [
    "%1",
    "%acc",
    "#4",
    "#t",
    "@i",
    "@m",
    "k",
    "M",
    "BM",
    "0",
    "8",
    "128",
    "1.5",
    "-",
    "_",
    "fp16",
    "FP32",
    "SH",
    "GL",
    "RF",
    "sh",
    "thread",
    "block",
    "Move",
    "MatMul",
    "Spec",
    "Init",
    "Reduction",
    "Shfl",
    "BinaryPointwise",
    "UnaryPointwise",
    "add",
    "relu",
    "bfly",
    "async",
    "overwrite",
    "tile",
    "reshape",
    "indices",
    "scalar",
    "Allocate",
    "Swizzle",
    "for",
    "if",
    "else",
    "sync",
    "async_commit",
    "async_wait",
    "kernel",
    "const",
    "inf",
    "<<<",
    ">>>",
    "<-",
    "<=",
    "==",
    "&&",
    "||",
    "+=",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ",",
    ".",
    ":",
    ";",
    "=",
    "\n",
    "// c\n",
    "$",
];

const PROGRAMS: [&str; 4] = [
    "const BM = 128\nconst BK = BM/4\n\nkernel k {\n    %a:[M, K].fp16.GL\n    %s:[BM,BK : BK,1].fp16.SH.Swizzle<3,3,3> = Allocate()\n    #b:[M/BM].block\n    #t:[4,(2,4) : 8,(1,16)].thread\n    @w, (@x, _) = #t.indices()\n    for (k = 0; k < K/BK; k += 1) {\n        %s <- Move<async><<<#b, #t>>>(%a.tile([BM,BK])[@w, k])\n        async_commit\n        async_wait(0)\n        sync\n    }\n}\n",
    "%x:[8].fp32.RF\n#b:[1].block\n#t:[32].thread\n%x <- Init<-inf><<<#b, #t>>>()\n%y:[].fp32.RF\n%y <- Reduction<max, [0]><<<#b, #t.scalar()>>>(%x)\n%y <- Shfl<bfly, 16><<<#b, #t>>>(%y)\nif (@i < 4 && (k == 0 || M % 2 != 1)) {\n    %y <- UnaryPointwise<exp2><<<#b, #t>>>(%y)\n} else if (@i >= 8) {\n    sync\n} else {\n    %z = %x.reshape([2,4])[(0, _), -k+1]\n}\n",
    "%c, %d <- Spec<<<#g.tile(2), #t.reshape(0, [2,2 : 2,1])>>>(%a, %b) {\n    %c <- MatMul<overwrite><<<#g, #t>>>(%a, %b)\n    %d <- BinaryPointwise<min><<<#g, #t>>>(%c, %a)\n}\n",
    "#5:[4].[8].thread = #4.tile(8)\n#6:[2,2].[8].thread = #5.reshape(0, [2,2])\n%7:[2,2 : 1,8].[2,(2,2) : 2,(4,16)].fp32.GL = %1.tile([2:2], [2,2 : 1,4], _, 4)\n",
];

fn corpus() -> Vec<String> {
    let mut texts: Vec<String> = PROGRAMS.iter().map(|text| text.to_string()).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["examples", "tests/diagnostics/syntax"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("corpus folder")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "gph"))
            .collect();
        paths.sort();
        texts.extend(
            paths
                .iter()
                .map(|path| std::fs::read_to_string(path).expect("readable")),
        );
    }
    texts
}

/// Runs the front end on `src` and checks the contract; returns a
/// description of the violation, if any.
fn violation(src: &str) -> Option<String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| front_end(src)));
    let result = match outcome {
        Ok(result) => result,
        Err(_) => return Some("panicked".to_string()),
    };
    match result {
        Ok(file) => {
            let text = print_file(&file);
            match parse_file("fuzz.gph", &text) {
                Ok(again) if strip_spans(again.clone()) == strip_spans(file) => None,
                Ok(_) => Some(format!(
                    "accepted, but its printed form parses differently:\n{text}"
                )),
                Err(_) => Some(format!(
                    "accepted, but its printed form is rejected:\n{text}"
                )),
            }
        }
        Err(diagnostics) if diagnostics.is_empty() => {
            Some("rejected without a diagnostic".to_string())
        }
        Err(diagnostics) => diagnostics
            .iter()
            .flat_map(Diagnostic::spans)
            .find_map(|span| {
                let inside = span.start <= span.end
                    && (span.end as usize) <= src.len()
                    && src.is_char_boundary(span.start as usize)
                    && src.is_char_boundary(span.end as usize);
                (!inside).then(|| format!("span {span} outside the input of {} bytes", src.len()))
            }),
    }
}

/// Checks every input, and fails with the first few violations.
fn check_all(inputs: impl IntoIterator<Item = String>, at_least: usize) {
    // Panics are caught and reported below; keep their messages out of the
    // way of the report.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut count = 0;
    let mut failures = Vec::new();
    for input in inputs {
        count += 1;
        if let Some(problem) = violation(&input) {
            failures.push(format!("{problem}\ninput: {input:?}"));
            if failures.len() >= 5 {
                break;
            }
        }
    }
    std::panic::set_hook(previous);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    println!("{count} inputs checked");
    assert!(count >= at_least, "only {count} inputs");
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x5EED_0001);
    let inputs = (0..45_000).map(move |_| {
        let len = rng.below(48);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                // Mostly printable ASCII, sometimes anything.
                if rng.below(8) == 0 {
                    rng.next() as u8
                } else {
                    b' ' + rng.below(95) as u8
                }
            })
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    });
    check_all(inputs, 45_000);
}

#[test]
fn token_soups() {
    let mut rng = Rng(0x5EED_0002);
    let inputs = (0..45_000).map(move |_| {
        let len = rng.below(24);
        (0..len)
            .map(|_| VOCABULARY[rng.below(VOCABULARY.len())])
            .collect::<Vec<_>>()
            .join(" ")
    });
    check_all(inputs, 45_000);
}

#[test]
fn every_truncation_of_the_corpus() {
    let inputs: Vec<String> = corpus()
        .iter()
        .flat_map(|text| {
            text.char_indices()
                .map(|(at, _)| text[..at].to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    check_all(inputs, 5_000);
}

#[test]
fn single_token_mutations_of_the_corpus() {
    let mut rng = Rng(0x5EED_0003);
    let mut inputs = Vec::new();
    for text in corpus() {
        let tokens = tokenize(&text);
        for (index, token) in tokens.iter().enumerate() {
            let range = token.span.range();
            let splice = |replacement: &str| {
                format!(
                    "{}{replacement}{}",
                    &text[..range.start],
                    &text[range.end..]
                )
            };
            inputs.push(splice(""));
            inputs.push(splice(&format!("{0} {0}", &text[range.clone()])));
            if let Some(next) = tokens.get(index + 1) {
                let next_range = next.span.range();
                inputs.push(format!(
                    "{}{}{}{}{}",
                    &text[..range.start],
                    &text[next_range.clone()],
                    &text[range.end..next_range.start],
                    &text[range.clone()],
                    &text[next_range.end..]
                ));
            }
            for _ in 0..8 {
                inputs.push(splice(VOCABULARY[rng.below(VOCABULARY.len())]));
            }
        }
    }
    check_all(inputs, 20_000);
}

/// Inputs far deeper than any program: refused with a diagnostic, not a
/// crash, on a test thread's ordinary stack.
#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    let deep = [
        "(".repeat(10_000),
        format!("%1:[{}1{}].fp32.GL", "(".repeat(10_000), ")".repeat(10_000)),
        format!("%1 = %2[{}]", "[".repeat(10_000)),
        "kernel k { ".to_string() + &"if (k < 1) { ".repeat(10_000),
        format!("const X = {}1", "-".repeat(10_000)),
        format!("const X = 1{}", "+1".repeat(10_000)),
        format!("%1 = %2{}", ".scalar()".repeat(10_000)),
        format!("if (k < 1) {{}}{}", " else if (k < 1) {}".repeat(10_000)),
        format!("if ({}k < 1) {{}}", "k < 1 && ".repeat(10_000)),
    ];
    for src in &deep {
        assert!(
            violation(src).is_none(),
            "{}",
            violation(src).unwrap_or_default()
        );
    }
    // A long `else if` chain is flat, so it is accepted.
    assert!(front_end(&deep[7]).is_ok());
    // The limits themselves are reachable on an ordinary stack.
    let at_limit = format!(
        "{}%1:[{}1{}].fp32.GL{}",
        "if (k < 1) {".repeat(8),
        "(".repeat(graphene::syntax::MAX_NESTING - 10),
        ")".repeat(graphene::syntax::MAX_NESTING - 10),
        "}".repeat(8)
    );
    assert!(
        front_end(&at_limit).is_ok(),
        "{:?}",
        front_end(&at_limit).err()
    );
    let long_sum = format!(
        "const X = 1{}",
        "+1".repeat(graphene::syntax::MAX_EXPR_DEPTH as usize - 1)
    );
    assert!(front_end(&long_sum).is_ok());
}
