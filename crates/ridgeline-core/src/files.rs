//! Reading the user's input files and writing the user's output files: one home for
//! each, so every file gets the same checks and the same errors.
//!
//! - Inputs must be regular files (a FIFO would block forever, `/dev/zero` would grow
//!   without end) and no larger than a limit per kind of file.
//! - Outputs are written to a temporary file in the target's folder and renamed into
//!   place when complete: an interrupted or failed write leaves the old file as it was
//!   and no temporary file behind ([`write_atomic`], [`AtomicFile`]).

use crate::error::{Error, Result};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Largest `config.json`, hardware or engine TOML accepted: 4 MiB (the largest
/// Hugging Face config is a few tens of kB).
pub const MAX_DOCUMENT_BYTES: u64 = 4 << 20;

/// Largest measurement CSV (or any other text input) accepted: 256 MiB (about a
/// million rows).
pub const MAX_TEXT_BYTES: u64 = 256 << 20;

/// Reads a whole text file of at most [`MAX_TEXT_BYTES`].
pub fn read_text(path: &Path) -> Result<String> {
    read_limited(path, MAX_TEXT_BYTES)
}

/// Reads a document (config.json, TOML) of at most [`MAX_DOCUMENT_BYTES`].
pub fn read_document(path: &Path) -> Result<String> {
    read_limited(path, MAX_DOCUMENT_BYTES)
}

/// Reads a regular file of at most `limit` bytes as UTF-8 (a leading byte-order mark
/// is dropped); every failure is [`Error::Read`] naming the path.
pub(crate) fn read_limited(path: &Path, limit: u64) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::read(path, e))?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a pipe, socket or device)"
        };
        return Err(Error::read(path, format!("{what}; give a file")));
    }
    if meta.len() > limit {
        return Err(too_large(path, limit));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::read(path, e))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::read(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, limit));
    }
    let text =
        String::from_utf8(bytes).map_err(|e| Error::read(path, format!("not UTF-8 text ({e})")))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

fn too_large(path: &Path, limit: u64) -> Error {
    Error::read(
        path,
        format!(
            "larger than the {} MiB accepted for this kind of file",
            limit >> 20
        ),
    )
}

/// Temporary files being written, removed by [`remove_partial_files`] when the
/// process is interrupted.
static PARTIAL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes every temporary file still being written (call it from an interrupt
/// handler before exiting).
pub fn remove_partial_files() {
    let paths = std::mem::take(&mut *PARTIAL.lock().unwrap_or_else(|e| e.into_inner()));
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

thread_local! {
    /// The files committed inside [`all_or_nothing`] on this thread, renamed onto
    /// their targets only when it succeeds (`None`: not inside one).
    static STAGED: std::cell::RefCell<Option<Vec<AtomicFile>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` so that the output files it commits ([`AtomicFile::commit`],
/// [`write_atomic`]) are all renamed onto their targets after it succeeds, or none
/// is: a run that fails on its second output leaves the first one's old file in
/// place, and its temporary files are removed. (The renames themselves run one after
/// another, after every file is written and flushed.)
pub fn all_or_nothing<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    let outer = STAGED.with(|s| s.borrow_mut().replace(Vec::new()));
    let result = f();
    let staged = STAGED.with(|s| std::mem::replace(&mut *s.borrow_mut(), outer));
    let staged = staged.unwrap_or_default();
    match result {
        Ok(v) => {
            for file in staged {
                file.rename()?;
            }
            Ok(v)
        }
        // dropped uncommitted: the temporary files go, the targets stay
        Err(e) => Err(e),
    }
}

/// Removes what a killed run left beside `target`: temporary files named after it
/// (`.NAME.PID.N.tmp`) whose process is gone (on Linux, no `/proc/PID`; elsewhere,
/// older than a day).
fn remove_stale(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    let ours = std::process::id();
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().to_string();
        let Some(rest) = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        let mut parts = rest.split('.');
        let (Some(pid), Some(n), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(pid), true) = (pid.parse::<u32>(), n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        let gone = if Path::new("/proc/self").exists() {
            pid != ours && !Path::new(&format!("/proc/{pid}")).exists()
        } else {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 86_400)
        };
        if gone {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The file a write to `target` replaces: `target` itself, or for a symbolic link
/// the file it points to (written through, so the link stays a link); a link to
/// nothing is refused.
fn written_path(target: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(target) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(target).map_err(|e| {
            Error::write(
                target,
                format!("is a symbolic link to a file that cannot be reached ({e})"),
            )
        }),
        _ => Ok(target.to_path_buf()),
    }
}

/// An output file being written: a temporary file beside the target, renamed onto
/// it by [`AtomicFile::commit`]. Dropped without a commit, the temporary file is
/// removed and the target is untouched. A replaced file keeps its permissions; a
/// target that is a symbolic link is written through (the file it points to is
/// replaced, the link stays); temporary files a killed run left beside the target are
/// removed when it is next written. A target that exists and is not a regular file (a
/// device such as `/dev/null`, a named pipe) is written in place: there is no file to
/// leave half-written, and a rename would replace the device with a file.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: std::fs::File,
    committed: bool,
    /// Written in place (a device or pipe), no temporary file.
    direct: bool,
}

impl AtomicFile {
    /// Creates the temporary file for `target`; the error names the target.
    pub fn create(target: &Path) -> Result<AtomicFile> {
        let shown = target;
        let target = &written_path(target)?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .ok_or_else(|| Error::write(target, "not a file name"))?
            .to_string_lossy()
            .to_string();
        if target.is_dir() {
            return Err(Error::write(shown, "is a directory"));
        }
        if std::fs::metadata(target).is_ok_and(|m| !m.is_file()) {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .map_err(|e| Error::write(shown, e))?;
            return Ok(AtomicFile {
                target: target.to_path_buf(),
                temp: PathBuf::new(),
                file,
                committed: false,
                direct: true,
            });
        }
        remove_stale(&dir, &name);
        let pid = std::process::id();
        for n in 0..100 {
            let temp = dir.join(format!(".{name}.{pid}.{n}.tmp"));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => {
                    PARTIAL
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(temp.clone());
                    return Ok(AtomicFile {
                        target: target.to_path_buf(),
                        temp,
                        file,
                        committed: false,
                        direct: false,
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::write(target, e)),
            }
        }
        Err(Error::write(target, "no free temporary name beside it"))
    }

    /// The file to write to.
    pub fn file(&mut self) -> &mut std::fs::File {
        &mut self.file
    }

    /// Flushes to disk and renames the temporary file onto the target (inside
    /// [`all_or_nothing`], once it succeeds). A file it replaces keeps its
    /// permissions.
    pub fn commit(mut self) -> Result<()> {
        if self.direct {
            self.file
                .flush()
                .map_err(|e| Error::write(&self.target, e))?;
            self.committed = true;
            return Ok(());
        }
        self.file
            .sync_all()
            .map_err(|e| Error::write(&self.target, e))?;
        if let Ok(m) = std::fs::metadata(&self.target) {
            std::fs::set_permissions(&self.temp, m.permissions())
                .map_err(|e| Error::write(&self.target, e))?;
        }
        let staged = STAGED.with(|s| match s.borrow_mut().as_mut() {
            Some(list) => {
                list.push(self);
                None
            }
            None => Some(self),
        });
        match staged {
            Some(file) => file.rename(),
            None => Ok(()),
        }
    }

    fn rename(mut self) -> Result<()> {
        std::fs::rename(&self.temp, &self.target).map_err(|e| Error::write(&self.target, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.direct {
            return;
        }
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
        PARTIAL
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| p != &self.temp);
    }
}

/// Writes `bytes` to `path` atomically (see [`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    f.file()
        .write_all(bytes)
        .map_err(|e| Error::write(path, e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ridgeline-files-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn refuses_directories_devices_and_oversized_files() {
        let d = scratch("read");
        let e = read_text(&d).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        if Path::new("/dev/zero").exists() {
            let e = read_text(Path::new("/dev/zero")).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let big = d.join("big.json");
        std::fs::write(&big, vec![b' '; 100]).unwrap();
        let e = read_limited(&big, 99).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        assert_eq!(read_limited(&big, 100).unwrap().len(), 100);
        let bom = d.join("bom.json");
        std::fs::write(&bom, "\u{feff}{}").unwrap();
        assert_eq!(read_text(&bom).unwrap(), "{}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// `--out /dev/null` writes to the device: renaming a temporary file over it would
    /// replace the device with a regular file (which happened: every later read of
    /// /dev/null returned the last output).
    #[cfg(unix)]
    #[test]
    fn devices_are_written_in_place_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let null = Path::new("/dev/null");
        if !std::fs::metadata(null).is_ok_and(|m| m.file_type().is_char_device()) {
            return;
        }
        write_atomic(null, b"discarded").unwrap();
        let m = std::fs::metadata(null).unwrap();
        assert!(m.file_type().is_char_device(), "{m:?}");
        assert_eq!(std::fs::read(null).unwrap(), b"");
    }

    #[test]
    fn atomic_writes_keep_the_old_file_until_commit() {
        let d = scratch("write");
        let target = d.join("out.csv");
        std::fs::write(&target, "old").unwrap();
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.file().write_all(b"half a ro").unwrap();
            // dropped without commit: an error or an interrupt mid-write
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        write_atomic(&target, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "temporary files left: {left:?}");
        let e = write_atomic(&d.join("missing-dir/x.csv"), b"x").unwrap_err();
        assert!(e.to_string().starts_with("cannot write"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_run_commits_none_of_its_outputs() {
        let d = scratch("all");
        let (a, b) = (d.join("a.svg"), d.join("b.svg"));
        std::fs::write(&a, "old a").unwrap();
        let r: Result<()> = all_or_nothing(|| {
            write_atomic(&a, b"new a")?;
            // the first is written and flushed, not yet renamed
            assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
            write_atomic(&d.join("missing-dir/b.svg"), b"x")
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a");
        // a run that succeeds commits both
        all_or_nothing(|| {
            write_atomic(&a, b"new a")?;
            write_atomic(&b, b"new b")
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new b");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            2,
            "temporary files left"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_link_is_written_through() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch("mode");
        let real = d.join("real.csv");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&real, b"new").unwrap();
        let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let link = d.join("link.csv");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"through").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "through");
        // a link to nothing is refused, naming the link
        let dangling = d.join("dangling.csv");
        std::os::unix::fs::symlink(d.join("nowhere/x"), &dangling).unwrap();
        let e = write_atomic(&dangling, b"x").unwrap_err().to_string();
        assert!(
            e.contains("dangling.csv") && e.contains("symbolic link"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_killed_runs_temporary_file_is_removed_on_the_next_write() {
        let d = scratch("stale");
        let target = d.join("sweep.csv");
        // pid 0 names no process (/proc/0 does not exist); our own pid's file stays
        let stale = d.join(".sweep.csv.0.0.tmp");
        let live = d.join(format!(".sweep.csv.{}.7.tmp", std::process::id()));
        let other = d.join(".other.csv.0.0.tmp");
        for p in [&stale, &live, &other] {
            std::fs::write(p, "partial").unwrap();
        }
        write_atomic(&target, b"rows").unwrap();
        if Path::new("/proc/self").exists() {
            assert!(!stale.exists());
        }
        assert!(live.exists() && other.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
