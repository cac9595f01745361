//! What a dataset directory holds besides its committed files, and what a writer
//! (the one process holding the lock) does about it on open.
//!
//! The commit protocol (FORMAT.md, version 2) stages a shard's data files under
//! `.tmp/publish/`, commits its index, then renames the files into `steps/` and
//! `frames/`. So after a crash the directory can hold, besides committed files:
//!
//! - **unpublished** files: staged files of a committed shard (killed between the
//!   index rename and the publish). A writer *rolls them forward* (renames them into
//!   place); readers find them where they are.
//! - **debris**: staged or partial files of a shard that never committed. Only these
//!   are ever deleted, only by a writer, only regular files of the exact names the
//!   writer gives them, and never through a symbolic link.
//! - **orphans**: shard files in `steps/`/`frames/` whose index is missing. Version 2
//!   never leaves these after a crash, so they mean a lost index (or version 1 crash
//!   debris): a writer moves them to `.quarantine/`, where nothing is lost.
//! - **strangers**: anything else in `index/`, `steps/`, `frames/` (a user's
//!   `shard-7.txt`, `shard-000000.bak.json`). Nobody touches them except an explicit
//!   repair, which quarantines them too; `verify` reports them.
//!
//! Scanning lists directories only (no file is opened), so it costs a `readdir` per
//! folder: cheap next to reading a single shard.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::IoContext;
use crate::format::frame_ext;
use crate::format::{create_dir_durable, require_real_dir, shard_number, sync_dir, Metadata, Paths, ShardIndex};
use crate::reader::{shard_files, Damaged};
use crate::Result;

/// The result of [`scan`]: every file that is not a published file of a committed shard.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// `(staged, final)` files of committed shards still waiting to be published.
    pub unpublished: Vec<(PathBuf, PathBuf)>,
    /// Files of shards that never committed, under `.tmp/`.
    pub debris: Vec<PathBuf>,
    /// Shard files whose shard has no index.
    pub orphans: Vec<PathBuf>,
    /// Files rollway does not write, in the folders it owns.
    pub strangers: Vec<PathBuf>,
    /// Orphans a writer moved to `.quarantine/`, `(from, to)` (set by [`recover`]).
    pub quarantined: Vec<(PathBuf, PathBuf)>,
    /// Committed files [`recover`] published.
    pub published: usize,
    /// The highest shard number found anywhere, so a new shard never takes the name
    /// of an orphan.
    pub highest: Option<u32>,
}

fn entries(dir: &Path) -> Result<Vec<(String, PathBuf, std::fs::FileType)>> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(vec![]);
    };
    let mut v = Vec::new();
    for e in rd {
        let e = e.io("listing", dir)?;
        let t = e.file_type().io("listing", dir)?;
        v.push((e.file_name().to_string_lossy().into_owned(), e.path(), t));
    }
    v.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(v)
}

/// Classifies everything in the dataset's folders against the committed `shards`.
/// Files of `damaged` shards (an index exists but cannot be read) are left out of
/// every list: whether they belong cannot be told, so nothing may act on them.
pub(crate) fn scan(paths: &Paths, meta: &Metadata, shards: &[ShardIndex], damaged: &[Damaged]) -> Result<Scan> {
    let mut s = Scan::default();
    let expected: BTreeMap<PathBuf, u32> =
        shards.iter().flat_map(|i| shard_files(paths, meta, i).into_iter().map(move |p| (p, i.shard))).collect();
    let committed: std::collections::BTreeSet<u32> = shards.iter().map(|i| i.shard).chain(damaged.iter().map(|d| d.shard)).collect();
    let unknown = |n: u32| damaged.iter().any(|d| d.shard == n);
    s.highest = committed.last().copied();
    // The folders rollway writes data files to, each with the extension its files have.
    let mut folders = vec![(paths.steps_dir(), "parquet".to_string())];
    for key in &meta.frame_keys {
        folders.push((paths.frames_dir(key), frame_ext(meta, key).to_string()));
    }
    for (name, path, t) in entries(&paths.index_dir())? {
        if !(t.is_file() && shard_number(&name, "json").is_some()) {
            s.strangers.push(path);
        }
    }
    for (dir, ext) in &folders {
        for (name, path, t) in entries(dir)? {
            match shard_number(&name, ext).filter(|_| t.is_file()) {
                Some(n) => {
                    s.highest = s.highest.max(Some(n));
                    if !expected.contains_key(&path) && !unknown(n) {
                        s.orphans.push(path);
                    }
                }
                None => s.strangers.push(path),
            }
        }
        let staged = paths.staged(dir);
        if require_real_dir(&paths.tmp()).is_err() || require_real_dir(&paths.publish_dir()).is_err() || require_real_dir(&staged).is_err()
        {
            continue;
        }
        for (name, path, t) in entries(&staged)? {
            let Some(n) = shard_number(&name, ext).filter(|_| t.is_file()) else {
                continue;
            };
            s.highest = s.highest.max(Some(n));
            let fin = dir.join(&name);
            if !committed.contains(&n) {
                s.debris.push(path);
            } else if expected.contains_key(&fin) && !fin.exists() {
                s.unpublished.push((path, fin));
            }
        }
    }
    let frames_root = paths.root.join("frames");
    for (_, path, _) in entries(&frames_root)? {
        if !folders.iter().any(|(d, _)| d == &path) {
            s.strangers.push(path);
        }
    }
    if require_real_dir(&paths.tmp()).is_ok() {
        for (name, path, t) in entries(&paths.tmp())? {
            // Version 1 staged its files here as `*.partial`; both versions stage JSON so.
            if t.is_file() && name.ends_with(".partial") {
                s.debris.push(path);
            }
        }
    }
    Ok(s)
}

/// What a writer does on open: finish publishing committed shards, delete debris,
/// quarantine orphans. Returns the scan (strangers are left where they are).
pub(crate) fn recover(paths: &Paths, meta: &Metadata, shards: &[ShardIndex], damaged: &[Damaged]) -> Result<Scan> {
    require_real_dir(&paths.tmp())?;
    require_real_dir(&paths.publish_dir())?;
    let mut s = scan(paths, meta, shards, damaged)?;
    settle(paths, &s.unpublished, &s.debris)?;
    s.quarantined = quarantine(paths, &std::mem::take(&mut s.orphans))?;
    s.published = std::mem::take(&mut s.unpublished).len();
    s.debris.clear();
    Ok(s)
}

/// What becomes of crashed shards' staged files: committed ones are published
/// (roll forward), the rest — debris — deleted. Shared by the one writer on open and
/// by one of many writers reaping after dead ones ([`crate::shared`]).
pub(crate) fn settle(paths: &Paths, unpublished: &[(PathBuf, PathBuf)], debris: &[PathBuf]) -> Result<()> {
    for (_, fin) in unpublished {
        create_dir_durable(fin.parent().unwrap_or(&paths.root))?;
    }
    publish(unpublished)?;
    for p in debris {
        // A regular file of our own naming in our own folder: never a link, never a folder.
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()) {
            match std::fs::remove_file(p) {
                // Another of many writers got there first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                r => r.io("removing crash debris", p)?,
            }
        }
    }
    Ok(())
}

/// Renames committed shards' `(staged, final)` files into place, then makes the
/// renames durable (each folder synced once, not once per file). A staged file that
/// is gone while its final one is there was published already (by another of many
/// writers).
pub(crate) fn publish(files: &[(PathBuf, PathBuf)]) -> Result<()> {
    for (staged, fin) in files {
        crate::faults::check("publishing", fin)?;
        match std::fs::rename(staged, fin) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && fin.exists() => {}
            r => r.io("publishing", fin)?,
        }
    }
    let dirs: std::collections::BTreeSet<&Path> = files.iter().filter_map(|(_, f)| f.parent()).collect();
    dirs.into_iter().try_for_each(sync_dir)
}

/// Moves `files` (inside the dataset) to `.quarantine/<time>-<pid>/<their path>`.
pub(crate) fn quarantine(paths: &Paths, files: &[PathBuf]) -> Result<Vec<(PathBuf, PathBuf)>> {
    if files.is_empty() {
        return Ok(vec![]);
    }
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let dest_root = paths.quarantine().join(format!("{stamp}-{}", std::process::id()));
    let mut moved = Vec::new();
    for f in files {
        let dest = dest_root.join(f.strip_prefix(&paths.root).unwrap_or(f));
        create_dir_durable(dest.parent().unwrap_or(&dest_root))?;
        std::fs::rename(f, &dest).io("moving to quarantine", f)?;
        sync_dir(dest.parent().unwrap_or(&dest_root))?;
        sync_dir(f.parent().unwrap_or(&paths.root))?;
        moved.push((f.clone(), dest));
    }
    Ok(moved)
}
