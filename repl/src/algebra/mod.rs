//! The REPL's layout language, parsed and evaluated in one pass: layout
//! literals in either notation (`(4,8):(1,4)`, `[4,8 : 1,4]`), integers,
//! names bound with `let`, swizzles (`Sw<3,3,3>`, `Sw<3,3,3> o L`,
//! `L.Swizzle<3,3,3>`), by-mode tilers (`<2:1, _>`) and the algebra of
//! `graphene::layout` as calls with nested arguments (`coalesce(L)`,
//! `logical_divide(A, <2,4>)`). Literals are handed whole to
//! `layout::parse_layout`, so both notations mean exactly what they mean
//! everywhere else.

mod calls;
mod parse;

use std::collections::BTreeMap;

use graphene::layout::{Layout, Swizzle, SwizzledLayout, Tiler};

use crate::failure::Failure;

/// The deepest nesting of calls, tilers and swizzle operands accepted, so
/// that no input exhausts the stack.
pub const MAX_DEPTH: usize = 48;

/// The algebra's functions: name, arguments, what it computes. `:help
/// algebra` prints this table and completion offers the names.
pub const FUNCTIONS: [(&str, &str, &str); 16] = [
    ("coalesce", "L", "the same function with the fewest modes"),
    (
        "composition",
        "A, B",
        "A ∘ B: (A∘B)(c) = A(B(c)); A may be swizzled",
    ),
    (
        "complement",
        "A, M",
        "the layout that fills [0, M) around A (M: integer or shape; default cosize)",
    ),
    ("right_inverse", "L", "R with L(R(i)) = i"),
    ("left_inverse", "L", "R with R(L(i)) = i"),
    (
        "filter",
        "L",
        "L without stride-0 and size-1 modes, coalesced",
    ),
    (
        "logical_divide",
        "A, T",
        "A ∘ (T, complement(T)): mode 0 the tile, mode 1 the tiles",
    ),
    (
        "zipped_divide",
        "A, T",
        "the by-mode divide regrouped ((tiles),(rests))",
    ),
    (
        "tiled_divide",
        "A, T",
        "the by-mode divide regrouped ((tiles),rest0,rest1,…)",
    ),
    (
        "logical_product",
        "A, T",
        "(A, complement(A) ∘ T): A repeated over T",
    ),
    (
        "blocked_product",
        "A, B",
        "A repeated over B, blocks contiguous per mode",
    ),
    (
        "raked_product",
        "A, B",
        "A repeated over B, interleaved per mode",
    ),
    ("size", "L", "the number of coordinates"),
    ("cosize", "L", "one past the largest offset"),
    ("rank", "L", "the number of top-level modes"),
    ("depth", "L", "the deepest nesting of its modes"),
];

/// Words a `let` may not bind: the language's own.
pub const RESERVED: [&str; 5] = ["let", "o", "Sw", "Swizzle", "_"];

/// A value of the layout language.
///
/// Rule: an integer stands for the layout `n:1` wherever a layout is
/// expected; a `Tiler` only comes from `<…>` and only feeds divides and
/// products.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer (a size, a cotarget, a tile length `n` meaning `n:1`).
    Int(i64),
    /// A layout.
    Layout(Layout),
    /// A swizzle composed with an offset and a layout.
    Swizzled(SwizzledLayout),
    /// A swizzle functor alone.
    Swizzle(Swizzle),
    /// A by-mode tiler `<T0, T1, …>`.
    Tiler(Tiler),
}

/// What names mean in a layout expression.
///
/// Rule: a name is looked up in `bound` first, then in `constants`; `let`
/// keeps the two disjoint.
pub struct Scope<'a> {
    /// Layouts (and other values) bound with `let`.
    pub bound: &'a BTreeMap<String, Value>,
    /// The constants (`const BM = 16`) and their values.
    pub constants: &'a BTreeMap<String, i64>,
}

/// Evaluates the layout expression `src`, which sits at byte `base` of the
/// line (diagnostics point into the line).
pub fn evaluate(src: &str, base: usize, scope: &Scope) -> Result<Value, Failure> {
    parse::run(src, base, scope)
}

/// Whether `word` names something of the layout language (a function or a
/// reserved word), so that `let` cannot rebind it.
pub fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word) || FUNCTIONS.iter().any(|(name, _, _)| *name == word)
}

impl Value {
    /// The value in CuTe notation: the first line of its output.
    pub fn cute(&self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Layout(layout) => layout.to_string(),
            Value::Swizzled(swizzled) => swizzled.to_string(),
            Value::Swizzle(swizzle) => swizzle.to_string(),
            Value::Tiler(tiler) => tiler.to_string(),
        }
    }

    /// What the value is, with its measures: the second line of its output.
    pub fn kind_line(&self) -> String {
        match self {
            Value::Int(_) => "integer".to_string(),
            Value::Layout(layout) => format!(
                "layout {}: rank {}, depth {}, size {}, cosize {}",
                layout.ir(),
                layout.rank(),
                layout.depth(),
                layout.size(),
                layout.cosize()
            ),
            Value::Swizzled(swizzled) => format!(
                "swizzled layout {}: size {}, swizzle period {}",
                swizzled.ir(),
                swizzled.size(),
                swizzled.swizzle().period()
            ),
            Value::Swizzle(swizzle) => swizzle_text(swizzle),
            Value::Tiler(tiler) => {
                let modes = match tiler {
                    Tiler::ByMode(entries) => entries.len(),
                    Tiler::Layout(_) | Tiler::Keep => 1,
                };
                format!("by-mode tiler of {modes} modes (`_` keeps a mode whole)")
            }
        }
    }
}

/// What a swizzle does to an offset's bits, in words.
fn swizzle_text(swizzle: &Swizzle) -> String {
    if swizzle.is_identity() {
        return "swizzle: the identity (no bits move)".to_string();
    }
    let bits = |mask: i64| {
        let low = mask.trailing_zeros();
        let high = low + mask.count_ones() - 1;
        format!("bits {low}..{high}")
    };
    format!(
        "swizzle: offset ^= ({} of the offset moved onto {}); a permutation of every block of {} offsets",
        bits(swizzle.source_mask()),
        bits(swizzle.target_mask()),
        swizzle.period()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::{codes, span};

    fn eval(src: &str) -> Result<Value, Failure> {
        let bound = BTreeMap::from([(
            "A".to_string(),
            Value::Layout("(4,8):(1,4)".parse().unwrap()),
        )]);
        let constants = BTreeMap::from([("BM".to_string(), 16)]);
        let scope = Scope {
            bound: &bound,
            constants: &constants,
        };
        evaluate(src, 0, &scope)
    }

    fn cute(src: &str) -> String {
        match eval(src) {
            Ok(value) => value.cute(),
            Err(Failure(diags)) => panic!("{src}: {diags:#?}"),
        }
    }

    fn code(src: &str) -> &'static str {
        match eval(src) {
            Ok(value) => panic!("{src} gave {value:?}"),
            Err(Failure(diags)) => diags[0].code,
        }
    }

    #[test]
    fn literals_in_both_notations() {
        assert_eq!(cute("(4,8):(1,4)"), "(4,8):(1,4)");
        assert_eq!(cute(" [4,(2,4) : 2,(1,8)] "), "(4,(2,4)):(2,(1,8))");
        assert_eq!(cute("[4,8]"), "(4,8):(1,4)");
        assert_eq!(cute("(4,8)"), "(4,8):(1,4)");
        assert_eq!(cute("8:1"), "8:1");
        assert_eq!(cute("8 : 2"), "8:2");
        assert_eq!(cute("24"), "24");
        assert_eq!(cute("BM"), "16");
        assert_eq!(cute("A"), "(4,8):(1,4)");
    }

    #[test]
    fn calls_nest_and_match_the_library() {
        assert_eq!(cute("coalesce((2,(1,6)):(1,(6,2)))"), "12:1");
        assert_eq!(
            cute("composition((6,2):(8,2), (4,3):(3,1))"),
            "((2,2),3):((24,2),8)"
        );
        assert_eq!(cute("complement(4:2, 24)"), "(2,3):(1,8)");
        assert_eq!(cute("complement((2,2):(1,6), 24)"), "(3,2):(2,12)");
        assert_eq!(cute("right_inverse((4,2):(2,1))"), "(2,4):(4,1)");
        assert_eq!(cute("left_inverse((2,2):(3,6))"), "(3,4):(0,1)");
        assert_eq!(
            cute("logical_divide((4,2,3):(2,1,8), 4:2)"),
            "((2,2),(2,3)):((4,1),(2,8))"
        );
        assert_eq!(
            cute("zipped_divide([4096,4096], <128, 32>)"),
            "((128,32),(32,128)):((1,4096),(128,131072))"
        );
        assert_eq!(
            cute("logical_product((2,2):(4,1), 6:1)"),
            "((2,2),(2,3)):((4,1),(2,8))"
        );
        assert_eq!(
            cute("blocked_product((2,5):(5,1), (3,4):(1,3))"),
            "((2,3),(5,4)):((5,10),(1,30))"
        );
        assert_eq!(cute("size(coalesce(A))"), "32");
        assert_eq!(cute("cosize([4,8 : 8,1])"), "32");
        assert_eq!(cute("rank(A)"), "2");
        assert_eq!(cute("depth([4,(2,4)])"), "2");
        assert_eq!(cute("composition(A, 8:1)"), "8:1");
        assert_eq!(cute("logical_divide(A, <2:1, _>)"), "((2,2),8):((1,2),4)");
    }

    #[test]
    fn swizzles_in_every_form() {
        assert_eq!(cute("Sw<3,3,3>"), "Sw<3,3,3>");
        assert_eq!(
            cute("Sw<3,3,3> o (8,64):(64,1)"),
            "Sw<3,3,3> o (8,64):(64,1)"
        );
        assert_eq!(
            cute("Sw<3,3,3> o 32 o (8,64):(64,1)"),
            "Sw<3,3,3> o 32 o (8,64):(64,1)"
        );
        assert_eq!(
            cute("[8,64 : 64,1].Swizzle<3,3,3>"),
            "Sw<3,3,3> o (8,64):(64,1)"
        );
        assert_eq!(
            cute("composition(Sw<3,3,3> o (8,64):(64,1), 8:1)"),
            "Sw<3,3,3> o 8:64"
        );
        assert_eq!(cute("composition(Sw<1,0,1>, A)"), "Sw<1,0,1> o (4,8):(1,4)");
        assert_eq!(code("Sw<3,3,1>"), codes::ALGEBRA);
    }

    #[test]
    fn errors_have_codes_and_spans_in_the_line() {
        assert_eq!(code("coalsce(A)"), codes::UNKNOWN_NAME);
        assert_eq!(code("B"), codes::UNKNOWN_NAME);
        assert_eq!(code("coalesce(A, A)"), codes::BAD_CALL);
        assert_eq!(code("coalesce(<2, 2>)"), codes::BAD_CALL);
        assert_eq!(
            code("composition((3,4):(1,10), (2,2):(2,1))"),
            codes::ALGEBRA
        );
        assert_eq!(code("(4,8):(1,)"), codes::LAYOUT_SYNTAX);
        assert_eq!(code("(4,8"), codes::LAYOUT_SYNTAX);
        assert_eq!(code("[4,8 : 1]"), codes::LAYOUT_SYNTAX);
        assert_eq!(code("(4,0):(1,4)"), codes::ALGEBRA);
        assert_eq!(code("A B"), codes::LAYOUT_SYNTAX);
        assert_eq!(code("_"), codes::LAYOUT_SYNTAX);
        assert_eq!(code("99999999999999999999"), codes::LAYOUT_SYNTAX);
        let bound = BTreeMap::new();
        let constants = BTreeMap::new();
        let scope = Scope {
            bound: &bound,
            constants: &constants,
        };
        let Err(Failure(diags)) = evaluate("coalesce(Q)", 10, &scope) else {
            panic!("unknown name")
        };
        assert_eq!(diags[0].primary.span, span(19, 1));
        let deep = format!("{}A{}", "coalesce(".repeat(100), ")".repeat(100));
        assert_eq!(code(&deep), codes::LAYOUT_SYNTAX);
    }
}
