//! The index patterns that matter to the lowering, asserted one by one:
//! the seed's thread groups and GEMM addresses, swizzled `ldmatrix`
//! addresses, alignment proofs for vector accesses, and the cases where a
//! rule must *not* fire. (The golden file `tests/golden/simplify` pins the
//! printed forms of many more.)

mod simplify_support;

use graphene::expr::{Expr, Var};
use graphene::index::analysis::{bits_disjoint, is_multiple_of, known_divisor, range};
use graphene::index::facts::Facts;
use graphene::index::simplify::simplify;
use graphene::index::strength::strength_reduce;
use graphene::ir::{Requirement, Span};
use pretty_assertions::assert_eq;
use simplify_support::{Division, eval_machine, expr, facts};

/// `simplify` under `facts`, printed (fully parenthesised).
fn simplified(text: &str, facts: &Facts) -> String {
    simplify(&expr(text), facts).to_string()
}

/// Whether two texts simplify to the same expression.
fn same(a: &str, b: &str, facts: &Facts) -> bool {
    simplify(&expr(a), facts) == simplify(&expr(b), facts)
}

/// Checks `simplify(text)` against `text` on every allowed assignment, also
/// as emitted code divides (no division of a negative value).
fn assert_equivalent(text: &str, facts: &Facts) {
    let original = expr(text);
    let result = simplify(&original, facts);
    for assignment in simplify_support::assignments(&original.vars(), facts, 5000, 1) {
        let env = simplify_support::env(&assignment);
        assert_eq!(
            result.eval(&env),
            original.eval(&env),
            "{text} vs {result} at {assignment:?}"
        );
        let non_negative = |e: &Expr| eval_machine(e, &env, Division::NonNegativeOnly);
        if let Some(value) = non_negative(&original) {
            let emitted = non_negative(&result);
            assert_eq!(
                emitted,
                Some(value),
                "{result} divides a negative value at {assignment:?}"
            );
        }
    }
}

#[test]
fn warp_group_coordinates_of_the_ldmatrix_move() {
    // Seed 000 §4: #groups2d = [2,2 : 16,8].[8 : 1] over a warp.
    let warp = facts("threads 32");
    assert_eq!(simplified("(tid / 8) % 4", &warp), "(tid / 8)");
    assert_eq!(simplified("(tid / 16) % 2", &warp), "(tid / 16)");
    assert_eq!(simplified("(tid / 8) % 2", &warp), "((tid / 8) % 2)");
    assert_eq!(simplified("tid % 8", &warp), "(tid % 8)");
    assert_eq!(simplified("tid % 32", &warp), "tid");
    // In a block of 128 threads the outer remainder is needed.
    let block = facts("threads 128");
    assert_eq!(simplified("(tid / 8) % 4", &block), "((tid / 8) % 4)");
    // Volta quad pairs (seed 000 §4): qp_hi_lo = (tid / 16) % 2 in a warp.
    assert_eq!(simplified("(tid / 16) % 2", &block), "((tid / 16) % 2)");
}

#[test]
fn coordinates_recombine_into_the_thread_id() {
    let block = facts("threads 128");
    let digits = "((tid / 8) % 4) * 8 + tid % 8 + (tid / 32) * 32";
    assert_eq!(simplified(digits, &block), "tid");
    assert_eq!(expr(digits).node_count(), 17);
    assert_eq!(
        simplified("((tid / 8) % 4) * 8 + tid % 8", &block),
        "(tid % 32)"
    );
    assert_eq!(simplified("tid - (tid / 8) * 8", &block), "(tid % 8)");
    // Only exact pairs merge: 17·(tid / 16) + tid % 16 keeps both terms.
    let partial = simplify(&expr("(tid / 16) * 17 + tid % 16"), &block);
    assert_eq!(partial.to_string(), "(((tid / 16) * 17) + (tid % 16))");
    assert_equivalent("(tid / 16) * 17 + tid % 16", &block);
}

#[test]
fn simple_gemm_addresses_of_the_seed() {
    // Seed 000 §5.4: blocks [8,8], threads [16,16], loops k < 1024, m, n < 8.
    let gemm = facts(
        "threads 256; blocks 64; loop 0 0..1024 step 1; loop 1 0..8 step 1; loop 2 0..8 step 1",
    );
    // A[bid_m*128 + tid_m*8 + m + k*1024], with the group coordinates inlined.
    let a = "(bid % 8) * 128 + ((tid % 16) * 8 + (k1 + k0 * 1024))";
    assert_equivalent(a, &gemm);
    // B's coordinates lose their outer remainders: bid / 8 < 8, tid / 16 < 16.
    let b = "((bid / 8) % 8) * 131072 + (((tid / 16) % 16) * 8192 + (k0 + k2 * 1024))";
    let b_simplified = simplify(&expr(b), &gemm);
    assert_eq!(expr(b).node_count(), 21);
    assert_eq!(b_simplified.node_count(), 17);
    assert_eq!(
        b_simplified.to_string(),
        "(((k0 + (k2 * 1024)) + ((tid / 16) * 8192)) + ((bid / 8) * 131072))"
    );
    assert_equivalent(b, &gemm);
    // The same address written in another order is the same expression.
    assert!(same(
        b,
        "k2 * 1024 + k0 + 8192 * ((tid / 16) % 16) + 131072 * ((bid / 8) % 8)",
        &gemm
    ));
    // C's address: 33 nodes become 29.
    let c = "((bid % 8) * 128 + ((bid / 8) % 8) * 131072) + (((tid % 16) * 8 + ((tid / 16) % 16) * 8192) + (k1 + k2 * 1024))";
    assert_eq!(
        (expr(c).node_count(), simplify(&expr(c), &gemm).node_count()),
        (33, 29)
    );
    // The per-thread tile origin is a multiple of 8 elements: a 16-byte
    // vector of fp16.
    let tile = expr("(bid % 8) * 128 + (tid % 16) * 8 + k0 * 1024");
    assert_eq!(known_divisor(&tile, &gemm), 8);
    assert!(is_multiple_of(&tile, 8, &gemm));
    assert_eq!(
        range(&tile, &gemm).hi(),
        Some(7 * 128 + 15 * 8 + 1023 * 1024)
    );
}

#[test]
fn symbolic_sizes_use_divisibility_requirements() {
    // M/128 in a shape makes M (d0) a multiple of 128.
    let requirement = Requirement::Divisible {
        value: Expr::var(Var::Dim(0)),
        divisor: Expr::constant(128),
        span: Span::default(),
    };
    let (builder, used) = Facts::builder()
        .threads(256)
        .counted_loop(0, 0, None, 32)
        .requirement(&requirement);
    assert!(used);
    let kernel = builder
        .multiple_of(Var::Dim(1), 32)
        .build()
        .expect("valid facts");
    assert_eq!(simplified("(d0 * 128) / 64", &kernel), "(d0 * 2)");
    assert_eq!(simplified("d0 % 128", &kernel), "0");
    assert_eq!(
        simplified("(d0 + k0 + tid * 4) % 32", &kernel),
        "((tid % 8) * 4)"
    );
    assert_eq!(
        simplified("(tid * d1 + k0) / d1", &kernel),
        "(tid + (k0 / d1))"
    );
    assert_eq!(simplified("(tid * d1 + k0) % d1", &kernel), "(k0 % d1)");
    // cp.async of 16 bytes: row (bid*128 + tid/4) of a K-wide matrix, column
    // k0 + (tid % 4)*8 — aligned because K and k0 are multiples of 32.
    let source = expr("(bid * 128 + tid / 4) * d1 + k0 + (tid % 4) * 8");
    assert!(is_multiple_of(&source, 8, &kernel));
    assert!(!is_multiple_of(&source, 16, &kernel));
    assert!(is_multiple_of(&simplify(&source, &kernel), 8, &kernel));
}

/// `Swizzle<3,3,3>` written as an expression: `x ^ ((x >> 3) & 0x38)`.
fn swizzle(x: &str) -> String {
    format!("({x}) ^ ((({x}) >> 3) & 0x38)")
}

#[test]
fn swizzled_ldmatrix_addresses() {
    let warp = facts("threads 32");
    // Row (lane % 8) of an (8, 64) fp16 tile, 16-byte chunk (lane / 8).
    let a = "(tid % 8) * 64 + ((tid / 8) % 4) * 8";
    let address = swizzle(a);
    let result = simplify(&expr(&address), &warp);
    assert_eq!(
        result.to_string(),
        "(((tid % 8) * 64) + (((tid / 8) * 8) ^ ((tid % 8) * 8)))"
    );
    assert_eq!((expr(&address).node_count(), result.node_count()), (31, 17));
    assert_equivalent(&address, &warp);
    assert!(
        is_multiple_of(&result, 8, &warp),
        "each row address is 16-byte aligned"
    );
    // The row term and the chunk term have disjoint bits, so the address is
    // also their exclusive or.
    assert!(bits_disjoint(
        &expr("(tid % 8) * 64"),
        &expr("((tid / 8) % 4) * 8"),
        &warp
    ));
    // sw(a + c) = sw(a) ^ sw(c) for a constant c with bits disjoint from a:
    // unrolled steps of 4 elements (bit 2) or 512 (bit 9) move out.
    for c in [4, 512] {
        let shifted = swizzle(&format!("{a} + {c}"));
        let split = format!("({}) ^ ({})", swizzle(a), swizzle(&c.to_string()));
        assert!(same(&shifted, &split, &warp), "c = {c}");
        assert_eq!(simplified(&shifted, &warp), format!("({result} + {c})"));
        assert_equivalent(&shifted, &warp);
    }
    // A step of 64 (a row) changes the swizzle's source bits: it stays inside.
    let row_step = swizzle(&format!("{a} + 64"));
    assert!(!simplified(&row_step, &warp).ends_with("+ 64)"));
    assert_equivalent(&row_step, &warp);
}

#[test]
fn rules_that_must_not_fire() {
    let block = facts("threads 256");
    // tid - 8 may be negative: floor and truncating division disagree there.
    assert_eq!(simplified("(tid - 8) / 8", &block), "((tid - 8) / 8)");
    assert_eq!(simplified("(tid - 8) % 8", &block), "((tid - 8) % 8)");
    // 8 does not divide 12.
    assert_eq!(simplified("(tid % 12) % 8", &block), "((tid % 12) % 8)");
    // tid / 8 reaches 31: the remainder by 4 is needed.
    assert_eq!(simplified("(tid / 8) % 4", &block), "((tid / 8) % 4)");
    // A divisor that may be 0.
    assert_eq!(simplified("(tid * k0) / k0", &block), "((tid * k0) / k0)");
    // Overlapping bits: no xor becomes a sum.
    assert_eq!(simplified("tid ^ 8", &block), "(tid ^ 8)");
    for text in [
        "(tid - 8) / 8",
        "(tid % 12) % 8",
        "tid ^ 8",
        "(tid * k0) / k0",
    ] {
        assert_equivalent(text, &block);
    }
    // The sum is non-negative but its part −k0 is not: splitting off tid·8
    // would divide a negative value.
    let offset = facts("range tid 1..10; loop 0 0..6 step 1");
    for text in ["(tid * 8 - k0) / 8", "(tid * 8 - k0) % 8"] {
        assert_eq!(simplified(text, &offset), expr(text).to_string());
        assert_equivalent(text, &offset);
    }
    // A small addend must stay below the alignment of the rest: k0 < 4
    // cannot carry out of tid·4, k0 ≤ 4 can.
    let below = facts("threads 64; loop 0 0..4 step 1");
    assert_eq!(simplified("(tid * 4 + k0) / 8", &below), "(tid / 2)");
    assert_eq!(
        simplified("(tid * 4 + k0) % 8", &below),
        "(k0 + ((tid % 2) * 4))"
    );
    let reaching = facts("threads 64; loop 0 0..5 step 1");
    assert_eq!(
        simplified("(tid * 4 + k0) / 8", &reaching),
        "(((tid * 4) + k0) / 8)"
    );
    for (text, facts) in [
        ("(tid * 4 + k0) / 8", &below),
        ("(tid * 4 + k0) % 8", &below),
        ("(tid * 4 + k0) / 8", &reaching),
    ] {
        assert_equivalent(text, facts);
    }
    // A shift or mask of a value that may be negative stays a bit operation.
    assert_eq!(simplified("(tid - 8) >> 1", &block), "((tid - 8) >> 1)");
    assert_eq!(simplified("(tid - 8) & 7", &block), "((tid - 8) & 7)");
}

#[test]
fn canonical_forms_of_equal_computations() {
    let block = facts("threads 256; loop 0 0..16 step 1");
    for (a, b) in [
        ("tid * 8 + k0 * 32", "32 * k0 + 8 * tid"),
        ("(tid + k0) * 4", "tid * 4 + k0 * 4"),
        ("tid << 3", "tid * 8"),
        ("tid >> 3", "tid / 8"),
        ("tid & 7", "tid % 8"),
        ("(tid * 8) & 0x38", "(tid % 8) * 8"),
        ("(tid / 4) / 8", "tid / 32"),
        ("(tid % 64) / 8", "(tid / 8) % 8"),
        ("(tid * 16) ^ 7", "tid * 16 + 7"),
        ("tid - tid + k0", "k0"),
    ] {
        assert!(same(a, b, &block), "{a} and {b}");
    }
}

#[test]
fn strength_reduction_for_emission() {
    let gemm = facts("threads 256; blocks 64; loop 0 0..1024 step 1");
    let tile = simplify(&expr("(bid % 8) * 128 + (tid % 16) * 8 + k0 * 1024"), &gemm);
    assert_eq!(
        strength_reduce(&tile).to_string(),
        "(((k0 << 10) + ((tid & 15) << 3)) + ((bid & 7) << 7))"
    );
    // Other divisors stay divisions.
    assert_eq!(
        strength_reduce(&expr("(tid / 3) % 6")),
        expr("(tid / 3) % 6")
    );
}
