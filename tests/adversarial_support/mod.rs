//! Generated adversarial inputs: one family per way an input can grow, each
//! sized by a count, shared by `benches/adversarial.rs` (time and memory at
//! up to ~10 MB) and `tests/adversarial.rs` (the diagnostics at a moderate
//! size).
#![allow(dead_code)]

/// One family of generated inputs.
pub struct Family {
    /// Short name, as in the table of `docs/limits.md`.
    pub name: &'static str,
    /// The input for a count (the count the bench uses is `bench_count`).
    pub generate: fn(usize) -> String,
    /// The count that makes the input about 10 MB (or the size the issue names).
    pub bench_count: usize,
    /// Whether the input is a REPL line rather than a file.
    pub repl_line: bool,
}

/// A kernel that initialises one global tensor, with `body` inside its spec.
fn kernel_with(body: &str) -> String {
    format!(
        "%a:[64].fp32.GL\n#b:[1].block\n#t:[64].thread\n%a <- Spec<<<#b, #t>>>() {{\n{body}}}\n"
    )
}

/// An unknown identifier of `len` characters used as a tile size.
pub fn unknown_identifier(len: usize) -> String {
    kernel_with(&format!("    %h = %a.tile({})\n", "x".repeat(len)))
}

/// `count` constants with similar names, then a use of one more that does
/// not exist: the "did you mean" search sees every one.
pub fn similar_names(count: usize) -> String {
    let mut text = String::new();
    for i in 0..count {
        text.push_str(&format!("const NAME_{i:07} = {i}\n"));
    }
    text + &kernel_with("    %h = %a.tile(NAME_x000000)\n")
}

/// `count` constants, each defined from the one before.
pub fn const_lines(count: usize) -> String {
    let mut text = String::from("const C0 = 1\n");
    for i in 1..count {
        text.push_str(&format!("const C{i} = C{} + 1\n", i - 1));
    }
    text + &kernel_with("")
}

/// One view made of `count` chained `.tile(2)` calls.
pub fn chained_calls(count: usize) -> String {
    kernel_with(&format!("    %h = %a{}\n", ".tile(2)".repeat(count)))
}

/// An `if` whose condition is `count` comparisons joined by `&&`.
pub fn conjunction(count: usize) -> String {
    let condition = vec!["k < 4"; count].join(" && ");
    kernel_with(&format!(
        "    for (k = 0; k < 4; k += 1) {{\n        if ({condition}) {{\n            sync\n        }}\n    }}\n"
    ))
}

/// A constant defined as a sum of `count` ones.
pub fn long_sum(count: usize) -> String {
    format!("const N = {}\n", vec!["1"; count].join(" + ")) + &kernel_with("")
}

/// A loop over a register tensor (so it is unrolled) of `count` iterations,
/// each a Move of one element.
pub fn unrolled(count: usize) -> String {
    format!(
        "%a:[{count}].fp32.GL\n#b:[1].block\n#t:[1].thread\n%a <- Init<0.0><<<#b, #t>>>() {{\n\
         \x20   %r:[{count}].fp32.RF\n\
         \x20   for (k = 0; k < {count}; k += 1) {{\n\
         \x20       %a[k] <- Init<0.0><<<#b, #t>>>()\n\
         \x20       %r[k] <- Init<1.0><<<#b, #t>>>()\n\
         \x20   }}\n}}\n"
    )
}

/// A REPL line: a constant whose name is `len` characters long.
pub fn repl_line(len: usize) -> String {
    format!("const {} = 1", "c".repeat(len))
}

/// Every family, at the count the bench runs.
pub fn families() -> Vec<Family> {
    const TEN_MB: usize = 10 << 20;
    vec![
        Family {
            name: "unknown identifier",
            generate: unknown_identifier,
            bench_count: TEN_MB,
            repl_line: false,
        },
        Family {
            name: "similar names",
            generate: similar_names,
            bench_count: 400_000,
            repl_line: false,
        },
        Family {
            name: "const lines",
            generate: const_lines,
            bench_count: 500_000,
            repl_line: false,
        },
        Family {
            name: "chained calls",
            generate: chained_calls,
            bench_count: 1_000_000,
            repl_line: false,
        },
        Family {
            name: "&& conjunction",
            generate: conjunction,
            bench_count: 1_000_000,
            repl_line: false,
        },
        Family {
            name: "long sum",
            generate: long_sum,
            bench_count: 2_500_000,
            repl_line: false,
        },
        Family {
            name: "unrolled loop",
            generate: unrolled,
            bench_count: 65_536,
            repl_line: false,
        },
        Family {
            name: "REPL line",
            generate: repl_line,
            bench_count: TEN_MB,
            repl_line: true,
        },
    ]
}
