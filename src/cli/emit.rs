//! `--emit FORMAT [--out FILE]`: a command's configuration as launch files, printed
//! instead of the report (as a `{"emit": ..., "files": [...]}` document with --json),
//! or written atomically beside each other while the report prints as usual.

use super::EmitArgs;
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

/// The outputs of a run with `--out` among them, to check together before it runs.
pub(super) fn with_out<'a>(
    mut outputs: Vec<(&'static str, &'a Path)>,
    e: &'a EmitArgs,
) -> Vec<(&'static str, &'a Path)> {
    if let Some(out) = &e.out {
        outputs.push(("--out", out));
    }
    outputs
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
    // the script's path was checked with the run's outputs; a companion must not be a
    // folder nor the script itself
    for (f, path) in files.iter().zip(&paths).skip(1) {
        if path.is_dir() {
            return Err(Error::write(
                format!("--out's companion {}", path.display()),
                "is a directory",
            ));
        }
        if out.file_name() == path.file_name() {
            return Err(Error::invalid(
                "out",
                format!(
                    "{} is the name of the companion file {} written beside it: give the script another name",
                    out.display(),
                    f.name
                ),
            ));
        }
    }
    for (f, path) in files.iter().zip(&paths) {
        files::write_atomic(path, f.contents.as_bytes()).map_err(|e| named("--out", e))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
