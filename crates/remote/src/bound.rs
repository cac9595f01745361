//! A size bound on the read replicas in the cache: `ROLLWAY_CACHE_MAX` (bytes, or
//! with a `K`/`M`/`G`/`T` suffix, powers of 1024). Unset, replicas are kept whole
//! (a second read fetches only new shards); set, a reader that pulls evicts whole
//! shards, least recently pulled first, until the replicas fit — a learner following
//! a long replay keeps its newest shards instead of filling the disk.
//!
//! **Never what a reader holds.** Each reader of a replica pins what it reads in a file
//! of its own, `.tmp/readers/<host>-<pid>-<key>.json`: a reader of the whole dataset
//! (`rollway.Dataset`, a loader that reads every shard) pins all of it for as long as
//! its process lives; a loader that reads only some shards (the newest episodes, some
//! labels) pins those it chose this round and the last. Pins are written, and shards
//! evicted, under one flock of the cache (`.evict.lock`), so a reader's pin either
//! comes before an eviction, which then spares what it names, or after it, and the
//! reader's pull fetches again what it needs. A pin of a process that is gone (same
//! host) is ignored and removed. A shard is evicted index first, so a reader that
//! lists the replica never sees a shard without its files.
//!
//! The cost: one walk of the cache per pull while it is bounded (a stat per file), and
//! shards fetched again by a reader that comes back to them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::LocalContext;
use crate::{Error, Result};

/// The variable that bounds the cache.
pub const CACHE_MAX: &str = "ROLLWAY_CACHE_MAX";

/// The bound `ROLLWAY_CACHE_MAX` sets, if it is set: an input error names it when it is
/// not a size.
pub fn max_bytes() -> Result<Option<u64>> {
    let Ok(text) = std::env::var(CACHE_MAX) else { return Ok(None) };
    parse_size(&text).map(Some).ok_or_else(|| Error::Setting {
        name: CACHE_MAX,
        message: format!("{text:?} is not a size: bytes, or a number with K, M, G or T (powers of 1024), e.g. 20G"),
    })
}

fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let scale: u64 = match unit.trim().to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return None,
    };
    let n: f64 = num.trim().parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    Some((n * scale as f64) as u64)
}

/// What a reader holds of a replica: every shard, or these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    All,
    Shards(BTreeSet<u32>),
}

/// A reader's pin file; removed when dropped (a whole-dataset pin stays while its
/// process lives: see [`pin_all`]).
#[derive(Debug)]
pub(crate) struct Pin {
    path: PathBuf,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn lock(root: &Path, shared: bool) -> Result<File> {
    std::fs::create_dir_all(root).local("creating", root)?;
    let path = root.join(".evict.lock");
    let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).local("opening", &path)?;
    if shared { f.lock_shared() } else { f.lock() }.local("locking", &path)?;
    Ok(f)
}

fn readers(replica: &Path) -> PathBuf {
    replica.join(".tmp/readers")
}

/// Writes the pin `key` of this process on `replica`, under the cache's lock.
pub(crate) fn pin(root: &Path, replica: &Path, key: &str, held: &Held) -> Result<Pin> {
    let dir = readers(replica);
    std::fs::create_dir_all(&dir).local("creating", &dir)?;
    let pin = Pin { path: dir.join(format!("{}-{}-{key}.json", crate::host::hostname(), std::process::id())) };
    pin.set(root, held)?;
    Ok(pin)
}

impl Pin {
    /// Rewrites what the pin holds (atomically, under the cache's lock).
    pub(crate) fn set(&self, root: &Path, held: &Held) -> Result<()> {
        let _lock = lock(root, true)?;
        let body = match held {
            Held::All => serde_json::json!({"all": true}),
            Held::Shards(s) => serde_json::json!({"shards": s}),
        };
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, body.to_string()).local("writing", &tmp)?;
        std::fs::rename(&tmp, &self.path).local("renaming into place", &self.path)
    }
}

/// Evicts as `ROLLWAY_CACHE_MAX` asks, if it is set.
pub(crate) fn enforce(root: &Path) -> Result<()> {
    match max_bytes()? {
        Some(max) => evict(root, max).map(drop),
        None => Ok(()),
    }
}

/// Pins all of `replica` for the rest of this process (a whole-dataset reader: what it
/// opened stays readable while it lives).
pub(crate) fn pin_all(root: &Path, replica: &Path) -> Result<()> {
    std::mem::forget(pin(root, replica, "all", &Held::All)?);
    Ok(())
}

/// What the live readers of `replica` hold; pins of this host's dead processes are removed.
fn held(replica: &Path) -> Held {
    let mut shards = BTreeSet::new();
    let host = format!("{}-", crate::host::hostname());
    for e in std::fs::read_dir(readers(replica)).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else { continue };
        let pid = stem.strip_prefix(&host).and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u64>().ok());
        if pid.is_some_and(crate::host::process_gone) {
            let _ = std::fs::remove_file(e.path());
            continue;
        }
        // Another host's pin, or one not read whole: kept, and taken at its word (or as all).
        let v: serde_json::Value = std::fs::read(e.path()).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        match v.get("shards").and_then(|s| s.as_array()) {
            Some(list) => shards.extend(list.iter().filter_map(|n| n.as_u64()).map(|n| n as u32)),
            None => return Held::All,
        }
    }
    Held::Shards(shards)
}

/// A shard of a replica, as eviction sees it.
struct Shard {
    replica: PathBuf,
    number: u32,
    index: PathBuf,
    files: Vec<PathBuf>,
    bytes: u64,
    pulled: std::time::SystemTime,
}

/// Every replica under `root/replicas` (a directory holding `rollway.json`).
fn replicas(dir: &Path, out: &mut Vec<PathBuf>) {
    if rollway_store::format::holds_dataset(dir) {
        out.push(dir.to_path_buf());
        return;
    }
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            replicas(&e.path(), out);
        }
    }
}

fn shards_of(replica: &Path) -> Vec<Shard> {
    let mut out = vec![];
    for e in std::fs::read_dir(replica.join("index")).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !crate::replica::is_index_name(&name) {
            continue;
        }
        let number = name[6..12].parse().unwrap_or(u32::MAX);
        let (Ok(meta), Ok(bytes)) = (e.metadata(), std::fs::read(e.path())) else { continue };
        let files: Vec<PathBuf> = crate::replica::index_paths(&bytes).unwrap_or_default().into_iter().map(|p| replica.join(p)).collect();
        let size = meta.len() + files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum::<u64>();
        let pulled = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        out.push(Shard { replica: replica.to_path_buf(), number, index: e.path(), files, bytes: size, pulled });
    }
    out
}

/// Evicts the least recently pulled shards no live reader holds until the replicas
/// under `root` take at most `budget` bytes (or nothing more may go); the bytes freed.
pub(crate) fn evict(root: &Path, budget: u64) -> Result<u64> {
    let _lock = lock(root, false)?;
    let base = root.join("replicas");
    let mut total = rollway_store::format::dir_bytes(&base);
    if total <= budget {
        return Ok(0);
    }
    let mut all = vec![];
    replicas(&base, &mut all);
    let held: BTreeMap<PathBuf, Held> = all.iter().map(|r| (r.clone(), held(r))).collect();
    let mut candidates: Vec<Shard> = all
        .iter()
        .flat_map(|r| shards_of(r))
        .filter(|s| match &held[&s.replica] {
            Held::All => false,
            Held::Shards(pinned) => !pinned.contains(&s.number),
        })
        .collect();
    candidates.sort_by_key(|s| (s.pulled, s.number));
    let mut freed = 0;
    for s in candidates {
        if total <= budget {
            break;
        }
        // The index first: from then on no reader lists the shard.
        std::fs::remove_file(&s.index).local("evicting", &s.index)?;
        for f in &s.files {
            let _ = std::fs::remove_file(f);
        }
        total = total.saturating_sub(s.bytes);
        freed += s.bytes;
    }
    Ok(freed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units_and_garbage_is_refused() {
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("2K"), Some(2048));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size(" 20 gib "), Some(20 << 30));
        assert_eq!(parse_size("3MB"), Some(3 << 20));
        for bad in ["", "G", "-1", "ten", "5X", "nan"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
    }

    /// A replica with `n` shards of one 1000-byte data file each, pulled in order.
    fn replica(root: &Path, name: &str, n: u32) -> PathBuf {
        let dir = root.join("replicas/s3/bucket").join(name);
        std::fs::create_dir_all(dir.join("index")).unwrap();
        std::fs::create_dir_all(dir.join("steps")).unwrap();
        std::fs::write(dir.join("rollway.json"), "{}").unwrap();
        for i in 0..n {
            let data = format!("steps/shard-{i:06}.parquet");
            std::fs::write(dir.join(&data), vec![0u8; 1000]).unwrap();
            let index = serde_json::json!({"shard": i, "files": [{"path": data, "bytes": 1000, "xxh3": "0"}]});
            std::fs::write(dir.join(format!("index/shard-{i:06}.json")), index.to_string()).unwrap();
            // Pulled one after the other: the oldest first out.
            let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + u64::from(i));
            File::options().write(true).open(dir.join(format!("index/shard-{i:06}.json"))).unwrap().set_modified(t).unwrap();
        }
        dir
    }

    fn left(dir: &Path) -> Vec<u32> {
        let mut v: Vec<u32> = shards_of(dir).iter().map(|s| s.number).collect();
        v.sort();
        v
    }

    #[test]
    fn the_oldest_unpinned_shards_go_first_and_pinned_ones_never() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (replica(tmp.path(), "a", 4), replica(tmp.path(), "b", 4));
        let total = rollway_store::format::dir_bytes(&tmp.path().join("replicas"));
        assert_eq!(evict(tmp.path(), total).unwrap(), 0, "within the bound: nothing goes");
        // `a` is read whole by a live process (this one); `b` by a loader holding shards 0 and 3.
        pin_all(tmp.path(), &a).unwrap();
        let _pin = pin(tmp.path(), &b, "loader", &Held::Shards([0, 3].into())).unwrap();
        let freed = evict(tmp.path(), 0).unwrap();
        assert!(freed >= 2000, "{freed}");
        assert_eq!(left(&a), [0, 1, 2, 3], "a whole-dataset reader's replica is untouched");
        assert_eq!(left(&b), [0, 3], "the loader's shards stay; the others go, files and all");
        assert!(!b.join("steps/shard-000001.parquet").exists() && b.join("steps/shard-000003.parquet").exists());
    }

    #[test]
    fn a_budget_takes_only_what_it_must_and_dead_readers_pins_are_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let b = replica(tmp.path(), "b", 4);
        // A pin of a process that is gone (pid 0 never names a live process here).
        std::fs::create_dir_all(readers(&b)).unwrap();
        let dead = readers(&b).join(format!("{}-0-x.json", crate::host::hostname()));
        std::fs::write(&dead, r#"{"all": true}"#).unwrap();
        let total = rollway_store::format::dir_bytes(&tmp.path().join("replicas"));
        evict(tmp.path(), total - 1500).unwrap();
        assert_eq!(left(&b), [2, 3], "two shards freed the 1500 bytes asked for; the two oldest went");
        assert!(!dead.exists(), "the dead reader's pin was removed");
    }
}
