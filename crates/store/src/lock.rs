//! The dataset's locks, the bottom of the store's stack: `.lock` taken exclusive by
//! a dataset's one writer (and by repairs and index rewrites), shared by each of
//! many writers ([`crate::shared`]), which also hold a lock file each so that the
//! others can tell a live writer from a dead one. flock(2) locks go with the
//! process, so a killed writer never leaves a dataset locked.

use std::fs::File;
use std::path::Path;

use crate::format::Paths;
use crate::{Error, Result};

/// Takes `path`'s flock (shared or exclusive) without waiting: `Ok(None)` when another
/// holder is in the way (or, unless `create`, when `path` does not exist).
pub(crate) fn try_lock(path: &Path, shared: bool, create: bool) -> Result<Option<File>> {
    let f = match std::fs::OpenOptions::new().create(create).truncate(false).write(true).open(path) {
        Ok(f) => f,
        Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Io { op: "opening", path: path.to_path_buf(), source: e }),
    };
    let r = if shared { f.try_lock_shared() } else { f.try_lock() };
    match r {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::Io { op: "locking", path: path.to_path_buf(), source: e }),
    }
}

/// Takes the writer lock of a dataset directory (which must exist).
pub(crate) fn lock(paths: &Paths) -> Result<std::fs::File> {
    try_lock(&paths.lock(), false, true)?.ok_or_else(|| Error::Locked { path: paths.root.clone() })
}
