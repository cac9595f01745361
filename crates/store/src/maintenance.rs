//! Whole-dataset edits, the top of the store's stack: each takes the writer lock
//! and does what a writer does on open (roll committed files forward, clean up
//! crash debris) before it changes anything — the explicit repair, ending a run
//! many writers wrote, rewriting the index (relabelling).

use std::path::{Path, PathBuf};

use rollway_core::Status;

use crate::format::{require_dataset, write_atomic, IndexEntry, Metadata, Paths};
use crate::lock::lock;
use crate::reader::{load_shard_indexes, read_metadata};
use crate::recover::{quarantine, recover};
use crate::shards::write_counts;
use crate::writer::{open_locked, run_info, Opened};
use crate::{Error, Result, WriteStats};

/// What [`repair`] did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RepairReport {
    /// Files moved to `.quarantine/`, `(from, to)`.
    pub quarantined: Vec<(PathBuf, PathBuf)>,
    /// Committed shards' files published into place.
    pub published: usize,
    /// Shards whose index is damaged: left as they are (nothing can rebuild an index).
    pub damaged: Vec<u32>,
}

/// The explicit repair (`rollway verify --repair`): under the writer lock, does what a
/// writer does on open, and also moves files rollway does not write out of its
/// folders into `.quarantine/`. Nothing is deleted but crash debris.
pub fn repair(dir: &Path) -> Result<RepairReport> {
    let paths = Paths::new(dir);
    require_dataset(dir)?;
    let _lock = lock(&paths)?;
    let meta = read_metadata(&paths)?;
    let (shards, damaged) = load_shard_indexes(&paths, &meta)?;
    let s = recover(&paths, &meta, &shards, &damaged)?;
    let mut quarantined = s.quarantined;
    quarantined.extend(quarantine(&paths, &s.strangers)?);
    Ok(RepairReport { quarantined, published: s.published, damaged: damaged.iter().map(|d| d.shard).collect() })
}

/// Opens an existing dataset as its one writer ([`open_locked`]), with its metadata.
fn open_existing(dir: &Path) -> Result<(Opened, Metadata)> {
    require_dataset(dir)?;
    let o = open_locked(dir)?;
    let meta =
        o.meta.clone().ok_or_else(|| Error::NotADataset { path: dir.to_path_buf(), message: format!("no {}", crate::format::METADATA) })?;
    Ok((o, meta))
}

/// Ends run `run` of the dataset at `dir`, written by many writers ([`DatasetWriter::join`](crate::DatasetWriter::join)):
/// under the writer lock (so only once all of them are gone), cleans up as a writer
/// does on open, then records the run's `summary` (when given) and the dataset's counts.
pub fn close_run(dir: &Path, run: u32, summary: Option<serde_json::Value>) -> Result<WriteStats> {
    let (o, meta) = open_existing(dir)?;
    let mut info = run_info(dir, &meta, run, "close")?;
    info.summary = summary.or(info.summary);
    let mine: Vec<&IndexEntry> = o.entries.iter().filter(|e| e.run == run).collect();
    let stats = WriteStats {
        shards: mine.iter().map(|e| e.shard).collect::<std::collections::BTreeSet<_>>().len() as u64,
        episodes: mine.len() as u64,
        steps: mine.iter().filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum(),
        bytes: 0,
    };
    write_counts(&o.paths, run, info.summary.as_ref())?;
    Ok(stats)
}

/// Rewrites the index under the writer lock, letting `edit` change each entry's
/// labels (or other index-only fields); each index file is replaced atomically.
/// Returns how many entries `edit` reported as changed.
pub fn rewrite_index(dir: &Path, mut edit: impl FnMut(&mut IndexEntry) -> bool) -> Result<u64> {
    let (o, meta) = open_existing(dir)?;
    let mut changed = 0;
    for mut shard in load_shard_indexes(&o.paths, &meta)?.0 {
        let before = changed;
        for e in &mut shard.episodes {
            changed += u64::from(edit(e));
        }
        if changed != before {
            write_atomic(&o.paths.shard_index(shard.shard), &o.paths.tmp(), &serde_json::to_vec(&shard).expect("index serializes"))?;
        }
    }
    Ok(changed)
}
