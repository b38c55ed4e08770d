//! Property tests of index-expression simplification: random expressions
//! over a thread id, a loop variable and a symbolic dimension, under random
//! facts, evaluated on the assignments the facts allow. `simplify` and
//! `strength_reduce` must give the value of the original wherever it
//! evaluates (in machine arithmetic, where `+ - *` wrap modulo 2^64),
//! `simplify` must never add nodes nor divide a value that may be negative,
//! and every analysis must hold for every value of every subexpression.

mod simplify_support;

use graphene::expr::{Expr, Var};
use graphene::index::analysis::{analyze, bits_disjoint};
use graphene::index::facts::Facts;
use graphene::index::simplify::simplify;
use graphene::index::strength::strength_reduce;
use proptest::prelude::*;
use simplify_support::{Division, eval_machine};

const VARS: [Var; 3] = [Var::ThreadId, Var::Loop(0), Var::Dim(0)];

/// Facts with small finite ranges, so that evaluation can cover them.
#[derive(Clone, Debug)]
struct FactsSpec {
    threads: i64,
    /// Where the thread id starts: 0 in a kernel; above 0 here to reach
    /// rules whose precondition holds for a sum but not for its parts.
    thread_lo: i64,
    loop_lo: i64,
    loop_trips: i64,
    loop_step: i64,
    dim_multiple: i64,
    dim_count: i64,
}

impl FactsSpec {
    fn build(&self) -> Facts {
        let loop_hi = self.loop_lo + self.loop_trips * self.loop_step;
        Facts::builder()
            .threads(self.threads)
            .range(Var::ThreadId, self.thread_lo.min(self.threads - 1), None)
            .counted_loop(0, self.loop_lo, Some(loop_hi), self.loop_step)
            .range(
                Var::Dim(0),
                self.dim_multiple,
                Some(self.dim_multiple * self.dim_count),
            )
            .multiple_of(Var::Dim(0), self.dim_multiple)
            .build()
            .expect("generated facts are consistent")
    }
}

fn facts_spec() -> impl Strategy<Value = FactsSpec> {
    (
        prop_oneof![Just(1_i64), Just(8), Just(32), 1..300_i64],
        prop_oneof![3 => Just(0_i64), 1 => 1..40_i64],
        0..9_i64,
        1..12_i64,
        prop_oneof![Just(1_i64), Just(2), Just(3), Just(4), Just(8)],
        prop_oneof![Just(1_i64), Just(2), Just(4), Just(8), Just(16)],
        1..6_i64,
    )
        .prop_map(
            |(threads, thread_lo, loop_lo, loop_trips, loop_step, dim_multiple, dim_count)| {
                FactsSpec {
                    threads,
                    thread_lo,
                    loop_lo,
                    loop_trips,
                    loop_step,
                    dim_multiple,
                    dim_count,
                }
            },
        )
}

fn constant() -> impl Strategy<Value = Expr> {
    prop_oneof![
        4 => prop::sample::select(vec![0_i64, 1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 31, 32, 48, 56, 63, 64, 128, 0x38, 0x1c0]),
        1 => prop::sample::select(vec![-1_i64, -3, -8]),
        1 => 0..200_i64,
        // Anything: overflow must be reported or avoided, never panic.
        1 => any::<i64>(),
    ]
    .prop_map(Expr::Const)
}

/// Divisors: mostly positive literals, sometimes a variable or any operand.
fn divisor(operand: BoxedStrategy<Expr>) -> impl Strategy<Value = Expr> {
    prop_oneof![
        6 => prop::sample::select(vec![1_i64, 2, 3, 4, 6, 8, 12, 16, 32, 64]).prop_map(Expr::Const),
        2 => prop::sample::select(VARS.to_vec()).prop_map(Expr::Var),
        1 => operand,
    ]
}

fn expression() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        3 => prop::sample::select(VARS.to_vec()).prop_map(Expr::Var),
        2 => constant(),
    ];
    leaf.prop_recursive(5, 40, 2, |inner| {
        let boxed = |a: Expr| Box::new(a);
        let shift = (0..8_i64).prop_map(Expr::Const);
        prop_oneof![
            3 => (inner.clone(), inner.clone()).prop_map(move |(a, b)| Expr::Add(boxed(a), boxed(b))),
            1 => (inner.clone(), inner.clone()).prop_map(move |(a, b)| Expr::Sub(boxed(a), boxed(b))),
            3 => (inner.clone(), prop_oneof![2 => constant(), 1 => inner.clone()])
                .prop_map(move |(a, b)| Expr::Mul(boxed(a), boxed(b))),
            3 => (inner.clone(), divisor(inner.clone().boxed())).prop_map(move |(a, b)| Expr::Div(boxed(a), boxed(b))),
            3 => (inner.clone(), divisor(inner.clone().boxed())).prop_map(move |(a, b)| Expr::Rem(boxed(a), boxed(b))),
            1 => (inner.clone(), prop_oneof![constant(), inner.clone()]).prop_map(move |(a, b)| Expr::And(boxed(a), boxed(b))),
            1 => (inner.clone(), inner.clone()).prop_map(move |(a, b)| Expr::Xor(boxed(a), boxed(b))),
            1 => (inner.clone(), shift.clone()).prop_map(move |(a, b)| Expr::Shr(boxed(a), boxed(b))),
            1 => (inner.clone(), shift).prop_map(move |(a, b)| Expr::Shl(boxed(a), boxed(b))),
        ]
    })
}

/// A coordinate of a layout: a variable, `(v / s) % n`, `v % n`, or a
/// product of two variables.
fn coordinate() -> impl Strategy<Value = Expr> {
    let var = || prop::sample::select(VARS.to_vec()).prop_map(Expr::Var);
    let small = || prop::sample::select(vec![1_i64, 2, 4, 8, 16, 3]).prop_map(Expr::Const);
    prop_oneof![
        var(),
        (var(), small(), small()).prop_map(|(v, s, n)| Expr::Rem(
            Box::new(Expr::Div(Box::new(v), Box::new(s))),
            Box::new(n)
        )),
        (var(), small()).prop_map(|(v, n)| Expr::Rem(Box::new(v), Box::new(n))),
        (var(), var()).prop_map(|(a, b)| Expr::Mul(Box::new(a), Box::new(b))),
    ]
}

/// Pairs that often have disjoint bits: a low part (a remainder by a power
/// of two, or any expression) and a high part (a multiple of a larger power
/// of two, or any expression).
fn disjoint_candidates() -> impl Strategy<Value = (Expr, Expr)> {
    let low = prop_oneof![
        3 => (expression(), 1..6_i64).prop_map(|(e, t)| Expr::Rem(Box::new(e), Box::new(Expr::Const(1 << t)))),
        1 => expression(),
    ];
    let high = prop_oneof![
        3 => (expression(), 5..10_i64).prop_map(|(e, s)| Expr::Mul(Box::new(e), Box::new(Expr::Const(1 << s)))),
        1 => expression(),
    ];
    (low, high)
}

/// Every subexpression, the whole one first.
fn subexpressions(expr: &Expr) -> Vec<&Expr> {
    let mut out = vec![expr];
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            Expr::Const(_) | Expr::Var(_) => {}
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Div(a, b)
            | Expr::Rem(a, b)
            | Expr::And(a, b)
            | Expr::Xor(a, b)
            | Expr::Shr(a, b)
            | Expr::Shl(a, b) => {
                out.push(a);
                out.push(b);
            }
        }
        i += 1;
    }
    out
}

fn samples(facts: &Facts) -> Vec<Vec<(Var, i64)>> {
    simplify_support::assignments(&VARS, facts, 800, 0x5eed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn simplify_and_strength_reduce_keep_every_value(expr in expression(), spec in facts_spec()) {
        let facts = spec.build();
        let simplified = simplify(&expr, &facts);
        prop_assert!(
            simplified.node_count() <= expr.node_count(),
            "{expr} ({}) grew into {simplified} ({})", expr.node_count(), simplified.node_count()
        );
        let emitted = strength_reduce(&simplified);
        prop_assert_eq!(emitted.node_count(), simplified.node_count());
        let direct = strength_reduce(&expr);
        for assignment in samples(&facts) {
            let env = simplify_support::env(&assignment);
            let Ok(value) = expr.eval(&env) else { continue };
            // With Expr's floor division: the same value.
            for (name, result) in [("simplify", &simplified), ("strength_reduce ∘ simplify", &emitted), ("strength_reduce", &direct)] {
                prop_assert_eq!(
                    eval_machine(result, &env, Division::Floor), Some(value),
                    "{}: {} -> {} at {:?} ({})", name, expr, result, assignment, facts
                );
            }
            // As emitted code divides: no rewrite divides a negative value
            // where the original did not.
            if eval_machine(&expr, &env, Division::NonNegativeOnly) == Some(value) {
                for (name, result) in [("simplify", &simplified), ("strength_reduce ∘ simplify", &emitted)] {
                    prop_assert_eq!(
                        eval_machine(result, &env, Division::NonNegativeOnly), Some(value),
                        "{}: {} -> {} divides a negative value at {:?} ({})", name, expr, result, assignment, facts
                    );
                }
            }
        }
    }

    #[test]
    fn analyses_hold_for_every_subexpression(expr in expression(), spec in facts_spec()) {
        let facts = spec.build();
        let simplified = simplify(&expr, &facts);
        let mut parts = subexpressions(&expr);
        parts.push(&simplified);
        let analyses: Vec<_> = parts.iter().map(|part| analyze(part, &facts)).collect();
        for assignment in samples(&facts) {
            let env = simplify_support::env(&assignment);
            for (part, analysis) in parts.iter().zip(&analyses) {
                let Ok(value) = part.eval(&env) else { continue };
                prop_assert!(analysis.range.contains(value), "range {} of {} misses {} at {:?} ({})", analysis.range, part, value, assignment, facts);
                prop_assert!(value % analysis.divisor() == 0, "divisor {} of {} does not divide {} at {:?} ({})", analysis.divisor(), part, value, assignment, facts);
                prop_assert!(analysis.congruence.contains(value), "congruence {} of {} misses {} at {:?}", analysis.congruence, part, value, assignment);
                prop_assert!(analysis.bits.contains(value), "bits {} of {} miss {} at {:?} ({})", analysis.bits, part, value, assignment, facts);
            }
        }
    }

    #[test]
    fn simplify_is_idempotent(expr in expression(), spec in facts_spec()) {
        let facts = spec.build();
        let once = simplify(&expr, &facts);
        prop_assert_eq!(simplify(&once, &facts), once.clone(), "from {}", expr);
    }
}

proptest! {
    // About a third of the candidate pairs share a bit, and a quarter of the
    // generated layouts name a coordinate twice: both are skipped.
    #![proptest_config(ProptestConfig { cases: 400, max_global_rejects: 20_000, ..ProptestConfig::default() })]

    #[test]
    fn disjoint_bits_make_sum_or_and_xor_equal((a, c) in disjoint_candidates(), spec in facts_spec()) {
        let facts = spec.build();
        prop_assume!(bits_disjoint(&a, &c, &facts));
        for assignment in samples(&facts) {
            let env = simplify_support::env(&assignment);
            let (Ok(x), Ok(y)) = (a.eval(&env), c.eval(&env)) else { continue };
            prop_assert_eq!(x & y, 0, "{} and {} share bits at {:?}", a, c, assignment);
            prop_assert_eq!(x.wrapping_add(y), x ^ y);
            prop_assert_eq!(x | y, x ^ y);
        }
    }

    #[test]
    fn sums_written_in_any_order_compare_equal(
        terms in prop::collection::vec((prop::sample::select(vec![1_i64, 2, 3, 8, 16, 64, 128, 1024]), coordinate()), 1..6),
        rotation in 0..5_usize,
        spec in facts_spec(),
    ) {
        let facts = spec.build();
        // A layout's offset names each coordinate once.
        let mut coordinates: Vec<Expr> = terms.iter().map(|(_, t)| simplify(t, &facts)).collect();
        coordinates.sort();
        coordinates.dedup();
        prop_assume!(coordinates.len() == terms.len());
        // Σ stride_i · c_i, left to right, against the rotated order, right
        // to left, with each product written stride first.
        let forward = terms.iter().map(|(s, c)| Expr::Mul(Box::new(c.clone()), Box::new(Expr::Const(*s))))
            .reduce(|a, b| Expr::Add(Box::new(a), Box::new(b))).expect("non-empty");
        let mut rotated = terms.clone();
        rotated.rotate_left(rotation % terms.len());
        let backward = rotated.iter().map(|(s, c)| Expr::Mul(Box::new(Expr::Const(*s)), Box::new(c.clone())))
            .reduce(|a, b| Expr::Add(Box::new(b), Box::new(a))).expect("non-empty");
        prop_assert_eq!(simplify(&forward, &facts), simplify(&backward, &facts));
    }
}
