//! `--emit FORMAT [--out FILE]`: a command's configuration as launch files, printed
//! instead of the report (as a `{"emit": ..., "files": [...]}` document with --json),
//! or written atomically beside each other while the report prints as usual.

use super::EmitArgs;
use super::commands::check_outputs;
use super::context::{Ctx, named, to_json};
use crate::emit::{EmittedFile, Format, Launch, emit};
use crate::{Error, Result, files};
use std::path::{Path, PathBuf};

/// Devices per node of a device (8 where its file gives none).
pub(super) fn devices_per_node(ctx: &Ctx, gpu: &str) -> Result<u64> {
    Ok(ctx
        .hardware
        .get(gpu)?
        .devices_per_node
        .map_or(crate::train::DEFAULT_DEVICES_PER_NODE, |n| {
            u64::from(n).max(1)
        }))
}

/// Checks `--out` before the command runs (its folder exists, it is not a folder, no
/// other output of the run names it).
pub(super) fn check(e: &EmitArgs, others: &[(&str, &Path)]) -> Result<()> {
    if let Some(out) = &e.out {
        let mut all = others.to_vec();
        all.push(("--out", out));
        check_outputs(&all)?;
    }
    Ok(())
}

/// The launch files of `launch` for `--emit`: `Some(text)` to print instead of the
/// report, or `None` when they went to `--out` (the report prints as usual).
pub(super) fn deliver(
    e: &EmitArgs,
    format: Format,
    launch: Launch<'_>,
    json: bool,
) -> Result<Option<String>> {
    let files = emit(format, launch)?;
    match &e.out {
        None if json => to_json(&serde_json::json!({
            "emit": format.name(),
            "version": format.version(),
            "files": files
                .iter()
                .map(|f| serde_json::json!({ "name": f.name, "contents": f.contents }))
                .collect::<Vec<_>>(),
        }))
        .map(Some),
        None => Ok(Some(concatenated(&files))),
        Some(out) => write(out, &files).map(|()| None),
    }
}

/// One file as it is; several each after a `# ==> NAME <==` line.
fn concatenated(files: &[EmittedFile]) -> String {
    if let [one] = files {
        return one.contents.clone();
    }
    files
        .iter()
        .map(|f| format!("# ==> {} <==\n{}", f.name, f.contents))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The script at `out`, the companion files beside it under their own names; every
/// path is checked before any is written.
fn write(out: &Path, files: &[EmittedFile]) -> Result<()> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let paths: Vec<PathBuf> = files
        .iter()
        .enumerate()
        .map(|(k, f)| {
            if k == 0 {
                out.to_path_buf()
            } else {
                dir.join(&f.name)
            }
        })
        .collect();
    let flags: Vec<String> = files
        .iter()
        .enumerate()
        .map(|(k, f)| {
            if k == 0 {
                "--out".to_string()
            } else {
                format!("--out's companion {}", f.name)
            }
        })
        .collect();
    let outputs: Vec<(&str, &Path)> = flags
        .iter()
        .map(String::as_str)
        .zip(paths.iter().map(PathBuf::as_path))
        .collect();
    check_outputs(&outputs).map_err(|e| match e {
        Error::Conflict { message, .. } => Error::invalid(
            "out",
            format!("{message} (the companion files are written beside it)"),
        ),
        other => other,
    })?;
    for (f, path) in files.iter().zip(&paths) {
        files::write_atomic(path, f.contents.as_bytes()).map_err(|e| named("--out", e))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
