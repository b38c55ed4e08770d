//! `graphene`: the interactive explorer of layouts and thread-data maps.
fn main() {
    eprintln!("graphene: not built yet");
    std::process::exit(2);
}
