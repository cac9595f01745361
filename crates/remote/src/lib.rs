//! rollway datasets on object storage (`s3://bucket/prefix`, and S3-compatible
//! stores through `AWS_ENDPOINT_URL`).
//!
//! **Design: a verified local replica.** Every local reader and writer of
//! `rollway-store` keeps working unchanged on a local directory; this crate moves
//! committed shards between such a directory and the store, keeping FORMAT.md's
//! guarantees on a store that has no rename, flock or fsync ("On an object store"
//! there holds the protocol and what each fault costs):
//!
//! - readers ([`readable`]) pull the dataset's committed shards into a replica in the
//!   cache ([`cache`]) and read it locally: a second read fetches only new shards;
//! - a writer ([`Writing`]) records into a fresh local work directory and pushes each
//!   shard to the store as soon as it is committed locally: stage the data files
//!   under `.tmp/publish/`, create the index object (the commit), publish the data.
//!
//! The cost: a reader downloads whole shards before its first sample (at the
//! store's bandwidth; shards are tens of MB) and keeps them on local disk, and a
//! writer's shards reach the store a poll (200 ms) plus an upload after their local
//! commit, so a writer killed in that window loses those shards on the store; its
//! run resumes them (`--resume` reads what is committed from the store).
#![forbid(unsafe_code)]

pub mod cache;
mod error;
mod replica;
mod store;
mod sync;

use std::path::{Path, PathBuf};

pub use error::{Error, Result};
pub use replica::{pull, Moved, Pusher};
pub use store::{schemes, Remote, REMOTE_SCHEMES};
pub use sync::{Writing, LEASE_TTL, RENEW};

/// Whether the dataset argument `p` names an object store (`s3://…`).
pub fn is_remote(p: &Path) -> bool {
    p.to_str().is_some_and(Remote::is_remote)
}

/// The local directory to read dataset `p` from: `p` itself (or a `file://` URL's
/// path), or for an `s3://` URL its replica, brought up to date first.
pub fn readable(p: &Path) -> Result<PathBuf> {
    let Some(url) = p.to_str().filter(|t| Remote::is_remote(t)) else {
        return rollway_store::local_dir(p).map_err(|message| Error::Url { url: p.display().to_string(), message });
    };
    let remote = Remote::open(url)?;
    let dir = cache::replica_dir(&remote);
    pull(&remote, &dir)?;
    Ok(dir)
}

impl Remote {
    /// Whether the store holds a dataset here (its `rollway.json`).
    pub fn holds_dataset(&self) -> Result<bool> {
        Ok(self.list("")?.iter().any(|l| l.name == "rollway.json"))
    }
}
