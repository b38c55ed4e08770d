//! `ptxgen`: what one file's compilation reports — diagnostics, the kernels
//! it produced, ptxas's resource usage — printed for people (rendered
//! diagnostics on standard error) or for build systems (one JSON object per
//! line on standard output).

use std::io::Write;

use graphene::diag::{ColorChoice, Diagnostic, Severity, SourceMap};
use serde_json::{Value, json};

/// ptxas's report for one kernel.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Resources {
    /// The architecture assembled for.
    pub arch: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory.
    pub shared_bytes: u64,
    /// Stack frame.
    pub stack_bytes: u64,
    /// Bytes stored by spills.
    pub spill_stores: u64,
    /// Bytes loaded by spills.
    pub spill_loads: u64,
}

/// One kernel of a compiled file.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KernelReport {
    /// Its entry name.
    pub name: String,
    /// Dynamic shared memory a launcher must pass (0: static only).
    pub dynamic_shared_bytes: u32,
    /// What ptxas said, with `--verify`.
    pub resources: Option<Resources>,
}

/// A message without a place in the source (I/O, ptxas).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Plain {
    /// How bad.
    pub severity: Severity,
    /// What.
    pub text: String,
}

/// Everything one input produced.
#[derive(Clone, Debug)]
pub struct FileReport {
    /// The input as given.
    pub file: String,
    /// Its text (empty when unreadable).
    pub source: String,
    /// Diagnostics about the source.
    pub diagnostics: Vec<Diagnostic>,
    /// Messages without a place.
    pub plain: Vec<Plain>,
    /// The kernels, when compiled.
    pub kernels: Vec<KernelReport>,
    /// Where the output went, when written.
    pub output: Option<String>,
}

impl FileReport {
    /// A report with nothing in it yet.
    pub fn new(file: String) -> FileReport {
        FileReport {
            file,
            source: String::new(),
            diagnostics: Vec::new(),
            plain: Vec::new(),
            kernels: Vec::new(),
            output: None,
        }
    }

    /// Whether the file compiled: no error of any kind.
    pub fn succeeded(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
            && !self.plain.iter().any(|p| p.severity == Severity::Error)
    }
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// Prints `report` for people: diagnostics rendered on standard error, then
/// plain messages, then (with `--verify`) one line per kernel on standard
/// output.
pub fn print_human(report: &FileReport, color: ColorChoice) {
    let mut files = SourceMap::new();
    let id = files.add(report.file.clone(), report.source.clone());
    let mut stderr = std::io::stderr().lock();
    if !report.diagnostics.is_empty() {
        let rendered = files.render(id, &report.diagnostics, color);
        let _ = stderr.write_all(rendered.as_bytes());
    }
    for plain in &report.plain {
        let _ = writeln!(
            stderr,
            "{}: {}: {}",
            severity_name(plain.severity),
            report.file,
            plain.text
        );
    }
    let mut stdout = std::io::stdout().lock();
    for kernel in &report.kernels {
        if let Some(resources) = &kernel.resources {
            let _ = writeln!(stdout, "{}", resource_line(&report.file, kernel, resources));
        }
    }
}

/// `a.gph: kernel `k` on sm_80: 40 registers, 8192 bytes shared, no spills`.
pub fn resource_line(file: &str, kernel: &KernelReport, resources: &Resources) -> String {
    let dynamic = if kernel.dynamic_shared_bytes > 0 {
        format!(" + {} dynamic", kernel.dynamic_shared_bytes)
    } else {
        String::new()
    };
    let spills = if resources.spill_stores + resources.spill_loads + resources.stack_bytes == 0 {
        "no spills".to_string()
    } else {
        format!(
            "{} bytes spilled, {} reloaded, {}-byte stack frame",
            resources.spill_stores, resources.spill_loads, resources.stack_bytes
        )
    };
    format!(
        "{file}: kernel `{}` on {}: {} registers, {} bytes shared{dynamic}, {spills}",
        kernel.name, resources.arch, resources.registers, resources.shared_bytes
    )
}

/// The JSON lines of `report`: its diagnostics, plain messages, kernels,
/// then one `result` object.
pub fn json_lines(report: &FileReport) -> Vec<Value> {
    let mut files = SourceMap::new();
    let id = files.add(report.file.clone(), report.source.clone());
    let position = |offset: u32| {
        files.line_column(id, offset).map_or(
            json!(null),
            |(line, column)| json!({"line": line, "column": column}),
        )
    };
    let mut lines = Vec::new();
    for diagnostic in &report.diagnostics {
        let labels: Vec<Value> = diagnostic
            .secondary
            .iter()
            .map(|label| {
                json!({
                    "message": label.message,
                    "start": position(label.span.start),
                    "end": position(label.span.end),
                })
            })
            .collect();
        lines.push(json!({
            "type": "diagnostic",
            "file": report.file,
            "severity": severity_name(diagnostic.severity),
            "code": diagnostic.code,
            "message": diagnostic.message,
            "start": position(diagnostic.primary.span.start),
            "end": position(diagnostic.primary.span.end),
            "label": diagnostic.primary.message,
            "labels": labels,
            "notes": diagnostic.notes,
            "help": diagnostic.help,
            "rendered": files.render(id, std::slice::from_ref(diagnostic), ColorChoice::Never),
        }));
    }
    for plain in &report.plain {
        lines.push(json!({
            "type": "diagnostic",
            "file": report.file,
            "severity": severity_name(plain.severity),
            "code": null,
            "message": plain.text,
            "start": null,
            "end": null,
            "label": null,
            "labels": [],
            "notes": [],
            "help": null,
            "rendered": format!("{}: {}: {}\n", severity_name(plain.severity), report.file, plain.text),
        }));
    }
    for kernel in &report.kernels {
        let resources = kernel.resources.as_ref().map(|r| {
            json!({
                "arch": r.arch,
                "registers": r.registers,
                "shared_bytes": r.shared_bytes,
                "stack_bytes": r.stack_bytes,
                "spill_store_bytes": r.spill_stores,
                "spill_load_bytes": r.spill_loads,
            })
        });
        lines.push(json!({
            "type": "kernel",
            "file": report.file,
            "name": kernel.name,
            "dynamic_shared_bytes": kernel.dynamic_shared_bytes,
            "ptxas": resources,
        }));
    }
    lines.push(json!({
        "type": "result",
        "file": report.file,
        "success": report.succeeded(),
        "output": report.output,
    }));
    lines
}

/// Prints `report` as JSON lines on standard output.
pub fn print_json(report: &FileReport) {
    let mut stdout = std::io::stdout().lock();
    for line in json_lines(report) {
        let _ = writeln!(stdout, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphene::diag::Span;

    #[test]
    fn json_lines_carry_positions_and_a_result() {
        let mut report = FileReport::new("a.gph".into());
        report.source = "kernel k {\n  sync\n}\n".into();
        report.diagnostics.push(Diagnostic::error(
            "E0300",
            "no instruction matches",
            Span::new(13, 17),
        ));
        report.plain.push(Plain {
            severity: Severity::Warning,
            text: "spills".into(),
        });
        let lines = json_lines(&report);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["code"], "E0300");
        assert_eq!(lines[0]["start"], json!({"line": 2, "column": 3}));
        assert!(lines[0]["rendered"].as_str().unwrap().contains("a.gph:2:3"));
        assert_eq!(lines[1]["severity"], "warning");
        assert_eq!(
            lines[2],
            json!({"type": "result", "file": "a.gph", "success": false, "output": null})
        );
        // Every line is one line of text.
        assert!(lines.iter().all(|line| !line.to_string().contains('\n')));
    }

    #[test]
    fn resource_lines_say_spills_plainly() {
        let kernel = KernelReport {
            name: "k".into(),
            dynamic_shared_bytes: 65536,
            resources: None,
        };
        let mut resources = Resources {
            arch: "sm_80".into(),
            registers: 40,
            shared_bytes: 0,
            stack_bytes: 0,
            spill_stores: 0,
            spill_loads: 0,
        };
        assert_eq!(
            resource_line("a.gph", &kernel, &resources),
            "a.gph: kernel `k` on sm_80: 40 registers, 0 bytes shared + 65536 dynamic, no spills"
        );
        resources.spill_stores = 8;
        assert!(resource_line("a.gph", &kernel, &resources).contains("8 bytes spilled"));
    }
}
