//! `ptxgen`: batch compiler from `.gph` files to `.ptx`.
fn main() {
    eprintln!("ptxgen: not built yet");
    std::process::exit(2);
}
