//! Build-then-rename: outputs are assembled in a hidden sibling directory and
//! renamed into place, so an interrupted export or import never leaves a half
//! dataset where a reader would find it.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::IoContext;
use crate::{Error, Result};

/// A directory being filled; removed on drop unless committed.
pub(crate) struct Staging {
    path: PathBuf,
    done: bool,
}

impl Staging {
    /// Creates `parent/.<name>.partial-<pid>`; a leftover of that name can only be
    /// debris of a dead process that had our pid, so it is removed.
    pub(crate) fn new(parent: &Path, name: &str) -> Result<Staging> {
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
    pub(crate) fn commit(mut self, dest: &Path) -> Result<()> {
        sync_tree(&self.path)?;
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

/// Total bytes of the files under `dir`.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                _ => e.metadata().map_or(0, |m| m.len()),
            })
            .sum()
    })
}

/// Moves `staging` to `dest`, replacing a directory there (an overwrite): the old
/// one is moved aside first and restored if the rename fails.
pub(crate) fn replace_dir(staging: Staging, dest: &Path) -> Result<()> {
    if !dest.exists() {
        return staging.commit(dest);
    }
    let parent = dest.parent().unwrap_or(Path::new("."));
    let name = dest.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
    let old = parent.join(format!(".{name}.old-{}", std::process::id()));
    if old.exists() {
        std::fs::remove_dir_all(&old).io("removing stale", &old)?;
    }
    std::fs::rename(dest, &old).io("moving aside", dest)?;
    if let Err(e) = staging.commit(dest) {
        let _ = std::fs::rename(&old, dest);
        return Err(e);
    }
    std::fs::remove_dir_all(&old).io("removing the replaced", &old)?;
    sync_dir(parent)
}

/// How an export may write `dest`: it is absent or an empty directory, or — with
/// `force` — a directory that `is_export` recognises as a previous export of
/// `format` (it has `markers`); anything else is refused.
pub(crate) fn check_replaceable(dest: &Path, force: bool, format: &'static str, markers: &'static str, is_export: fn(&Path) -> bool) -> Result<()> {
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
