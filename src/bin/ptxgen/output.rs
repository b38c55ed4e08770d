//! `ptxgen`: where each input's output goes (`-o DIR|FILE|-`, or beside the
//! input), decided before anything is compiled so that a usage error costs
//! nothing, and how it is written there.
//!
//! Rules: no output is ever an input (compared as files, so `./a.gph`, a
//! hard link or a symbolic link count as the same); no two inputs share an
//! output; a file is written to a temporary file beside it and renamed, so
//! a failed or interrupted run leaves the old file or the new one, never a
//! mix; standard output is checked, so a closed or full stdout fails the run.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
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
    if let Some(ptx) = args
        .files
        .iter()
        .find(|file| file.extension().is_some_and(|ext| ext == "ptx"))
    {
        return Err(format!(
            "`{}` is PTX, what ptxgen writes; ptxgen compiles .gph sources \
             (give the .gph file it was compiled from)",
            ptx.display()
        ));
    }
    let (destinations, directory) = destinations(args)?;
    refuse_shared_outputs(&args.files, &destinations)?;
    refuse_overwriting_inputs(&args.files, &destinations)?;
    Ok((destinations, directory))
}

/// Where each input would go, before the checks of `plan`.
fn destinations(args: &BuildArgs) -> Result<(Vec<Destination>, Option<PathBuf>), String> {
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
    let named_directory =
        output.is_dir() || text.ends_with('/') || text.ends_with(std::path::MAIN_SEPARATOR);
    // Several inputs need a folder; one that does not exist yet and is named
    // like an output file (`-o x.ptx`) is more likely a slip than a folder.
    if args.files.len() > 1 && !named_directory && output.extension().is_some_and(|e| e == ext) {
        return Err(format!(
            "`-o {text}` names one .{ext} file, but {} inputs were given: give a folder \
             (`-o out/`) or one input",
            args.files.len()
        ));
    }
    let directory = args.files.len() > 1 || named_directory;
    if !directory {
        return Ok((vec![Destination::File(output.clone())], None));
    }
    let mut destinations = Vec::with_capacity(args.files.len());
    for file in &args.files {
        let stem = file
            .file_stem()
            .ok_or_else(|| format!("`{}` has no file name", file.display()))?;
        destinations.push(Destination::File(
            output.join(Path::new(stem).with_extension(ext)),
        ));
    }
    Ok((destinations, Some(output.clone())))
}

/// Two inputs with one output (`x.gph x.txt` beside themselves, `a/k.gph
/// b/k.gph -o out/`) would write one file twice, at once under `-j`.
fn refuse_shared_outputs(files: &[PathBuf], destinations: &[Destination]) -> Result<(), String> {
    let mut seen: BTreeMap<PathBuf, &Path> = BTreeMap::new();
    for (file, destination) in files.iter().zip(destinations) {
        let Destination::File(target) = destination else {
            continue;
        };
        if let Some(earlier) = seen.insert(identity(target), file) {
            return Err(format!(
                "`{}` and `{}` would both be written to `{}`",
                earlier.display(),
                file.display(),
                target.display()
            ));
        }
    }
    Ok(())
}

/// An output that is an input (`ptxgen a.gph -o a.gph`) would destroy it.
fn refuse_overwriting_inputs(
    files: &[PathBuf],
    destinations: &[Destination],
) -> Result<(), String> {
    for destination in destinations {
        let Destination::File(target) = destination else {
            continue;
        };
        if let Some(input) = files.iter().find(|file| same_file(file, target)) {
            return Err(format!(
                "the output `{}` is the input `{}`: writing it would destroy the source",
                target.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

/// Whether `a` and `b` name one file: the same device and inode when both
/// exist, else the same path once their folders are resolved.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => identity(a) == identity(b),
    }
}

/// The path with its folder resolved (links, `.`, `..`), for comparing
/// paths that may not exist yet; the path as given when the folder does
/// not exist either.
fn identity(path: &Path) -> PathBuf {
    if let Ok(resolved) = path.canonicalize() {
        return resolved;
    }
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        Some(_) | None => Path::new("."),
    };
    match (folder.canonicalize(), path.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        (Ok(_) | Err(_), _) => path.to_path_buf(),
    }
}

/// Writes `text` to `destination`: a file through a temporary file in its
/// folder and a rename; standard output through a checked write and flush.
pub fn write(destination: &Destination, text: &str) -> std::io::Result<()> {
    match destination {
        Destination::File(path) => write_file(path, text),
        Destination::Stdout => {
            // A duplicate of descriptor 1 as a plain file: the standard
            // library's stdout treats a closed descriptor as a sink that
            // swallows everything, and the copy reports it (EBADF), like a
            // full disk (ENOSPC) or a reader gone (EPIPE).
            let mut stdout = File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
            stdout.write_all(text.as_bytes())?;
            stdout.flush()
        }
    }
}

fn write_file(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        Some(_) | None => Path::new("."),
    };
    // A replaced file keeps its permissions; a new one is readable by all,
    // as a file created by `std::fs::write` usually is.
    let permissions = std::fs::metadata(path)
        .map(|existing| existing.permissions())
        .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
    let mut temporary = tempfile::Builder::new()
        .prefix(".ptxgen-")
        .permissions(permissions)
        .tempfile_in(folder)?;
    temporary.write_all(text.as_bytes())?;
    temporary.as_file().sync_data()?;
    temporary.persist(path).map_err(|failure| failure.error)?;
    Ok(())
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
