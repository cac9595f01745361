//! Reading a dataset on the store: a local replica in the cache, pulled up to date
//! (whole, or the shards a loader's selection needs), held against the cache's bound.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use rollway_store::ShardIndex;

use crate::replica::{self, pull, Moved};
use crate::store::Remote;
use crate::{bound, cache, Error, Result};

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
