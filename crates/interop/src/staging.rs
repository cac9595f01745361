//! Build-then-rename: outputs are assembled in a hidden sibling directory and
//! renamed (or, over a previous export, atomically swapped) into place, so an
//! interrupted export or import never leaves a half dataset, or none, where a
//! reader would find one. What killed runs leave beside an output is removed by
//! the next run to it.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::fs::File;
use std::path::{Path, PathBuf};

// What the exports and imports report they wrote.
pub(crate) use rollway_store::format::dir_bytes;

use crate::error::IoContext;
use crate::{Error, Result};

/// A directory being filled; removed on drop unless committed.
pub(crate) struct Staging {
    path: PathBuf,
    done: bool,
}

impl Staging {
    /// Creates `parent/.<name>.partial-<pid>`, first removing what killed runs left
    /// for `name` there; a leftover of our own name can only be debris of a dead
    /// process that had our pid, so it is removed too.
    pub(crate) fn new(parent: &Path, name: &str) -> Result<Staging> {
        clean_debris(parent, name);
        let path = parent.join(format!(".{name}.partial-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path).io("removing stale", &path)?;
        }
        std::fs::create_dir_all(&path).io("creating", &path)?;
        Ok(Staging { path, done: false })
    }

    /// A staging directory for building `out` in, beside it (its parent created if
    /// missing), and `out` made absolute: where to `commit` it. `hint` says what to do
    /// when `out` names no directory (a root, `..`).
    pub(crate) fn beside(out: &Path, hint: &str) -> Result<(Staging, PathBuf)> {
        let out_abs = std::path::absolute(out).io("resolving", out)?;
        let (Some(parent), Some(name)) = (out_abs.parent(), out_abs.file_name()) else {
            return Err(Error::OutputExists { path: out.to_path_buf(), hint: hint.into() });
        };
        std::fs::create_dir_all(parent).io("creating", parent)?;
        let staging = Staging::new(parent, &name.to_string_lossy())?;
        Ok((staging, out_abs))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the directory to `dest` (which must not exist, or be an empty
    /// directory) and makes the rename durable.
    pub(crate) fn commit(self, dest: &Path) -> Result<()> {
        sync_tree(&self.path)?;
        self.rename_into(dest)
    }

    /// `commit` for a tree already synced.
    fn rename_into(mut self, dest: &Path) -> Result<()> {
        std::fs::rename(&self.path, dest).io("renaming into", dest)?;
        self.done = true;
        sync_dir(dest.parent().unwrap_or(Path::new(".")))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Refuses an `out` that exists and is not an empty directory: imports never replace
/// a dataset.
pub(crate) fn require_new(out: &Path) -> Result<()> {
    if out.exists() && !(out.is_dir() && std::fs::read_dir(out).io("listing", out)?.next().is_none()) {
        return Err(Error::OutputExists { path: out.to_path_buf(), hint: "import into a new directory".into() });
    }
    Ok(())
}

/// fsyncs a directory so renames and creations inside it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).io("syncing directory", dir)
}

/// fsyncs every file and directory under `dir` (HDF5 and the store close their
/// files without a guaranteed fsync; the rename must not outrun the data).
fn sync_tree(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir).io("listing", dir)? {
        let p = e.io("listing", dir)?.path();
        if p.is_dir() {
            sync_tree(&p)?;
        } else {
            File::open(&p).and_then(|f| f.sync_all()).io("syncing", &p)?;
        }
    }
    sync_dir(dir)
}

/// Moves `staging` to `dest`, replacing a directory there (an overwrite). The
/// old one stays in place until the new one is complete and durable; then the two
/// are swapped in one atomic step, so a crash at any instant leaves one whole
/// export at `dest`, and the old one is removed.
pub(crate) fn replace_dir(staging: Staging, dest: &Path) -> Result<()> {
    if !dest.exists() {
        return staging.commit(dest);
    }
    sync_tree(&staging.path)?;
    match exchange(&staging.path, dest) {
        Ok(()) => {
            sync_dir(dest.parent().unwrap_or(Path::new(".")))?;
            // `staging` now names the old export.
            let mut old = staging;
            old.done = true;
            std::fs::remove_dir_all(&old.path).io("removing the replaced", &old.path)
        }
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => rename_aside(staging, dest),
        Err(e) => Err(e).io("swapping into place", dest),
    }
}

/// Swaps two directories atomically (`renameat2(RENAME_EXCHANGE)`); `Unsupported`
/// where the OS or filesystem has no such call.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput));
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are NUL-terminated strings that outlive the call.
    if unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) } == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS) => Err(std::io::Error::new(std::io::ErrorKind::Unsupported, e)),
        _ => Err(e),
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// The replacement without an atomic swap (`staging` already synced): the old
/// directory is moved aside, restored if the rename fails, then removed. A crash
/// between the two renames leaves `dest` missing and the old copy beside it.
fn rename_aside(staging: Staging, dest: &Path) -> Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    let name = dest.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if old.exists() {
        std::fs::remove_dir_all(&old).io("removing stale", &old)?;
    }
    std::fs::rename(dest, &old).io("moving aside", dest)?;
    if let Err(e) = staging.rename_into(dest) {
        let _ = std::fs::rename(&old, dest);
        return Err(e);
    }
    std::fs::remove_dir_all(&old).io("removing the replaced", &old)?;
    sync_dir(parent)
}

/// Removes the directories named `.<name>.partial-<pid>` or `.<name>.old-<pid>`
/// in `parent` whose process is gone: what killed exports and imports to `name`
/// left. Nothing else is touched: not other names, not symlinks, not the work of
/// a live process (a concurrent run to the same output).
fn clean_debris(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|f| debris_pid(f, name)) else { continue };
        // `file_type` does not follow symlinks, and `remove_dir_all` never descends through one.
        if e.file_type().is_ok_and(|t| t.is_dir()) && !alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The pid in a debris name of `name`, if `file` is exactly one.
fn debris_pid(file: &str, name: &str) -> Option<u32> {
    let rest = file.strip_prefix('.')?.strip_prefix(name)?;
    let digits = rest.strip_prefix(".partial-").or_else(|| rest.strip_prefix(".old-"))?;
    if digits.is_empty() || digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether a process `pid` exists (one we may not signal still exists).
#[cfg(unix)]
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 sends nothing; it only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(not(unix))]
fn alive(_: u32) -> bool {
    true
}

/// How an export may write `dest`: it is absent or an empty directory, or — with
/// `force` — a directory that `is_export` recognises as a previous export of
/// `format` (it has `markers`); anything else is refused.
pub(crate) fn check_replaceable(
    dest: &Path,
    force: bool,
    format: &'static str,
    markers: &'static str,
    is_export: fn(&Path) -> bool,
) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dest) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        other => other.io("reading", dest)?,
    };
    if !meta.is_dir() {
        let what = if meta.file_type().is_symlink() { "it is a symlink; give the directory itself" } else { "it is not a directory" };
        return Err(Error::OutputExists { path: dest.to_path_buf(), hint: what.into() });
    }
    if std::fs::read_dir(dest).io("listing", dest)?.next().is_none() {
        return Ok(());
    }
    if !force {
        return Err(Error::OutputExists { path: dest.to_path_buf(), hint: "pass --force to replace it".into() });
    }
    if !is_export(dest) {
        return Err(Error::NotAnExport { path: dest.to_path_buf(), format, markers });
    }
    Ok(())
}

/// Refuses an output that is, is inside, or contains the source: replacing it, or
/// writing into it, would destroy the data being read.
pub(crate) fn refuse_overlap(src: &Path, out: &Path) -> Result<()> {
    let (s, o) = (resolved(src)?, resolved(out)?);
    if o.starts_with(&s) || s.starts_with(&o) {
        return Err(Error::OutputOverlapsInput { out: out.to_path_buf(), input: src.to_path_buf() });
    }
    Ok(())
}

/// `p` made absolute with every symlink resolved; the components below its
/// deepest existing ancestor are taken as written (they cannot be links yet).
fn resolved(p: &Path) -> Result<PathBuf> {
    use std::path::Component;
    let abs = std::path::absolute(p).io("resolving", p)?;
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            // `out` is resolved, so its parent is the real one.
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => {
                out.push(other);
                if let Ok(real) = out.canonicalize() {
                    out = real;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debris_names_are_matched_exactly() {
        assert_eq!(debris_pid(".out.partial-42", "out"), Some(42));
        assert_eq!(debris_pid(".out.old-7", "out"), Some(7));
        for other in [
            ".out.partial-",
            ".out.partial-042",
            ".out.partial-4x",
            ".out.old-+4",
            ".outer.old-4",
            "out.old-4",
            ".out.old-4.partial-5",
            ".out.partial-99999999999999999999",
        ] {
            assert_eq!(debris_pid(other, "out"), None, "{other}");
        }
        assert!(alive(std::process::id()));
    }

    /// Where the filesystem cannot swap: the same result, no copy left aside.
    #[test]
    fn the_rename_aside_fallback_replaces_too() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("out");
        std::fs::create_dir_all(dest.join("old")).unwrap();
        let staging = Staging::new(tmp.path(), "out").unwrap();
        std::fs::write(staging.path().join("new"), b"x").unwrap();
        sync_tree(staging.path()).unwrap();
        rename_aside(staging, &dest).unwrap();
        assert!(dest.join("new").is_file() && !dest.join("old").exists());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
