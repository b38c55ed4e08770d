//! The written forms: printing and parsing round-trip in both notations,
//! parse errors never panic, and a golden table pins the algebra's printed
//! results (`tests/golden/layout/`, rewritten with `BLESS=1`).

mod layout_gen;
mod support;

use graphene::layout::{
    Layout, LayoutParseError, SwizzledLayout, Tiler, blocked_product, coalesce, complement,
    composition, digit_coordinates, left_inverse, logical_divide, logical_product, parse_layout,
    parse_swizzled_layout, raked_product, reshape, right_inverse, tile, tiled_divide,
    zipped_divide,
};
use layout_gen::arb_layout;
use pretty_assertions::assert_eq;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn both_notations_round_trip(l in arb_layout()) {
        let cute = l.to_string();
        prop_assert_eq!(parse_layout(&cute).unwrap(), l.clone(), "{}", cute);
        let ir = l.ir().to_string();
        prop_assert_eq!(parse_layout(&ir).unwrap(), l.clone(), "{}", ir);
        // Whitespace is free between tokens.
        let spaced = ir.replace(',', " , ").replace('[', "[ ");
        prop_assert_eq!(parse_layout(&spaced).unwrap(), l.clone());
    }

    #[test]
    fn swizzled_layouts_round_trip(l in arb_layout(), offset in 0i64..100, b in 0i64..4, m in 0i64..4, s in 4i64..6, neg in any::<bool>()) {
        let sw = graphene::layout::Swizzle::new(b, m, if neg { -s } else { s }).unwrap();
        let x = SwizzledLayout::new(sw, offset, l);
        prop_assert_eq!(parse_swizzled_layout(&x.to_string()).unwrap(), x.clone());
        if !sw.is_identity() || offset != 0 {
            prop_assert_eq!(parse_swizzled_layout(&x.ir().to_string()).unwrap(), x.clone());
        }
    }

    #[test]
    fn garbage_is_an_error_with_a_position(text in "[\\[\\]():,_ 0-9+oSwizle<>.-]{0,24}") {
        match parse_layout(&text) {
            Ok(_) => {}
            Err(LayoutParseError::Syntax { offset, .. } | LayoutParseError::Invalid { offset, .. }) => {
                prop_assert!(offset <= text.len());
            }
        }
        let _ = parse_swizzled_layout(&text);
    }
}

/// Parses a tiler list `t0 ; t1 ; …` (`_` keeps a mode).
fn tilers(text: &str) -> Vec<Tiler> {
    text.split(';')
        .map(|t| match t.trim() {
            "_" => Tiler::Keep,
            t => Tiler::Layout(parse_layout(t).unwrap()),
        })
        .collect()
}

fn show<T: std::fmt::Display, E: std::fmt::Display>(result: Result<T, E>) -> String {
    match result {
        Ok(value) => value.to_string(),
        Err(error) => format!("error: {error}"),
    }
}

/// Runs one golden case.
fn run_case(op: &str, args: &[&str]) -> String {
    let l = |i: usize| parse_layout(args[i]).unwrap();
    let int = |i: usize| args[i].trim().parse::<i64>().unwrap();
    let by_mode = |i: usize| {
        let list = tilers(args[i]);
        if list.len() == 1 {
            list.into_iter().next().unwrap()
        } else {
            Tiler::ByMode(list)
        }
    };
    match op {
        "coalesce" => coalesce(&l(0)).to_string(),
        "composition" => show(composition(&l(0), &l(1))),
        "complement" => show(complement(&l(0), int(1))),
        "right_inverse" => right_inverse(&l(0)).to_string(),
        "left_inverse" => show(left_inverse(&l(0))),
        "logical_divide" => show(logical_divide(&l(0), &by_mode(1))),
        "zipped_divide" => show(zipped_divide(&l(0), &by_mode(1))),
        "tiled_divide" => show(tiled_divide(&l(0), &by_mode(1))),
        "logical_product" => show(logical_product(&l(0), &Tiler::Layout(l(1)))),
        "blocked_product" => show(blocked_product(&l(0), &l(1))),
        "raked_product" => show(raked_product(&l(0), &l(1))),
        "tile" => show(tile(&l(0), &tilers(args[1]))),
        "reshape" => show(reshape(&l(0), &l(1)).map(|r| r.ir().to_string())),
        "digit_coordinates" => show(digit_coordinates(&l(0), int(1))),
        "swizzle" => {
            let s = parse_swizzled_layout(args[0]).unwrap();
            let values: Vec<String> = args[1]
                .split(';')
                .map(|i| show(s.eval(i.trim().parse().unwrap())))
                .collect();
            format!("{} = [{}]", s.ir(), values.join(", "))
        }
        other => panic!("unknown golden operation `{other}`"),
    }
}

#[test]
fn golden_algebra_table() {
    let dir = support::golden::dir("layout");
    let input = std::fs::read_to_string(dir.join("algebra.txt")).unwrap();
    let mut actual = String::new();
    for line in input.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parts: Vec<&str> = line.split('|').map(str::trim).collect();
        let result = run_case(parts[0], &parts[1..]);
        actual.push_str(&format!("{line}\n    => {result}\n"));
    }
    support::golden::check(&dir.join("algebra.expected"), &actual);
}

#[test]
fn ir_notation_of_special_layouts() {
    assert_eq!(Layout::empty().ir().to_string(), "[]");
    assert_eq!(parse_layout("[]").unwrap(), Layout::empty());
    assert_eq!(
        parse_layout("[(4,2) : (1,16)]").unwrap().ir().to_string(),
        "[(4,2) : (1,16)]"
    );
    assert_eq!(
        parse_layout("((4,2)):((1,16))").unwrap().ir().to_string(),
        "[(4,2) : (1,16)]"
    );
    assert_eq!(parse_layout("(8):(1)").unwrap().ir().to_string(), "[8 : 1]");
}

#[test]
fn parse_errors_point_at_the_problem() {
    let error = parse_layout("[4,(2,4) : 2,(1 8)]").unwrap_err();
    assert_eq!(error.to_string(), "at byte 16: expected `)`, found `8)]`");
    let error = parse_layout("[4,8 : 1]").unwrap_err();
    assert_eq!(
        error.to_string(),
        "at byte 8: expected as many strides as dims, found `]`"
    );
    let error = parse_layout("").unwrap_err();
    assert_eq!(
        error.to_string(),
        "at byte 0: expected an integer or `(`, found end of input"
    );
    let error = parse_layout("(4,8):(1,(2,3))").unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("at byte 0: shape (4,8) and stride (1,(2,3)) are not congruent")
    );
}
