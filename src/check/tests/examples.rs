//! The two examples of seed 000 check clean.

use super::check;

fn example(name: &str) -> String {
    let path = format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("example")
}

#[test]
fn ldmatrix_move_checks() {
    let program = check("ldmatrix_move.gph", &example("ldmatrix_move.gph"));
    let program = program.unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(program.kernels.len(), 1);
}

#[test]
fn simple_gemm_checks() {
    let program = check("simple_gemm.gph", &example("simple_gemm.gph"));
    let program = program.unwrap_or_else(|d| panic!("{d:#?}"));
    assert_eq!(program.kernels.len(), 1);
}
