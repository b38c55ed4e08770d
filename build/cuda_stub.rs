//! Build-script stage (feature `cuda`): generates the libcuda link stub
//! described in README, "Running kernels".
//!
//! What it writes, under `$OUT_DIR/cuda-stub/`:
//! - `libcuda-graphene-stub.so`: a shared object with soname `libcuda.so.1`
//!   that defines every entry point in `build/cuda-driver-symbols.txt`, each
//!   returning `CUDA_ERROR_STUB_LIBRARY` (34). Linking against it records
//!   `libcuda.so.1` (the real driver's name) as a needed library.
//! - `libcuda.so`, a symlink to it: the name `-lcuda` looks for at link time.
//! - `libcuda.so.1`, a symlink to it, only when this machine has no driver:
//!   the run-time fallback, so that a binary run here reports "no CUDA driver"
//!   instead of failing in the dynamic loader. On a machine with a driver the
//!   name is left to the driver, which the loader then finds as usual.

use std::env;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The driver's own code for "this is a stub library" (`cuda.h`, CUDA 11.1+).
const CUDA_ERROR_STUB_LIBRARY: u32 = 34;
/// File name of the generated object; the runtime recognises the stub by it.
const STUB_FILE: &str = "libcuda-graphene-stub.so";
const SYMBOL_LIST: &str = "build/cuda-driver-symbols.txt";

/// Writes the stub and tells cargo how to link against it.
pub fn generate() -> Result<(), String> {
    println!("cargo:rerun-if-changed={SYMBOL_LIST}");
    if env_var("CARGO_CFG_TARGET_OS")? != "linux" {
        // The stub is an ELF shared object; elsewhere cust needs a real CUDA
        // installation to link against.
        println!("cargo:warning=feature `cuda`: no libcuda link stub for this target (Linux only)");
        return Ok(());
    }
    let out_dir = PathBuf::from(env_var("OUT_DIR")?).join("cuda-stub");
    fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;

    let manifest_dir = PathBuf::from(env_var("CARGO_MANIFEST_DIR")?);
    let symbols = read_symbol_list(&manifest_dir.join(SYMBOL_LIST))?;
    let source = out_dir.join("libcuda-stub.c");
    fs::write(&source, stub_source(&symbols))
        .map_err(|e| format!("writing {}: {e}", source.display()))?;
    let object = out_dir.join(STUB_FILE);
    compile_shared_object(&source, &object)?;
    replace_symlink(&out_dir.join("libcuda.so"), STUB_FILE)?;

    // The run-time fallback is only sound where it cannot hide a real driver:
    // the loader searches LD_LIBRARY_PATH and RUNPATH before its cache, and
    // cargo puts this folder on LD_LIBRARY_PATH for `cargo run` and `cargo test`.
    let same_machine = env_var("HOST")? == env_var("TARGET")?;
    let driver = if same_machine {
        find_real_driver()?
    } else {
        None
    };
    let fallback = out_dir.join("libcuda.so.1");
    let fallback_installed = same_machine && driver.is_none();
    if fallback_installed {
        replace_symlink(&fallback, STUB_FILE)?;
        // Binaries run directly (not through cargo) find the fallback too.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", out_dir.display());
    } else {
        remove_if_present(&fallback)?;
    }

    println!("cargo:rustc-link-search=native={}", out_dir.display());
    println!(
        "cargo:rustc-env=GRAPHENE_CUDA_STUB_DIR={}",
        out_dir.display()
    );
    let found = driver.map(|p| p.display().to_string()).unwrap_or_default();
    println!("cargo:rustc-env=GRAPHENE_CUDA_BUILD_DRIVER={found}");
    println!(
        "cargo:rustc-env=GRAPHENE_CUDA_STUB_FALLBACK={}",
        u8::from(fallback_installed)
    );
    println!("cargo:rerun-if-env-changed=LD_LIBRARY_PATH");
    if Path::new("/etc/ld.so.cache").exists() {
        // Installing or removing a driver rewrites the loader's cache.
        println!("cargo:rerun-if-changed=/etc/ld.so.cache");
    }
    Ok(())
}

fn env_var(name: &str) -> Result<String, String> {
    env::var(name).map_err(|_| format!("cargo did not set {name}"))
}

/// The names in the list, in file order; every one must be a C identifier so
/// the generated source cannot be malformed by a stray edit.
fn read_symbol_list(path: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut names = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let is_identifier = line
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && line.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_identifier {
            return Err(format!(
                "{}:{}: `{line}` is not a C identifier",
                path.display(),
                index + 1
            ));
        }
        names.push(line.to_owned());
    }
    if names.is_empty() {
        return Err(format!("{} lists no symbols", path.display()));
    }
    Ok(names)
}

/// C source defining each entry point as a function that ignores its arguments
/// and returns `CUDA_ERROR_STUB_LIBRARY`. Under the System V calling conventions
/// of x86-64 and AArch64 the caller owns argument cleanup, so one `(void)`
/// definition is safe to call with any of the driver's signatures.
fn stub_source(symbols: &[String]) -> String {
    let mut source = format!(
        "/* Generated by build.rs from {SYMBOL_LIST}; do not edit.\n\
         * A stand-in for the CUDA driver library (libcuda.so.1): every entry\n\
         * point returns CUDA_ERROR_STUB_LIBRARY and touches no argument. */\n\
         #define STUB_ENTRY __attribute__((visibility(\"default\"), used))\n\
         enum {{ CUDA_ERROR_STUB_LIBRARY = {CUDA_ERROR_STUB_LIBRARY} }};\n\n"
    );
    for name in symbols {
        source.push_str(&format!(
            "STUB_ENTRY int {name}(void) {{ return CUDA_ERROR_STUB_LIBRARY; }}\n"
        ));
    }
    source
}

fn compile_shared_object(source: &Path, object: &Path) -> Result<(), String> {
    let compiler = cc::Build::new()
        .try_get_compiler()
        .map_err(|e| format!("no C compiler for the stub: {e}"))?;
    let mut command = compiler.to_command();
    command
        .args(["-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o"])
        .arg(object)
        .arg(source);
    let output = command
        .output()
        .map_err(|e| format!("running {command:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{command:?} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

fn replace_symlink(link: &Path, target: &str) -> Result<(), String> {
    remove_if_present(link)?;
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| format!("linking {} -> {target}: {e}", link.display()))
}

fn remove_if_present(path: &Path) -> Result<(), String> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("removing {}: {e}", path.display())),
    }
}

/// A driver library the dynamic loader would find for `libcuda.so.1` on this
/// machine, searched where the loader searches: `LD_LIBRARY_PATH`, its cache
/// (read through `ldconfig -p`), then the usual system folders. A candidate
/// counts only if it is an ELF object for the target's architecture and is not
/// one of our own stubs (another build's folder may be on `LD_LIBRARY_PATH`).
fn find_real_driver() -> Result<Option<PathBuf>, String> {
    let machine = match env_var("CARGO_CFG_TARGET_ARCH")?.as_str() {
        "x86_64" => 62,
        "aarch64" => 183,
        // Unknown ELF machine: any candidate counts, erring towards no fallback.
        _ => 0,
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(paths) = env::var_os("LD_LIBRARY_PATH") {
        candidates.extend(
            env::split_paths(&paths)
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| d.join("libcuda.so.1")),
        );
    }
    candidates.extend(loader_cache_entries("libcuda.so.1"));
    for dir in [
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib/wsl/lib",
    ] {
        candidates.push(Path::new(dir).join("libcuda.so.1"));
    }
    Ok(candidates
        .into_iter()
        .find(|path| is_driver_library(path, machine)))
}

/// Paths that `ldconfig -p` lists for `soname`; empty when ldconfig is absent.
fn loader_cache_entries(soname: &str) -> Vec<PathBuf> {
    let listing = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|program| {
            Command::new(program)
                .arg("-p")
                .output()
                .ok()
                .filter(|o| o.status.success())
        });
    let Some(listing) = listing else {
        return Vec::new();
    };
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter(|line| line.trim_start().starts_with(&format!("{soname} ")))
        .filter_map(|line| {
            line.split_once("=> ")
                .map(|(_, path)| PathBuf::from(path.trim()))
        })
        .collect()
}

fn is_driver_library(path: &Path, machine: u16) -> bool {
    let Ok(resolved) = fs::canonicalize(path) else {
        return false;
    };
    if resolved.file_name().is_some_and(|name| name == STUB_FILE) {
        return false;
    }
    let mut header = [0u8; 20];
    let read = fs::File::open(&resolved).and_then(|mut file| file.read_exact(&mut header));
    if read.is_err() || &header[..4] != b"\x7fELF" {
        return false;
    }
    let elf_machine = u16::from_le_bytes([header[18], header[19]]);
    machine == 0 || elf_machine == machine
}
