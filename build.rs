//! Build script (runs before the library compiles). With the `cuda` feature it
//! generates the libcuda link stub (`build/cuda_stub.rs`; README, "Running
//! kernels"); without the feature it does nothing.

#[cfg(feature = "cuda")]
#[path = "build/cuda_stub.rs"]
mod cuda_stub;

fn main() -> std::process::ExitCode {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cuda")]
    {
        println!("cargo:rerun-if-changed=build/cuda_stub.rs");
        if let Err(message) = cuda_stub::generate() {
            eprintln!("error: libcuda link stub: {message}");
            return std::process::ExitCode::FAILURE;
        }
    }
    std::process::ExitCode::SUCCESS
}
