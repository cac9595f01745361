//! Checks on what a reader takes from an index file before it uses it as row
//! ranges, frame ranges or paths. The index is JSON anyone can edit or damage, so
//! every number in it is checked against the others (rows add up, ranges are
//! contiguous and cannot overflow) and every path must be one the writer could have
//! written: a damaged index is then a clear error naming the shard, never a panic,
//! an out-of-range read or a file read from outside the dataset.

use std::path::PathBuf;

use rollway_core::Status;

use crate::format::{expected_files, Metadata, Paths, ShardIndex};

/// Checks index `idx`, read from the file of shard `n`; the message says what is wrong.
pub(crate) fn index(paths: &Paths, meta: &Metadata, n: u32, idx: &ShardIndex) -> Result<(), String> {
    if idx.shard != n {
        return Err(format!("says shard {}", idx.shard));
    }
    let mut row = 0u64;
    for e in &idx.episodes {
        let id = e.episode_id;
        if e.shard != n {
            return Err(format!("episode {id} says shard {}", e.shard));
        }
        if e.row_start != row {
            return Err(format!("episode {id} starts at row {} where the episode before it ends at row {row}", e.row_start));
        }
        let want = if e.status == Status::GivenUp { Some(0) } else { e.length.checked_add(1) };
        if want != Some(e.rows) {
            return Err(format!("episode {id} has {} rows for {} steps ({:?})", e.rows, e.length, e.status));
        }
        row = row.checked_add(e.rows).ok_or_else(|| format!("episode {id}: row count overflows"))?;
        for key in meta.frame_keys.iter().filter(|_| e.rows > 0) {
            match e.frames.get(key) {
                None => return Err(format!("episode {id} has no frames for `{key}`")),
                Some(f) if f.start != e.row_start || f.count != e.rows => {
                    return Err(format!("episode {id}: frames {}+{} of `{key}` for rows {}+{}", f.start, f.count, e.row_start, e.rows));
                }
                Some(_) => {}
            }
        }
    }
    if row != idx.rows {
        return Err(format!("episodes cover {row} rows, shard has {}", idx.rows));
    }
    files(paths, meta, idx)
}

/// A version 2 index lists exactly the files the writer gives a shard with rows.
fn files(paths: &Paths, meta: &Metadata, idx: &ShardIndex) -> Result<(), String> {
    if idx.files.is_empty() {
        // A version 1 index (a dataset upgraded by a later writer keeps its old shards).
        return Ok(());
    }
    if idx.rows == 0 {
        return Err("lists data files for a shard without rows".into());
    }
    let mut listed = Vec::new();
    for f in &idx.files {
        listed.push(paths.resolve(&f.path).ok_or_else(|| format!("lists `{}`, which is not a path inside the dataset", f.path))?);
        if f.xxh3.len() != 16 || !f.xxh3.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`{}` has hash `{}`, not 16 hex digits", f.path, f.xxh3));
        }
    }
    let mut want: Vec<PathBuf> = expected_files(paths, meta, idx.shard);
    listed.sort();
    want.sort();
    if listed != want {
        let show = |v: &[PathBuf]| v.iter().map(|p| paths.rel(p)).collect::<Vec<_>>().join(", ");
        return Err(format!("lists files [{}] where the shard has [{}]", show(&listed), show(&want)));
    }
    Ok(())
}
