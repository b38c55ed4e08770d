//! Offline validation (no GPU, no CUDA install): locate NVIDIA's `ptxas` and
//! `nvdisasm`, assemble PTX text into a cubin and read ptxas's resource
//! report, and list the SASS opcodes of a cubin.
//!
//! Where the tools are looked for, in order: the `PTXAS` / `NVDISASM`
//! environment variables, `PATH`, then the cache folder that
//! `scripts/nvidia-tools.sh` installs the PyPI wheels into
//! (`${XDG_CACHE_HOME:-$HOME/.cache}/graphene/nvidia-tools`).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::target::{Arch, Sm, TargetName};

/// A failure to find or run a tool, or to understand what it said.
///
/// Rule: every variant names the tool; those after a run carry its output.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The tool is nowhere it was looked for.
    #[error("{tool} not found ({})", .searched.join("; "))]
    NotFound {
        /// `ptxas` or `nvdisasm`.
        tool: &'static str,
        /// Each place looked at, in order, in words.
        searched: Vec<String>,
    },
    /// The tool could not be started, or its files not written or read.
    #[error("{tool}: {what}: {message}")]
    Io {
        /// The tool.
        tool: &'static str,
        /// What was being done.
        what: String,
        /// The operating system's message.
        message: String,
    },
    /// The tool ran and failed.
    #[error("{tool} failed ({status}): {command}\n{output}")]
    Failed {
        /// The tool.
        tool: &'static str,
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Everything it printed.
        output: String,
    },
    /// The tool does not handle this architecture (nvdisasm 13 and later
    /// no longer read sm_70 cubins).
    #[error("{tool} cannot handle {arch}: {output}")]
    UnsupportedArch {
        /// The tool.
        tool: &'static str,
        /// The architecture.
        arch: Sm,
        /// What it said.
        output: String,
    },
    /// The tool's report had a line this module does not understand.
    #[error("{tool}: cannot read its report line `{line}`\n{output}")]
    Report {
        /// The tool.
        tool: &'static str,
        /// The line.
        line: String,
        /// The whole report.
        output: String,
    },
}

/// Where the install script puts the wheels' contents.
pub fn cache_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(cache) => PathBuf::from(cache),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(base.join("graphene").join("nvidia-tools"))
}

/// Finds `tool` (`ptxas` or `nvdisasm`): `$env_var` if set (then it must
/// name an existing file), else `PATH`, else the cache folder (`bin/`, then
/// the wheels' `nvidia/*/bin/`, in name order).
pub fn locate(tool: &'static str, env_var: &str) -> Result<PathBuf, ToolError> {
    locate_in(
        tool,
        env_var,
        std::env::var_os(env_var),
        std::env::var_os("PATH"),
        cache_dir(),
    )
}

/// [`locate`] over explicit values of the variable, `PATH` and the cache
/// folder.
pub fn locate_in(
    tool: &'static str,
    env_var: &str,
    env_value: Option<OsString>,
    path: Option<OsString>,
    cache: Option<PathBuf>,
) -> Result<PathBuf, ToolError> {
    let mut searched = Vec::new();
    match env_value.filter(|value| !value.is_empty()) {
        Some(named) => {
            let named = PathBuf::from(named);
            if named.is_file() {
                return Ok(named);
            }
            searched.push(format!("${env_var}={} is not a file", named.display()));
            return Err(ToolError::NotFound { tool, searched });
        }
        None => searched.push(format!("${env_var} unset")),
    }
    if let Some(path) = path {
        for directory in std::env::split_paths(&path) {
            let candidate = directory.join(tool);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    searched.push("not on PATH".to_string());
    match cache {
        Some(cache) => {
            if let Some(found) = find_in_cache(&cache, tool) {
                return Ok(found);
            }
            searched.push(format!("not in {}", cache.display()));
        }
        None => searched.push("no cache folder ($HOME unset)".to_string()),
    }
    Err(ToolError::NotFound { tool, searched })
}

fn find_in_cache(cache: &Path, tool: &str) -> Option<PathBuf> {
    let direct = cache.join("bin").join(tool);
    if direct.is_file() {
        return Some(direct);
    }
    let mut packages: Vec<PathBuf> = std::fs::read_dir(cache.join("nvidia"))
        .ok()?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect();
    packages.sort();
    packages
        .into_iter()
        .map(|package| package.join("bin").join(tool))
        .find(|candidate| candidate.is_file())
}

/// [`locate`] for `ptxas` (variable `PTXAS`).
pub fn ptxas_path() -> Result<PathBuf, ToolError> {
    locate("ptxas", "PTXAS")
}

/// [`locate`] for `nvdisasm` (variable `NVDISASM`).
pub fn nvdisasm_path() -> Result<PathBuf, ToolError> {
    locate("nvdisasm", "NVDISASM")
}

impl From<Arch> for Sm {
    fn from(arch: Arch) -> Sm {
        arch.sm()
    }
}

/// ptxas's resource report for one entry (or one function it calls).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct FunctionReport {
    /// The entry's (or function's) name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Named barriers used.
    pub barriers: u32,
    /// Static shared memory in bytes.
    pub shared_bytes: u64,
    /// Stack frame in bytes (local arrays, spills, calls).
    pub stack_frame_bytes: u64,
    /// Bytes stored by register spills.
    pub spill_store_bytes: u64,
    /// Bytes loaded by register spills.
    pub spill_load_bytes: u64,
}

impl FunctionReport {
    /// Whether it spills registers or needs a stack frame.
    pub fn uses_local_memory(&self) -> bool {
        self.stack_frame_bytes > 0 || self.spill_store_bytes > 0 || self.spill_load_bytes > 0
    }
}

/// The result of a successful `ptxas` run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Assembly {
    /// The architecture assembled for (`-arch=`).
    pub arch: TargetName,
    /// The cubin (an ELF file).
    pub cubin: Vec<u8>,
    /// One report per entry, in the order ptxas compiled them.
    pub entries: Vec<FunctionReport>,
    /// Reports for non-entry functions (ptxas's own routines included).
    pub functions: Vec<FunctionReport>,
    /// `ptxas warning` lines.
    pub warnings: Vec<String>,
    /// Everything ptxas printed.
    pub log: String,
}

impl Assembly {
    /// The report of entry `name`.
    pub fn entry(&self, name: &str) -> Option<&FunctionReport> {
        self.entries.iter().find(|entry| entry.name == name)
    }

    /// The software routines ptxas linked in for instructions the target
    /// lacks (it names them `$__internal_N_$__cuda_sm...`; found in the
    /// cubin's string table). Empty when everything is native.
    pub fn emulation_routines(&self) -> Vec<String> {
        let marker = b"$__internal_";
        let mut names: Vec<String> = Vec::new();
        let mut rest = self.cubin.as_slice();
        while let Some(start) = find_bytes(rest, marker) {
            let tail = &rest[start..];
            let end = tail
                .iter()
                .position(|byte| *byte == 0)
                .unwrap_or(tail.len());
            let name = String::from_utf8_lossy(&tail[..end]).into_owned();
            if !names.contains(&name) {
                names.push(name);
            }
            rest = &tail[end..];
        }
        names
    }
}

fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn command_line(program: &Path, args: &[&OsStr]) -> String {
    let mut line = program.display().to_string();
    for arg in args {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

fn run(tool: &'static str, program: &Path, args: &[&OsStr]) -> Result<(String, Output), ToolError> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|error| ToolError::Io {
            tool,
            what: format!("cannot run {}", program.display()),
            message: error.to_string(),
        })?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok((text, output))
}

fn io_error(tool: &'static str, what: impl fmt::Display, error: std::io::Error) -> ToolError {
    ToolError::Io {
        tool,
        what: what.to_string(),
        message: error.to_string(),
    }
}

/// Assembles `ptx` for `arch` with the located `ptxas` (`ptxas -arch=sm_XX
/// -v`, or `sm_90a`), returning the cubin and the parsed report. `arch`
/// must be the module's `.target` name where that is arch-specific: ptxas
/// refuses `sm_90a` PTX for `-arch=sm_90`.
pub fn assemble(ptx: &str, arch: impl Into<TargetName>) -> Result<Assembly, ToolError> {
    assemble_with(&ptxas_path()?, ptx, arch.into())
}

/// [`assemble`] with an explicit `ptxas`.
pub fn assemble_with(ptxas: &Path, ptx: &str, arch: TargetName) -> Result<Assembly, ToolError> {
    const TOOL: &str = "ptxas";
    let directory = tempfile::Builder::new()
        .prefix("graphene-ptxas-")
        .tempdir()
        .map_err(|error| io_error(TOOL, "cannot create a temporary folder", error))?;
    let input = directory.path().join("kernel.ptx");
    let output = directory.path().join("kernel.cubin");
    std::fs::write(&input, ptx).map_err(|error| io_error(TOOL, input.display(), error))?;
    let arch_flag = format!("-arch={arch}");
    let args: [&OsStr; 5] = [
        OsStr::new(&arch_flag),
        OsStr::new("-v"),
        input.as_os_str(),
        OsStr::new("-o"),
        output.as_os_str(),
    ];
    let (log, result) = run(TOOL, ptxas, &args)?;
    if !result.status.success() {
        return Err(ToolError::Failed {
            tool: TOOL,
            command: command_line(ptxas, &args),
            status: result.status.to_string(),
            output: log,
        });
    }
    let cubin = std::fs::read(&output).map_err(|error| io_error(TOOL, output.display(), error))?;
    let report = parse_ptxas_report(&log)?;
    Ok(Assembly {
        arch,
        cubin,
        entries: report.entries,
        functions: report.functions,
        warnings: report.warnings,
        log,
    })
}

/// What `ptxas -v` reported, split by function.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct PtxasReport {
    /// Entries, in order.
    pub entries: Vec<FunctionReport>,
    /// Other functions, in order.
    pub functions: Vec<FunctionReport>,
    /// `ptxas warning` lines.
    pub warnings: Vec<String>,
}

/// Parses the `-v` output of ptxas:
///
/// ```text
/// ptxas info    : Compiling entry function 'k' for 'sm_80'
/// ptxas info    : Function properties for k
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 364 bytes cmem[0]
/// ```
pub fn parse_ptxas_report(log: &str) -> Result<PtxasReport, ToolError> {
    let unreadable = |line: &str| ToolError::Report {
        tool: "ptxas",
        line: line.to_string(),
        output: log.to_string(),
    };
    let mut report = PtxasReport::default();
    // Index into `entries` of the entry being compiled, and the name whose
    // properties line comes next.
    let mut current_entry: Option<usize> = None;
    let mut properties_of: Option<String> = None;
    for line in log.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("ptxas warning") {
            report.warnings.push(trimmed.to_string());
        } else if let Some(rest) =
            trimmed.strip_prefix("ptxas info    : Compiling entry function '")
        {
            let name = rest.split('\'').next().ok_or_else(|| unreadable(line))?;
            report.entries.push(FunctionReport {
                name: name.to_string(),
                ..FunctionReport::default()
            });
            current_entry = Some(report.entries.len() - 1);
        } else if let Some(name) = trimmed.strip_prefix("ptxas info    : Function properties for ")
        {
            properties_of = Some(name.trim().to_string());
        } else if trimmed.contains("bytes stack frame") {
            let name = properties_of.take().ok_or_else(|| unreadable(line))?;
            let target = match report.entries.iter().position(|entry| entry.name == name) {
                Some(index) => &mut report.entries[index],
                None => {
                    report.functions.push(FunctionReport {
                        name,
                        ..FunctionReport::default()
                    });
                    report
                        .functions
                        .last_mut()
                        .ok_or_else(|| unreadable(line))?
                }
            };
            for item in trimmed.split(',') {
                let (number, what) = number_and_rest(item).ok_or_else(|| unreadable(line))?;
                match what {
                    "bytes stack frame" => target.stack_frame_bytes = number,
                    "bytes spill stores" => target.spill_store_bytes = number,
                    "bytes spill loads" => target.spill_load_bytes = number,
                    _ => return Err(unreadable(line)),
                }
            }
        } else if let Some(rest) = trimmed.strip_prefix("ptxas info    : Used ") {
            let index = current_entry.ok_or_else(|| unreadable(line))?;
            let entry = &mut report.entries[index];
            for item in format!("Used {rest}").split(',') {
                let item = item.trim();
                let item = item
                    .strip_prefix("Used ")
                    .or_else(|| item.strip_prefix("used "))
                    .unwrap_or(item);
                let (number, what) = number_and_rest(item).ok_or_else(|| unreadable(line))?;
                match what {
                    "registers" => {
                        entry.registers = to_u32(number).ok_or_else(|| unreadable(line))?
                    }
                    "barriers" => {
                        entry.barriers = to_u32(number).ok_or_else(|| unreadable(line))?
                    }
                    "bytes smem" => entry.shared_bytes = number,
                    // Constant banks, local memory and the like are not checked.
                    _ => {}
                }
            }
        }
    }
    Ok(report)
}

fn to_u32(number: u64) -> Option<u32> {
    u32::try_from(number).ok()
}

/// `"12 bytes smem"` → `(12, "bytes smem")`.
fn number_and_rest(item: &str) -> Option<(u64, &str)> {
    let item = item.trim();
    let (number, rest) = item.split_once(' ')?;
    Some((number.parse().ok()?, rest.trim()))
}

/// Disassembles `cubin` (built for `arch`) with the located `nvdisasm` and
/// returns the SASS opcodes in program order, modifiers included
/// (`HMMA.16816.F32`); see [`mnemonic`] for the bare name.
pub fn sass_opcodes(cubin: &[u8], arch: impl Into<Sm>) -> Result<Vec<String>, ToolError> {
    sass_opcodes_with(&nvdisasm_path()?, cubin, arch.into())
}

/// [`sass_opcodes`] with an explicit `nvdisasm`.
pub fn sass_opcodes_with(
    nvdisasm: &Path,
    cubin: &[u8],
    arch: Sm,
) -> Result<Vec<String>, ToolError> {
    let listing = disassemble(nvdisasm, cubin, arch)?;
    Ok(parse_sass_listing(&listing)
        .into_iter()
        .flat_map(|function| function.opcodes)
        .collect())
}

/// Runs `nvdisasm -c` on `cubin` and returns its listing.
fn disassemble(nvdisasm: &Path, cubin: &[u8], arch: Sm) -> Result<String, ToolError> {
    const TOOL: &str = "nvdisasm";
    let directory = tempfile::Builder::new()
        .prefix("graphene-nvdisasm-")
        .tempdir()
        .map_err(|error| io_error(TOOL, "cannot create a temporary folder", error))?;
    let input = directory.path().join("kernel.cubin");
    std::fs::write(&input, cubin).map_err(|error| io_error(TOOL, input.display(), error))?;
    let args: [&OsStr; 2] = [OsStr::new("-c"), input.as_os_str()];
    let (log, result) = run(TOOL, nvdisasm, &args)?;
    if !result.status.success() {
        let lower = log.to_lowercase();
        if lower.contains("deprecated") || lower.contains("not supported") {
            return Err(ToolError::UnsupportedArch {
                tool: TOOL,
                arch,
                output: log,
            });
        }
        return Err(ToolError::Failed {
            tool: TOOL,
            command: command_line(nvdisasm, &args),
            status: result.status.to_string(),
            output: log,
        });
    }
    Ok(String::from_utf8_lossy(&result.stdout).into_owned())
}

/// The SASS of one code section of a cubin: an entry, with any routines
/// ptxas placed in its section.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SassFunction {
    /// The entry's name (from the `.text.NAME` section).
    pub name: String,
    /// Its opcodes in program order, modifiers included.
    pub opcodes: Vec<String>,
}

/// Like [`sass_opcodes`], split per entry.
pub fn sass_functions(cubin: &[u8], arch: impl Into<Sm>) -> Result<Vec<SassFunction>, ToolError> {
    sass_functions_with(&nvdisasm_path()?, cubin, arch.into())
}

/// [`sass_functions`] with an explicit `nvdisasm`.
pub fn sass_functions_with(
    nvdisasm: &Path,
    cubin: &[u8],
    arch: Sm,
) -> Result<Vec<SassFunction>, ToolError> {
    let listing = disassemble(nvdisasm, cubin, arch)?;
    Ok(parse_sass_listing(&listing))
}

/// Extracts the opcodes from an nvdisasm listing, per `.text.NAME` section:
/// the first word after the `/*addr*/` column, after any `@P0`/`@!PT` guard.
pub fn parse_sass_listing(listing: &str) -> Vec<SassFunction> {
    let mut functions: Vec<SassFunction> = Vec::new();
    for line in listing.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed
            .strip_prefix(".text.")
            .and_then(|rest| rest.strip_suffix(':'))
        {
            functions.push(SassFunction {
                name: name.to_string(),
                opcodes: Vec::new(),
            });
            continue;
        }
        let Some(rest) = trimmed.strip_prefix("/*") else {
            continue;
        };
        let Some((address, instruction)) = rest.split_once("*/") else {
            continue;
        };
        if address.is_empty() || !address.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let mut words = instruction
            .split(|c: char| c.is_whitespace() || c == ';')
            .filter(|word| !word.is_empty());
        let opcode = match words.next() {
            Some(guard) if guard.starts_with('@') => words.next(),
            other => other,
        };
        let Some(opcode) = opcode else {
            continue;
        };
        if functions.is_empty() {
            functions.push(SassFunction {
                name: String::new(),
                opcodes: Vec::new(),
            });
        }
        if let Some(function) = functions.last_mut() {
            function.opcodes.push(opcode.to_string());
        }
    }
    functions
}

/// The mnemonic of an opcode without modifiers: `LDSM.16.M88.4` → `LDSM`.
pub fn mnemonic(opcode: &str) -> &str {
    opcode.split('.').next().unwrap_or(opcode)
}

/// Whether `opcode` (with its modifiers, as listed) is what `wanted` names:
/// a bare mnemonic matches any modifiers (`HGMMA` matches
/// `HGMMA.64x8x16.F32`); a dotted one must be a whole-part prefix
/// (`WARPGROUP.ARRIVE` matches it and `WARPGROUP.ARRIVE.X`, not
/// `WARPGROUP.DEPBAR.LE`), for opcodes told apart only by a modifier.
pub fn opcode_matches(opcode: &str, wanted: &str) -> bool {
    opcode == wanted
        || opcode
            .strip_prefix(wanted)
            .is_some_and(|rest| rest.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'copy' for 'sm_80'
ptxas info    : Function properties for copy
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem, 364 bytes cmem[0]
ptxas info    : Compile time = 12.845 ms
ptxas info    : Compiling entry function 'gemm' for 'sm_80'
ptxas info    : Function properties for gemm
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 360 bytes cmem[0]
";

    #[test]
    fn the_report_is_split_per_entry() {
        let report = parse_ptxas_report(REPORT).unwrap();
        assert_eq!(
            report.entries,
            [
                FunctionReport {
                    name: "copy".into(),
                    registers: 12,
                    barriers: 1,
                    shared_bytes: 1024,
                    stack_frame_bytes: 0,
                    spill_store_bytes: 0,
                    spill_load_bytes: 0,
                },
                FunctionReport {
                    name: "gemm".into(),
                    registers: 255,
                    barriers: 0,
                    shared_bytes: 0,
                    stack_frame_bytes: 16,
                    spill_store_bytes: 8,
                    spill_load_bytes: 4,
                },
            ]
        );
        assert!(!report.entries[0].uses_local_memory());
        assert!(report.entries[1].uses_local_memory());
    }

    #[test]
    fn an_unreadable_properties_line_is_an_error() {
        let log = "ptxas info    : Function properties for k\n    lots of bytes stack frame\n";
        let error = parse_ptxas_report(log).unwrap_err().to_string();
        assert!(error.contains("lots of bytes stack frame"), "{error}");
    }

    #[test]
    fn sass_listings_yield_opcodes_without_guards() {
        let listing = "\
        .section .text.k,\"ax\",@progbits
        .text.k:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/              @!PT LDS RZ, [RZ] ;
        /*0020*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0030*/               @P0 BRA `(.L_x_1) ;
        /*0040*/                   EXIT ;
";
        let functions = parse_sass_listing(listing);
        assert_eq!(functions.len(), 1);
        assert_eq!(functions[0].name, "k");
        let opcodes = &functions[0].opcodes;
        assert_eq!(opcodes, &["LDC", "LDS", "LDSM.16.M88.4", "BRA", "EXIT"]);
        assert_eq!(mnemonic(&opcodes[2]), "LDSM");
    }

    #[test]
    fn wanted_opcodes_match_bare_or_by_whole_dotted_parts() {
        assert!(opcode_matches("HGMMA.64x8x16.F32", "HGMMA"));
        assert!(opcode_matches("WARPGROUP.ARRIVE", "WARPGROUP.ARRIVE"));
        assert!(opcode_matches("WARPGROUP.DEPBAR.LE", "WARPGROUP.DEPBAR"));
        assert!(!opcode_matches("WARPGROUP.DEPBAR.LE", "WARPGROUP.ARRIVE"));
        assert!(!opcode_matches("HGMMAX.64", "HGMMA"));
        assert!(!opcode_matches("FENCE.VIEW.ASYNC.S", "FENCE.VIEW.ASYNC.SX"));
    }

    #[test]
    fn a_missing_tool_says_where_it_looked() {
        let empty = tempfile::tempdir().unwrap();
        let error = locate_in(
            "ptxas",
            "PTXAS",
            None,
            Some(empty.path().as_os_str().to_owned()),
            Some(empty.path().join("cache")),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("ptxas not found ($PTXAS unset; not on PATH; not in "),
            "{error}"
        );
        let error = locate_in("ptxas", "PTXAS", Some("/no/such/ptxas".into()), None, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "ptxas not found ($PTXAS=/no/such/ptxas is not a file)"
        );
    }

    #[test]
    fn the_cache_folder_is_searched_in_the_wheel_layout() {
        let cache = tempfile::tempdir().unwrap();
        let bin = cache.path().join("nvidia").join("cuda_nvcc").join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("ptxas"), "").unwrap();
        let found = locate_in("ptxas", "PTXAS", None, None, Some(cache.path().to_owned())).unwrap();
        assert_eq!(found, bin.join("ptxas"));
        assert!(
            locate_in(
                "nvdisasm",
                "NVDISASM",
                None,
                None,
                Some(cache.path().to_owned())
            )
            .is_err()
        );
    }
}
