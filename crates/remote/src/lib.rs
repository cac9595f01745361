//! rollway datasets on object storage (`s3://bucket/prefix`, and S3-compatible
//! stores through `AWS_ENDPOINT_URL`).
//!
//! **Design: a verified local replica.** Every local reader and writer of
//! `rollway-store` keeps working unchanged on a local directory; this crate moves
//! committed shards between such a directory and the store, keeping FORMAT.md's
//! guarantees on a store that has no rename, flock or fsync ("On an object store"
//! there holds the protocol and what each fault costs):
//!
//! - readers ([`Replica`]) pull the dataset's committed shards into a replica in the
//!   cache ([`cache`]) and read it locally: a second read fetches only new shards;
//! - a writer ([`Writing`]) records into a fresh local work directory and pushes each
//!   shard to the store as soon as it is committed locally: stage the data files
//!   under `.tmp/publish/`, create the index object (the commit), publish the data.
//!
//! The cost: a reader downloads whole shards before its first sample (at the
//! store's bandwidth; shards are tens of MB) and keeps them on local disk, and a
//! writer's shards reach the store a poll (50 ms) plus an upload after their local
//! commit, so a writer killed in that window loses those shards on the store; its
//! run resumes them (`--resume` reads what is committed from the store).
#![forbid(unsafe_code)]

mod bound;
pub mod cache;
mod error;
mod failpoint;
mod health;
mod members;
mod push;
mod replica;
mod store;
mod sync;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use rollway_store::ShardIndex;

pub use bound::{max_bytes, CACHE_MAX};
pub use error::{Error, Result};
pub use health::{StoreHealth, STALLED};
pub use push::{Pusher, Settled};
pub use replica::{index_paths, pull, Moved};
pub use store::{schemes, Remote, REMOTE_SCHEMES};
pub use sync::{repair, Writing, LEASE_TTL, RENEW};

/// Whether the dataset argument `p` names an object store (`s3://…`).
pub fn is_remote(p: &Path) -> bool {
    p.to_str().is_some_and(Remote::is_remote)
}

/// Which committed shards a reader needs, given every committed shard's index (a
/// loader's selection, `rollway_loader::needed_shards`): shard numbers.
pub type Choose = Box<dyn Fn(&[&ShardIndex]) -> BTreeSet<u32> + Send + Sync>;

/// A dataset on the store and its local replica, which readers read.
pub struct Replica {
    remote: Remote,
    dir: PathBuf,
    pulled: std::time::Instant,
    /// A reader that needs some shards only: its choice, and every index object seen.
    choose: Option<Choose>,
    seen: BTreeMap<String, (Bytes, ShardIndex)>,
    /// What this reader holds against the cache's bound (`ROLLWAY_CACHE_MAX`, [`bound`]):
    /// the shards it chose this round and the last.
    pin: Option<bound::Pin>,
    chosen_last: BTreeSet<u32>,
}

/// Tells one reader's pin from another's in the same process.
static READERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A reader pulls at most this often ([`Replica::refresh`]): a following loader asks
/// before every round, and each pull lists the store's index.
pub const PULL_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl Replica {
    /// The store at `url` and its replica in the cache, pulled up to date; what
    /// this first pull moved.
    pub fn open(url: &str) -> Result<(Replica, Moved)> {
        Self::open_chosen(url, None)
    }

    /// [`Replica::open`] for a reader that needs only the shards `choose` picks (a
    /// loader of the newest episodes, or of some labels, of a long replay): every
    /// index object is fetched (they are small), data files only for those shards.
    pub fn open_chosen(url: &str, choose: Option<Choose>) -> Result<(Replica, Moved)> {
        bound::max_bytes()?;
        let remote = Remote::open(url)?;
        let dir = cache::replica_dir(&remote);
        if choose.is_none() {
            // A reader of every shard holds them all while its process lives.
            bound::pin_all(&cache::root(), &dir)?;
        }
        let (pin, chosen_last) = (None, BTreeSet::new());
        let mut r = Replica { remote, dir, pulled: std::time::Instant::now(), choose, seen: BTreeMap::new(), pin, chosen_last };
        let moved = r.refresh()?;
        Ok((r, moved))
    }

    /// The replica's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Pulls what was committed since (and, for a chosen replica, is needed now).
    pub fn refresh(&mut self) -> Result<Moved> {
        self.pulled = std::time::Instant::now();
        let moved = self.pull_now()?;
        bound::enforce(&cache::root())?;
        Ok(moved)
    }

    fn pull_now(&mut self) -> Result<Moved> {
        let Some(choose) = &self.choose else { return pull(&self.remote, &self.dir) };
        replica::pull_metadata(&self.remote, &self.dir)?;
        let listed = self.remote.list("index")?;
        let new: Vec<String> =
            listed.into_iter().map(|l| l.name).filter(|n| replica::is_index_name(n) && !self.seen.contains_key(n)).collect();
        for (name, bytes) in replica::get_indexes(&self.remote, new)? {
            let url = self.remote.url_of(&format!("index/{name}"));
            let index = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt { url, message: format!("not a shard index: {e}") })?;
            self.seen.insert(name, (bytes, index));
        }
        let wanted = choose(&self.seen.values().map(|(_, i)| i).collect::<Vec<_>>());
        // Pinned before they are fetched, with last round's (which may still be being read).
        let held = bound::Held::Shards(wanted.union(&self.chosen_last).copied().collect());
        match &self.pin {
            Some(pin) => pin.set(&cache::root(), &held)?,
            None => {
                let key = format!("r{}", READERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
                self.pin = Some(bound::pin(&cache::root(), &self.dir, &key, &held)?);
            }
        }
        self.chosen_last = wanted.clone();
        let missing: Vec<(String, Bytes)> = self
            .seen
            .iter()
            .filter(|(name, (_, i))| wanted.contains(&i.shard) && !self.dir.join("index").join(name).exists())
            .map(|(name, (bytes, _))| (name.clone(), bytes.clone()))
            .collect();
        replica::bring(&self.remote, &self.dir, &missing)
    }

    /// [`Replica::refresh`], unless the last pull is under [`PULL_EVERY`] old: what a
    /// following loader calls before every round.
    pub fn refresh_soon(&mut self) -> Result<Moved> {
        if self.pulled.elapsed() < PULL_EVERY {
            return Ok(Moved::default());
        }
        self.refresh()
    }

    /// A hook for `rollway_loader::Loader::before_read`: the replica kept up to date.
    pub fn into_hook(mut self) -> Box<dyn FnMut() -> std::result::Result<(), String> + Send + Sync> {
        Box::new(move || self.refresh_soon().map(drop).map_err(|e| e.to_string()))
    }
}

impl Remote {
    /// Whether the store holds a dataset here (its `rollway.json`).
    pub fn holds_dataset(&self) -> Result<bool> {
        Ok(self.list("")?.iter().any(|l| l.name == "rollway.json"))
    }
}
