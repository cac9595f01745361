//! Where replicas live on this machine: `$ROLLWAY_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/rollway`, else `~/.cache/rollway`. Read replicas are kept and
//! reused (a second read fetches only new shards), within `$ROLLWAY_CACHE_MAX` when
//! it is set (`crate::bound`); a writer's work directory is its own, and removed
//! once everything in it is on the store.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::LocalContext;
use crate::store::Remote;
use crate::Result;

/// The cache root.
pub fn root() -> PathBuf {
    if let Some(d) = std::env::var_os("ROLLWAY_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("rollway");
    }
    std::env::var_os("HOME").map_or_else(|| std::env::temp_dir().join("rollway-cache"), |h| PathBuf::from(h).join(".cache/rollway"))
}

/// The read replica of `remote`.
pub fn replica_dir(remote: &Remote) -> PathBuf {
    let (bucket, prefix) = remote.bucket_and_prefix();
    let mut d = root().join("replicas/s3").join(bucket);
    d.push(if prefix.is_empty() { "_" } else { prefix });
    d
}

/// A fresh work directory for a writer of `remote`.
pub(crate) fn work_dir(remote: &Remote) -> Result<PathBuf> {
    let (bucket, prefix) = remote.bucket_and_prefix();
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let work = root().join("work");
    remove_dead(&work);
    let d = work.join(format!("{bucket}-{}-{}-{}-{nanos}", prefix.replace('/', "_"), crate::host::hostname(), std::process::id()));
    std::fs::create_dir_all(&d).local("creating", &d)?;
    Ok(d)
}

/// Removes the work directories of this host's writers that died (their shards
/// are on the store, or, committed only here, are run again by a resume).
fn remove_dead(work: &Path) {
    let Ok(rd) = std::fs::read_dir(work) else { return };
    let host = format!("-{}-", crate::host::hostname());
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((_, tail)) = name.rsplit_once(&host) else { continue };
        let pid = tail.split('-').next().and_then(|p| p.parse::<u64>().ok());
        if pid.is_some_and(crate::host::process_gone) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
