//! Where a dataset lives, decided once for every front: a [`Target`] is a dataset
//! opened for writing, a [`Source`] one opened for reading, each at a local
//! directory or at an object store's URL (`s3://…`).
//!
//! **Design: the store is reached through a local directory.** Every writer and
//! reader of `rollway-store` works on a local directory, so a dataset on a store is
//! written into a work directory whose shards are pushed as they commit
//! ([`rollway_remote::Writing`]), and read from a replica pulled from the store
//! ([`Replica`]). What differs between the two places is decided here and nowhere
//! else: the path a writer writes and a reader reads ([`Target::dir`],
//! [`Source::dir`]), the refusals made before any work (a dataset where a new one
//! goes, a missing one to resume, a second writer, a scheme this build does not
//! reach), and the close that pushes what is left and releases the lease.
//!
//! The cost: opening a target on a store reaches the store (its lease taken, the
//! dataset pulled for a resume or an append) before any env starts, so a missing
//! bucket or refused credentials cost no work; a local target costs a `stat`.

use std::path::{Path, PathBuf};

pub use rollway_remote::{Choose, Replica};
use rollway_remote::{Remote, StoreHealth, Writing};

use crate::error::{Error, Result};

/// Whether `path` names a dataset on an object store rather than a local directory.
pub fn on_store(path: &Path) -> bool {
    rollway_remote::is_remote(path)
}

/// The URL of the dataset `at` on a store, to reach and to print: one that carries
/// credentials (`s3://KEY:SECRET@bucket`, `%40` and all) is an input error here, which
/// does not repeat them, before any message that names the URL is made.
pub fn store_url(at: &Path) -> Result<String> {
    let url = at.to_string_lossy();
    if rollway_store::has_credentials(&url) {
        let shown = rollway_store::redacted(&url);
        return Err(Error::input(format!("{shown}: {}", rollway_store::CREDENTIALS_REFUSED)));
    }
    Ok(url.into_owned())
}

/// The local directory a dataset path names (`rollway_store::local_dir`): a URL of
/// a scheme this build does not support is an input error saying which it does.
pub fn local(dir: &Path) -> Result<PathBuf> {
    rollway_store::local_dir(dir).map_err(Error::input)
}

/// What a writer wants of the dataset where it writes.
pub enum Want {
    /// A new dataset; `refusal` is the message (in the front's own words) when one is there already.
    New {
        /// What to tell the user instead.
        refusal: String,
    },
    /// A new run after the dataset's runs, or a new dataset.
    Append,
    /// The dataset's last run, continued: it must be there (checked here on a
    /// store; a local directory's writer says so itself).
    Resume,
    /// One of many writers of a run already there (a distributed run's member).
    Join {
        /// The writer's id in the run.
        id: String,
    },
}

/// A dataset opened for writing: the local directory its writer writes and, on a
/// store, the work directory's pusher and the dataset's lease.
pub struct Target {
    dir: PathBuf,
    push: Option<Writing>,
}

impl Target {
    /// Opens the dataset at `at` (a local path or a store's URL) as `want` asks;
    /// refusals are input errors, made before anything is written.
    pub fn open(at: &Path, want: Want) -> Result<Target> {
        if !on_store(at) {
            let dir = local(at)?;
            if let Want::New { refusal } = want {
                if rollway_store::format::holds_dataset(&dir) {
                    return Err(Error::input(refusal));
                }
            }
            return Ok(Target { dir, push: None });
        }
        let url = store_url(at)?;
        let remote = Remote::open(&url).map_err(|e| Error::remote("reaching the store", e))?;
        let push = match want {
            Want::Join { id } => Writing::join(remote, &id).map_err(|e| Error::remote("joining the run on the store", e))?,
            want => {
                let holds = remote.holds_dataset().map_err(|e| Error::remote("reaching the store", e))?;
                match want {
                    Want::Resume if !holds => bad!("{url}: there is no dataset there to resume"),
                    Want::New { refusal } if holds => return Err(Error::input(refusal)),
                    _ => {}
                }
                Writing::open(remote, holds).map_err(|e| Error::remote("opening the dataset to write", e))?
            }
        };
        Ok(Target { dir: push.work_dir().to_path_buf(), push: Some(push) })
    }

    /// Opens `at` for a new dataset written by an importer, which refuses a dataset there.
    pub fn create(at: &Path) -> Result<Target> {
        let refusal = format!("{} already holds a dataset; write a new one to a new directory or prefix", at.display());
        Target::open(at, Want::New { refusal })
    }

    /// The local directory to write: the dataset's own, or on a store the work directory pushed from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the dataset is on an object store.
    pub fn on_store(&self) -> bool {
        self.push.is_some()
    }

    /// On a store: its health, whose trouble a run's progress tells.
    pub fn health(&self) -> Option<StoreHealth> {
        self.push.as_ref().map(Writing::health)
    }

    /// On a store: what is wrong with it now, if anything (pushes failing, the lease lost).
    pub fn trouble(&self) -> Option<String> {
        self.push.as_ref().and_then(|p| p.health().trouble())
    }

    /// Pushes what was committed locally so far (nothing to do for a local dataset).
    pub fn flush(&self) -> Result<()> {
        match &self.push {
            Some(p) => p.flush().map(drop).map_err(|e| Error::remote("pushing to the store", e)),
            None => Ok(()),
        }
    }

    /// On a store: brings the index objects other writers committed into the work
    /// directory; how many were new (a local directory holds them already: 0).
    pub fn pull_index(&self) -> Result<u64> {
        match &self.push {
            Some(p) => p.pull_index().map_err(|e| Error::remote("reading the run's index from the store", e)),
            None => Ok(0),
        }
    }

    /// Once the writer has closed: pushes what is left, settles what killed members
    /// left and releases the store (nothing to do for a local dataset).
    pub fn finish(self) -> Result<()> {
        match self.push {
            Some(p) => p.finish().map(drop).map_err(|e| Error::remote("pushing the dataset to the store", e)),
            None => Ok(()),
        }
    }
}

/// A dataset opened for reading: its local directory, or on a store the replica
/// pulled up to date (kept, to pull again).
pub struct Source {
    dir: PathBuf,
    replica: Option<Replica>,
    pulled: Option<rollway_remote::Moved>,
}

impl Source {
    /// Opens the dataset at `at` for reading, pulling it first when it is on a store:
    /// only the shards `choose` picks (a loader's selection), or with `None` all of them.
    pub fn chosen(at: &Path, choose: Option<Choose>) -> Result<Source> {
        if !on_store(at) {
            return Ok(Source { dir: local(at)?, replica: None, pulled: None });
        }
        let (replica, moved) = Replica::open_chosen(&store_url(at)?, choose).map_err(|e| Error::remote("pulling the dataset", e))?;
        Ok(Source { dir: replica.dir().to_path_buf(), replica: Some(replica), pulled: Some(moved) })
    }

    /// The local directory to read.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// On a store, what the pull brought: a line for the user.
    pub fn pulled(&self) -> Option<String> {
        let m = self.pulled.as_ref()?;
        Some(format!("pulled {} new shard(s), {:.1} MB, into {}", m.shards, m.bytes as f64 / 1e6, self.dir.display()))
    }

    /// The directory and, on a store, the replica (to pull again).
    pub fn into_parts(self) -> (PathBuf, Option<Replica>) {
        (self.dir, self.replica)
    }
}

/// `verify --repair` of the dataset at `at`. Locally, what killed writers left is
/// published, cleaned up or quarantined (never deleted); on a store, under its
/// lease, staged files of committed shards are published and the rest deleted,
/// members' claims removed, as the next writer would, reported as a local repair.
pub fn repair(at: &Path) -> Result<rollway_store::RepairReport> {
    if !on_store(at) {
        let dir = local(at)?;
        return rollway_store::repair(&dir).map_err(|source| match source {
            e @ (rollway_store::Error::NotADataset { .. } | rollway_store::Error::Locked { .. }) => Error::input_from(e),
            source => Error::Store { op: "repairing", source },
        });
    }
    let remote = Remote::open(&store_url(at)?).map_err(|e| Error::remote("reaching the store", e))?;
    let settled = rollway_remote::repair(&remote).map_err(|e| Error::remote("repairing the dataset on the store", e))?;
    Ok(rollway_store::RepairReport { published: settled.published as usize, ..Default::default() })
}

/// Where a dataset's HTML report goes: `out`, a local file (a URL is refused, by name
/// and without its credentials); when not told, beside a local dataset, and for one on a
/// store (whose replica is in the cache) in the working directory, named after it.
pub fn report_path(at: &Path, out: Option<&Path>) -> Result<Option<PathBuf>> {
    if let Some(out) = out {
        if on_store(out) {
            let shown = store_url(out)?;
            return Err(Error::input(format!("{shown}: a report is written to a local file; name a path (or file://)")));
        }
        return local(out).map(Some);
    }
    let beside_cache = || rollway_report::default_path(Path::new(at.file_name().unwrap_or("dataset".as_ref())));
    Ok(on_store(at).then(beside_cache))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_target_refuses_a_dataset_only_where_a_new_one_goes() {
        let d = tempfile::tempdir().unwrap();
        let new = || Want::New { refusal: "there already".into() };
        let t = Target::open(d.path(), new()).unwrap();
        assert!(!t.on_store() && t.dir() == d.path() && t.health().is_none() && t.pull_index().unwrap() == 0);
        t.finish().unwrap();
        std::fs::write(d.path().join(rollway_store::format::METADATA), "{}").unwrap();
        let e = Target::open(d.path(), new()).err().unwrap();
        assert!(e.is_input() && crate::chain_text(&e).contains("there already"), "{}", crate::chain_text(&e));
        assert!(Target::open(d.path(), Want::Append).is_ok() && Target::open(d.path(), Want::Resume).is_ok());
        let e = Target::open(Path::new("ftp://host/x"), Want::Append).err().unwrap();
        assert!(e.is_input(), "{}", crate::chain_text(&e));
        assert!(Source::chosen(Path::new("ftp://host/x"), None).err().unwrap().is_input());
    }

    #[test]
    fn a_report_of_a_dataset_on_a_store_goes_to_the_working_directory() {
        let path = |at: &str, out: Option<&str>| report_path(Path::new(at), out.map(Path::new)).map_err(|e| e.to_string());
        assert_eq!(path("/d/x", None), Ok(None));
        assert_eq!(path("s3://b/runs/x", None), Ok(Some(rollway_report::default_path(Path::new("x")))));
        assert_eq!(path("s3://b/x", Some("r.html")), Ok(Some(PathBuf::from("r.html"))));
        assert_eq!(path("/d/x", Some("file:///tmp/r.html")), Ok(Some(PathBuf::from("/tmp/r.html"))));
    }

    #[test]
    fn issue72_a_report_is_a_local_file_and_its_url_is_refused_without_credentials() {
        let refusal = |out: &str| report_path(Path::new("/d/x"), Some(Path::new(out))).err().map(|e| crate::chain_text(&e));
        let e = refusal("s3://b/r.html").unwrap();
        assert!(e.contains("s3://b/r.html: a report is written to a local file"), "{e}");
        for out in ["s3://KEY:hunter2@b/r.html", "s3://KEY:hunter2%40b/r.html"] {
            let e = refusal(out).unwrap();
            assert!(!e.contains("hunter2") && e.contains("AWS_SECRET_ACCESS_KEY"), "{e}");
        }
    }
}
