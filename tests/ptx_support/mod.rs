//! Support code shared by the `ptx_*` integration tests: finding the NVIDIA tools
//! (or skipping loudly, through `support::skip`, which every crate including
//! this module also includes), and assembling a module with every check the
//! project makes of emitted PTX.

#![allow(dead_code)] // each test file uses a different part

use graphene::ptx::tools::{self, Assembly, ToolError, opcode_matches};
use graphene::ptx::{Arch, Module, Sm};

use crate::support::skip::skip_without_tools;

/// `true` when ptxas and nvdisasm are available. Otherwise writes the skip
/// line and returns `false` — or panics when the tools are required
/// (`GRAPHENE_REQUIRE_PTXAS=1`).
pub fn tools_available() -> bool {
    let missing: Vec<String> = [tools::ptxas_path(), tools::nvdisasm_path()]
        .into_iter()
        .filter_map(Result::err)
        .map(|error| error.to_string())
        .collect();
    if missing.is_empty() {
        return true;
    }
    skip_without_tools(&missing.join("; "));
    false
}

/// What [`check_module`] verified, for further assertions.
pub struct Checked {
    /// The PTX text that was assembled.
    pub text: String,
    /// ptxas's result.
    pub assembly: Assembly,
    /// Per entry (name, SASS opcodes), or `None` where nvdisasm cannot read
    /// this architecture (sm_70 with nvdisasm 13 or later).
    pub sass: Option<Vec<(String, Vec<String>)>>,
}

/// Writes `module` for `arch`, assembles it, and fails on: a ptxas error or
/// warning, any entry with spills or a stack frame, and any entry in
/// `expected` whose SASS lacks one of its mnemonics. `expected` lists
/// (entry name, mnemonics).
///
/// Where nvdisasm cannot read the architecture, the SASS check is replaced
/// by requiring that ptxas linked in no emulation routine (so the
/// instructions are native), and the substitution is printed.
pub fn check_module(module: &Module, arch: Arch, expected: &[(&str, Vec<String>)]) -> Checked {
    let mut module = module.clone();
    module.requested = Some(arch);
    let text = module
        .to_ptx()
        .unwrap_or_else(|error| panic!("writing for {arch}: {error}"));
    let assembly = tools::assemble(&text, arch)
        .unwrap_or_else(|error| panic!("{error}\n--- PTX ---\n{}", numbered(&text)));
    assert!(
        assembly.warnings.is_empty(),
        "ptxas warnings for {arch}:\n{}\n--- PTX ---\n{}",
        assembly.warnings.join("\n"),
        numbered(&text)
    );
    for report in assembly.entries.iter().chain(&assembly.functions) {
        assert!(
            !report.uses_local_memory(),
            "{arch}: `{}` spills or uses a stack frame: {report:?}",
            report.name
        );
    }
    for entry in &module.entries {
        assert!(
            assembly.entry(&entry.name).is_some(),
            "{arch}: ptxas did not report entry `{}`:\n{}",
            entry.name,
            assembly.log
        );
    }
    let sass = match tools::sass_functions(&assembly.cubin, arch) {
        Ok(functions) => Some(
            functions
                .into_iter()
                .map(|function| (function.name, function.opcodes))
                .collect::<Vec<_>>(),
        ),
        Err(ToolError::UnsupportedArch { .. }) => None,
        Err(error) => panic!("{error}"),
    };
    match &sass {
        Some(functions) => {
            let mut failures = Vec::new();
            for (entry, mnemonics) in expected {
                let opcodes = functions
                    .iter()
                    .find(|(name, _)| name == entry)
                    .map(|(_, opcodes)| opcodes.as_slice())
                    .unwrap_or_else(|| panic!("{arch}: no SASS for entry `{entry}`"));
                for wanted in mnemonics {
                    let met =
                        |opcode: &String| wanted.split('|').any(|w| opcode_matches(opcode, w));
                    if !opcodes.iter().any(met) {
                        failures.push(format!("`{entry}` lacks {wanted}: {opcodes:?}"));
                    }
                }
            }
            assert!(
                failures.is_empty(),
                "{arch}: SASS expectations failed:\n{}\n--- PTX ---\n{}",
                failures.join("\n"),
                numbered(&text)
            );
        }
        None => {
            // Each entry whose SASS was wanted, assembled alone, must call no
            // routine of ptxas's: then its instructions ran natively.
            for (entry, _) in expected {
                let mut alone = Module::new(Some(arch));
                let found = module.entries.iter().find(|e| e.name == *entry);
                let found = found
                    .unwrap_or_else(|| panic!("no entry `{entry}`"))
                    .clone();
                alone.add_entry(found).unwrap();
                let alone_text = alone.to_ptx().unwrap();
                let routines = tools::assemble(&alone_text, arch)
                    .unwrap_or_else(|error| panic!("{error}"))
                    .emulation_routines();
                assert!(
                    routines.is_empty(),
                    "{arch}: ptxas emulated instructions of `{entry}`: {routines:?}"
                );
            }
            println!(
                "note: nvdisasm cannot read {arch} cubins; checked instead that {} entries \
                 call no emulation routine",
                expected.len()
            );
        }
    }
    Checked {
        text,
        assembly,
        sass,
    }
}

/// The text with line numbers, for failure messages that point at ptxas's
/// line numbers.
pub fn numbered(text: &str) -> String {
    text.lines()
        .enumerate()
        .map(|(index, line)| format!("{:4} {line}\n", index + 1))
        .collect()
}

/// The strings as owned mnemonics, for [`check_module`]'s `expected`.
pub fn mnemonics(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

/// The lowest requestable architecture at or above `sm`.
pub fn lowest_arch_for(sm: Sm) -> Option<Arch> {
    Arch::ALL.into_iter().find(|arch| arch.sm() >= sm)
}
