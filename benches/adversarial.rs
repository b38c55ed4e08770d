//! Time and peak memory of the compiler on generated adversarial inputs of
//! up to ~10 MB (`tests/adversarial_support`): each family must stay under
//! 1 s and 200 MB (`docs/limits.md` keeps the table). Run with `cargo bench
//! --bench adversarial`; under `cargo test` each family runs once at a small
//! size, so the bench keeps compiling and its inputs keep working.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use graphene::check::Session;
use graphene::compile::{Options, check_line, compile};
use graphene::diag::{ColorChoice, Diagnostic, SourceMap};

#[path = "../tests/adversarial_support/mod.rs"]
mod adversarial_support;

/// The system allocator, counting the bytes live now and their peak, so
/// that each family's peak is measured alone (VmHWM cannot be lowered).
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Compiles a file, or checks a REPL line, and renders its diagnostics as
/// the command line would: the outcome's first code, or `ok`.
fn run(text: &str, repl_line: bool) -> String {
    let diagnostics: Vec<Diagnostic> = if repl_line {
        let mut session = Session::new();
        match check_line(&mut session, text, |_| Ok::<(), Vec<Diagnostic>>(())) {
            Ok(_) => Vec::new(),
            Err(diagnostics) => diagnostics,
        }
    } else {
        match compile("adversarial.gph", text, &Options::default()) {
            Ok(compiled) => compiled.warnings,
            Err(diagnostics) => diagnostics,
        }
    };
    let mut map = SourceMap::new();
    let id = map.add("adversarial.gph", text);
    let rendered = map.render(id, &diagnostics, ColorChoice::Never);
    std::hint::black_box(rendered);
    diagnostics
        .first()
        .map_or_else(|| "ok".to_string(), |first| first.code.to_string())
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` does not.
    let benching = std::env::args().any(|arg| arg == "--bench");
    // `--scale F` runs every family at F times its size, to see the trend.
    let args: Vec<String> = std::env::args().collect();
    let scale: f64 = args
        .iter()
        .position(|arg| arg == "--scale")
        .and_then(|at| args.get(at + 1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(1.0);
    // `--only TEXT` runs the families whose name contains it.
    let only = args
        .iter()
        .position(|arg| arg == "--only")
        .and_then(|at| args.get(at + 1));
    println!("| family | input | time | peak memory | outcome |");
    println!("|---|---|---|---|---|");
    for family in adversarial_support::families() {
        if only.is_some_and(|only| !family.name.contains(only.as_str())) {
            continue;
        }
        let count = if benching {
            ((family.bench_count as f64 * scale) as usize).max(1)
        } else {
            64
        };
        let text = (family.generate)(count);
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let start = Instant::now();
        let outcome = run(&text, family.repl_line);
        let elapsed = start.elapsed();
        let peak = PEAK.load(Ordering::Relaxed) - before;
        println!(
            "| {} | {:.1} MB | {:.3} s | {:.1} MB | {} |",
            family.name,
            text.len() as f64 / 1e6,
            elapsed.as_secs_f64(),
            peak as f64 / 1e6,
            outcome
        );
    }
}
