//! The REPL survives any input: no line makes the evaluator panic, every
//! line gets an answer (every rejected one a diagnostic), a rejected line
//! leaves the session's names exactly as they were, and a name defined
//! before the inputs still shows the same after each of them.
//!
//! Inputs (seeded, deterministic): random byte strings, token soups over
//! the vocabulary of both languages and the commands, every line of the
//! examples, the golden scripts and the checker's diagnostic cases, and
//! single-token mutations of the golden scripts' lines.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use graphene::viz::Style;
use graphene_repl::Session;
use graphene_repl::command::COMMANDS;
use graphene_repl::help::EXAMPLES;
use graphene_repl::input::split;

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

const VOCABULARY: [&str; 64] = [
    ":show",
    ":map",
    ":banks",
    ":swizzle",
    ":atom",
    ":help",
    ":names",
    ":set",
    ":reset",
    "by",
    "width",
    "blocks",
    "let",
    "A",
    "=",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    ".",
    "_",
    "o",
    "Sw<3,3,3>",
    ".Swizzle<3,3,3>",
    "coalesce",
    "composition",
    "complement",
    "logical_divide",
    "zipped_divide",
    "blocked_product",
    "right_inverse",
    "size",
    "0",
    "1",
    "2",
    "3",
    "4",
    "8",
    "16",
    "-1",
    "64",
    "9999999999999999999",
    "%s",
    "%row",
    "#w",
    "@r",
    "@c",
    ".tile",
    ".reshape",
    ".indices()",
    "[8,64 : 64,1]",
    "(4,8):(1,4)",
    "fp16",
    "SH",
    "RF",
    "ldmatrix.x4",
    "mma.m16n8k16",
    "{",
    "}",
    "const",
];

/// A name no input defines (the vocabulary lacks it), and a line showing
/// it that no setting changes: what the session must still answer the same
/// way after every input.
const SENTINEL: &str = "let Sentinel = (2,3):(3,1)";
const PROBE: &str = "size(Sentinel)";

/// A session with a few names to hit, and the sentinel.
fn seeded_session() -> Session {
    let mut session = Session::new(Style::default());
    for line in [
        SENTINEL,
        "let A = (4,8):(1,4)",
        "%s:[8,64 : 64,1].fp16.SH",
        "#w:[32].thread",
        "@c, @r = #w.tile(8).indices()",
        "%row = %s.tile([1,8])[@r, @c]",
    ] {
        assert!(!session.eval_line(line).failed, "{line}");
    }
    session
}

/// How many inputs the session accepted and how many it refused.
#[derive(Debug, Default)]
struct Tally {
    accepted: usize,
    refused: usize,
}

/// Runs `inputs` through one session, checking that each is answered and
/// leaves the session intact; how many were accepted and refused, so that
/// each test can show its inputs reach the paths it is about.
fn survive(inputs: impl IntoIterator<Item = String>) -> Tally {
    let mut session = seeded_session();
    let probe = session.eval_line(PROBE).text;
    assert!(probe.starts_with("6\n"), "{PROBE} shows {probe:?}");
    let mut tally = Tally::default();
    for input in inputs {
        let before = session.names();
        let outcome = catch_unwind(AssertUnwindSafe(|| session.eval_line(&input)));
        let output = outcome.unwrap_or_else(|_| panic!("panicked on {input:?}"));
        if output.failed {
            tally.refused += 1;
            assert!(!output.errors.is_empty(), "no diagnostic for {input:?}");
            assert_eq!(session.names(), before, "state changed by {input:?}");
        } else {
            tally.accepted += 1;
            // Only a blank line or a `//` comment may go unanswered.
            let silent = input
                .split("//")
                .next()
                .unwrap_or_default()
                .trim()
                .is_empty();
            assert!(silent || !output.text.is_empty(), "no answer to {input:?}");
        }
        if output.quit || input.contains(":reset") {
            session = seeded_session();
            continue;
        }
        let after = session.eval_line(PROBE);
        assert!(
            !after.failed && after.text == probe,
            "after {input:?}, {PROBE} shows {:?}{:?}",
            after.text,
            after.errors
        );
    }
    println!("{tally:?}");
    tally
}

#[test]
fn random_bytes() {
    let mut rng = Rng(7);
    let inputs = (0..3_000).map(|_| {
        let len = rng.below(40);
        let bytes: Vec<u8> = (0..len).map(|_| (rng.below(95) + 32) as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let tally = survive(inputs);
    assert!(tally.refused > 0, "{tally:?}");
}

#[test]
fn token_soups() {
    let mut rng = Rng(11);
    let inputs: Vec<String> = (0..6_000)
        .map(|_| {
            let len = 1 + rng.below(10);
            (0..len)
                .map(|_| VOCABULARY[rng.below(VOCABULARY.len())])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let tally = survive(inputs);
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
}

fn lines_of(folder: &Path, extension: &str) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == extension))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            split(&text).into_iter().map(|input| input.text)
        })
        .collect()
}

#[test]
fn every_line_of_the_corpus_and_its_mutations() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let golden = lines_of(&root.join("../tests/golden/repl"), "repl");
    let mut corpus = golden.clone();
    corpus.extend(lines_of(&root.join("../examples"), "gph"));
    for stage in ["syntax", "check"] {
        corpus.extend(lines_of(
            &root.join("../tests/golden/diagnostics").join(stage),
            "gph",
        ));
    }
    assert!(corpus.len() > 100, "corpus of {} lines", corpus.len());
    let mut rng = Rng(13);
    let mut mutations = Vec::new();
    for line in &golden {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        for _ in 0..4 {
            let mut mutated = words.clone();
            let at = rng.below(mutated.len());
            match rng.below(3) {
                0 => {
                    mutated.remove(at);
                }
                1 => mutated.insert(at, VOCABULARY[rng.below(VOCABULARY.len())]),
                _ => mutated[at] = VOCABULARY[rng.below(VOCABULARY.len())],
            }
            mutations.push(mutated.join(" "));
        }
    }
    let tally = survive(corpus.into_iter().chain(mutations));
    assert!(tally.accepted > 0 && tally.refused > 0, "{tally:?}");
}

#[test]
fn deep_and_huge_inputs_are_refused_not_fatal() {
    let mut session = seeded_session();
    for input in [
        format!("{}A{}", "coalesce(".repeat(5_000), ")".repeat(5_000)),
        format!("{}4{}", "(".repeat(5_000), ")".repeat(5_000)),
        format!(
            "logical_divide(A, {}2:1{})",
            "<".repeat(5_000),
            ">".repeat(5_000)
        ),
        format!(":show {}", "(".repeat(100_000)),
        "(4096,4096,4096,4096):(1,1,1,1)".to_string(),
        "[1000000,1000000]".to_string(),
        "%big:[4096,4096].fp32.GL".to_string(),
        ":map %big by #w".to_string(),
        ":map %big[0,0] by #w".to_string(),
        ":show %big.tile([64,64])".to_string(),
    ] {
        let output = session.eval_line(&input);
        // Refused, or drawn as a summary: never millions of cells.
        assert!(output.failed || output.text.len() < 5_000, "{input:.60}");
    }
}

#[test]
fn every_help_example_runs() {
    for (name, _, _) in COMMANDS {
        assert!(
            EXAMPLES
                .iter()
                .any(|(command, lines)| *command == name && !lines.is_empty()),
            ":help {name} has no example"
        );
    }
    for (command, lines) in EXAMPLES {
        let mut session = Session::new(Style::default());
        for line in lines {
            // `:save` writes into the temporary folder, not the checkout.
            let folder = std::env::temp_dir();
            let line = match line.strip_prefix(":save ") {
                Some(file) => format!(":save {}", folder.join(file).display()),
                None => line.to_string(),
            };
            let output = session.eval_line(&line);
            assert!(
                !output.failed,
                ":help {command}: `{line}` fails:\n{}",
                output.errors
            );
            if let Some(file) = line.strip_prefix(":save ") {
                assert!(std::fs::remove_file(file).is_ok(), "{file} was written");
            }
        }
    }
}
