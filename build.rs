//! Build script. With the `cuda` feature it will generate the libcuda link stub
//! (see README, "Running kernels"); without it, it does nothing.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
