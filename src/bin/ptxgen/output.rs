//! `ptxgen`: where each input's output goes (`-o DIR|FILE|-`, or beside the
//! input), decided before anything is compiled so that a usage error costs
//! nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{BuildArgs, Emit, MessageFormat};

/// Where one input's text is written.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Destination {
    /// A file.
    File(PathBuf),
    /// Standard output.
    Stdout,
}

impl Destination {
    /// The destination in words, for reports.
    pub fn describe(&self) -> String {
        match self {
            Destination::File(path) => path.display().to_string(),
            Destination::Stdout => "<stdout>".into(),
        }
    }
}

/// The file extension of what is emitted.
pub fn extension(emit: Emit) -> &'static str {
    match emit {
        Emit::Ptx => "ptx",
        Emit::Ir => "ir",
        Emit::Manifest => "json",
    }
}

/// The destination of every input, in input order, and the directory to
/// create first (if any). Errors are usage errors.
pub fn plan(args: &BuildArgs) -> Result<(Vec<Destination>, Option<PathBuf>), String> {
    let ext = extension(args.emit);
    let Some(output) = &args.output else {
        let beside = args
            .files
            .iter()
            .map(|file| Destination::File(file.with_extension(ext)))
            .collect();
        return Ok((beside, None));
    };
    if output.as_os_str() == "-" {
        if args.files.len() != 1 {
            return Err("`-o -` writes one input to standard output; several were given".into());
        }
        if args.message_format == MessageFormat::Json {
            return Err(
                "`-o -` and `--message-format json` would both write to standard output".into(),
            );
        }
        return Ok((vec![Destination::Stdout], None));
    }
    let text = output.to_string_lossy();
    let directory = args.files.len() > 1
        || output.is_dir()
        || text.ends_with('/')
        || text.ends_with(std::path::MAIN_SEPARATOR);
    if !directory {
        return Ok((vec![Destination::File(output.clone())], None));
    }
    let mut seen: BTreeMap<PathBuf, &Path> = BTreeMap::new();
    let mut destinations = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let stem = file
            .file_stem()
            .ok_or_else(|| format!("`{}` has no file name", file.display()))?;
        let target = output.join(Path::new(stem).with_extension(ext));
        if let Some(earlier) = seen.insert(target.clone(), file) {
            return Err(format!(
                "`{}` and `{}` would both be written to `{}`",
                earlier.display(),
                file.display(),
                target.display()
            ));
        }
        destinations.push(Destination::File(target));
    }
    Ok((destinations, Some(output.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> BuildArgs {
        let mut full = vec!["ptxgen"];
        full.extend(line);
        super::super::Cli::try_parse_from(full).unwrap().build
    }

    #[test]
    fn outputs_go_beside_inputs_by_default() {
        let (beside, dir) = plan(&args(&["k/a.gph", "b.gph"])).unwrap();
        assert_eq!(
            beside,
            [
                Destination::File("k/a.ptx".into()),
                Destination::File("b.ptx".into())
            ]
        );
        assert_eq!(dir, None);
    }

    #[test]
    fn a_directory_collects_every_output() {
        let (plan, dir) =
            plan(&args(&["x/a.gph", "y/b.gph", "-o", "out/", "--emit", "ir"])).unwrap();
        assert_eq!(
            plan,
            [
                Destination::File("out/a.ir".into()),
                Destination::File("out/b.ir".into())
            ]
        );
        assert_eq!(dir, Some(PathBuf::from("out/")));
        let clash = plan_error(&["x/a.gph", "y/a.gph", "-o", "out"]);
        assert!(clash.contains("would both be written"), "{clash}");
    }

    fn plan_error(line: &[&str]) -> String {
        plan(&args(line)).unwrap_err()
    }

    #[test]
    fn one_input_may_name_its_file_or_standard_output() {
        let (file, _) = plan(&args(&["a.gph", "-o", "kernel.ptx"])).unwrap();
        assert_eq!(file, [Destination::File("kernel.ptx".into())]);
        let (stdout, _) = plan(&args(&["a.gph", "-o", "-"])).unwrap();
        assert_eq!(stdout, [Destination::Stdout]);
        assert!(plan_error(&["a.gph", "b.gph", "-o", "-"]).contains("one input"));
        assert!(plan_error(&["a.gph", "-o", "-", "--message-format", "json"]).contains("both"));
    }
}
