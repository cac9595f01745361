//! `verify`: checks every committed episode's data against the index and says
//! precisely what is damaged and where. It never changes a file: files that do not
//! belong (orphaned shards, strangers in the dataset's folders) are reported, and
//! [`repair`] is the separate, explicit step that moves them aside.

use std::collections::HashMap;

use arrow_array::{Array as _, BooleanArray, Float64Array, Int64Array, RecordBatch};
use rollway_core::Status;
use serde::Serialize;

use crate::format::{is_frame_leaf, FileSum};
use crate::frames;
use crate::Dataset;

/// One piece of damage.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// Shard it is in (none for damage to the dataset as a whole).
    pub shard: Option<u32>,
    /// Episode, when the damage is specific to one.
    pub episode: Option<u64>,
    /// What is wrong.
    pub message: String,
}

/// The result of [`verify`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// Shards checked.
    pub shards: u64,
    /// Episodes checked (given-up ones included).
    pub episodes: u64,
    /// Steps checked.
    pub steps: u64,
    /// Everything found wrong; empty means intact.
    pub problems: Vec<Problem>,
    /// Crash debris a writer will clean up, and committed files it has yet to
    /// publish: expected after a crash, not damage.
    pub notes: Vec<String>,
}

/// Reads every shard and checks each committed episode: row ids and step numbers,
/// rewards against the recorded return, final flags against the status, frames present.
/// Open the dataset with [`crate::OpenOptions::skip_damaged`] to have shards with a
/// damaged index reported here rather than refused on open.
pub fn verify(ds: &Dataset) -> VerifyReport {
    let mut r = VerifyReport::default();
    for d in ds.damaged() {
        r.problems.push(Problem { shard: Some(d.shard), episode: None, message: format!("{}: {}", d.path.display(), d.message) });
    }
    dataset_level(ds, &mut r);
    let mut frame_buf = Vec::new();
    for shard in ds.shards() {
        r.shards += 1;
        let n = shard.shard;
        let mut bad = |episode: Option<u64>, message: String| r.problems.push(Problem { shard: Some(n), episode, message });
        if shard.rows == 0 || !files_intact(ds, shard, &mut bad) {
            r.episodes += shard.episodes.len() as u64;
            continue;
        }
        let batch = match ds.read_rows(n, 0, shard.rows) {
            Ok(b) => b,
            Err(e) => {
                bad(None, e.to_string());
                continue;
            }
        };
        let Some(core) = Core::of(&batch, &mut bad) else {
            continue;
        };
        // Opened once per shard and key: a video file is demuxed once, not per episode.
        let mut opened = HashMap::new();
        r.episodes += shard.episodes.len() as u64;
        for e in shard.episodes.iter().filter(|e| e.status != Status::GivenUp) {
            r.steps += e.length;
            if core.episode(e, &mut bad) {
                frames_decode(ds, n, e, (&mut opened, &mut frame_buf), &mut bad);
            }
        }
    }
    r
}

/// A shard's core columns, typed.
struct Core<'a> {
    ids: &'a Int64Array,
    steps: &'a Int64Array,
    rewards: &'a Float64Array,
    term: &'a BooleanArray,
    trunc: &'a BooleanArray,
}

impl<'a> Core<'a> {
    /// The columns, or `None` (reported) when one is missing or of the wrong type.
    fn of(batch: &'a RecordBatch, bad: &mut impl FnMut(Option<u64>, String)) -> Option<Core<'a>> {
        let get = |name: &str| batch.column_by_name(name);
        let (Some(ids), Some(steps), Some(rewards), Some(term), Some(trunc)) =
            (get("episode_id"), get("step"), get("rewards"), get("terminations"), get("truncations"))
        else {
            bad(None, "missing one of the columns episode_id, step, rewards, terminations, truncations".into());
            return None;
        };
        let core = (|| {
            Some(Core {
                ids: ids.as_any().downcast_ref()?,
                steps: steps.as_any().downcast_ref()?,
                rewards: rewards.as_any().downcast_ref()?,
                term: term.as_any().downcast_ref()?,
                trunc: trunc.as_any().downcast_ref()?,
            })
        })();
        if core.is_none() {
            bad(None, "a core column has the wrong type".into());
        }
        core
    }

    /// Checks a committed episode's rows against its index entry: ids, step numbers,
    /// rewards against the return, final flags against the status. False when its
    /// rows are not even the right number (nothing more is checked then).
    fn episode(&self, e: &crate::IndexEntry, bad: &mut impl FnMut(Option<u64>, String)) -> bool {
        let (s, rows) = (e.row_start as usize, e.rows as usize);
        let id = Some(e.episode_id);
        if rows != e.length as usize + 1 {
            bad(id, format!("{rows} rows for {} steps", e.length));
            return false;
        }
        if (s..s + rows).any(|i| self.ids.value(i) != e.episode_id as i64) {
            bad(id, format!("rows {s}..{} carry another episode id", s + rows));
        }
        if (0..rows).any(|k| self.steps.value(s + k) != k as i64) {
            bad(id, "step numbers are not 0..=T".into());
        }
        let sum = (s..s + rows - 1).fold(0.0, |acc, i| acc + self.rewards.value(i));
        if sum != e.ret {
            bad(id, format!("rewards add up to {sum}, the index says {}", e.ret));
        }
        if !self.rewards.is_null(s + rows - 1) {
            bad(id, "the final observation row has a reward".into());
        }
        if e.length > 0 {
            let last = s + rows - 2;
            let ok = match e.status {
                Status::Terminated => self.term.value(last),
                Status::Truncated => self.trunc.value(last) && !self.term.value(last),
                Status::GivenUp => true,
            };
            if !ok {
                bad(id, format!("final step flags do not say {:?}", e.status));
            }
        }
        true
    }
}

/// A shard's frame files, opened (or failed to open) by key.
type Opened = HashMap<String, std::result::Result<Box<dyn frames::FrameShard>, String>>;

/// Checks that an episode has its frames, one per observation, and that they decode:
/// a frame that does not decode is damage, even when the index can locate it.
fn frames_decode(
    ds: &Dataset,
    shard: u32,
    e: &crate::IndexEntry,
    (opened, buf): (&mut Opened, &mut Vec<u8>),
    bad: &mut impl FnMut(Option<u64>, String),
) {
    let id = Some(e.episode_id);
    for leaf in ds.obs_layout().leaves().iter().filter(|l| is_frame_leaf(l)) {
        let key = crate::format::column_name("observations", leaf);
        let f = match e.frames.get(&key) {
            None => {
                bad(id, format!("no frames recorded for {key}"));
                continue;
            }
            Some(f) if f.count != e.rows => {
                bad(id, format!("{} frames for {} observations", f.count, e.rows));
                continue;
            }
            Some(f) => f,
        };
        let res = match opened.entry(key.clone()).or_insert_with(|| ds.open_frames(&key, shard).map_err(|e| e.to_string())) {
            Ok(fs) => {
                buf.resize(f.count as usize * leaf.bytes(), 0);
                fs.frames(f.start, buf, leaf.bytes()).map_err(|e| e.to_string())
            }
            Err(m) => Err(m.clone()),
        };
        if let Err(err) = res {
            bad(id, err);
        }
    }
}

/// Checks each of a shard's files: present, and (version 2) of the committed size and
/// hash; a version 1 shard only has its Parquet size recorded. False when any is not.
fn files_intact(ds: &Dataset, shard: &crate::ShardIndex, bad: &mut impl FnMut(Option<u64>, String)) -> bool {
    let paths = ds.paths();
    if shard.files.is_empty() {
        let path = ds.shard_path(shard.shard);
        return match std::fs::metadata(&path) {
            Ok(m) if m.len() != shard.parquet_bytes => {
                bad(None, format!("{} is {} bytes, the index says {}", path.display(), m.len(), shard.parquet_bytes));
                true
            }
            Ok(_) => true,
            Err(e) => {
                bad(None, format!("{}: {e}", path.display()));
                false
            }
        };
    }
    let mut ok = true;
    for f in &shard.files {
        let Some(fin) = paths.resolve(&f.path) else {
            continue;
        };
        let got = paths.open_located(&fin, |p| FileSum::of(p, f.path.clone()));
        match got {
            Ok((_, sum)) if sum == *f => {}
            Ok((p, sum)) => {
                ok = false;
                bad(
                    None,
                    format!(
                        "{} is {} bytes with XXH3 {}, the index says {} bytes with {}: its content changed after commit",
                        p.display(),
                        sum.bytes,
                        sum.xxh3,
                        f.bytes,
                        f.xxh3
                    ),
                );
            }
            Err(e) => {
                ok = false;
                bad(None, e.to_string());
            }
        }
    }
    ok
}

/// Files that do not belong and totals that disagree with the index.
fn dataset_level(ds: &Dataset, r: &mut VerifyReport) {
    let mut bad = |message: String| r.problems.push(Problem { shard: None, episode: None, message });
    match crate::recover::scan(ds.paths(), ds.metadata(), ds.shards(), ds.damaged()) {
        Err(e) => bad(e.to_string()),
        Ok(s) => {
            for p in &s.orphans {
                bad(format!(
                    "{}: a shard file with no index (its index was lost?); `rollway verify --repair` moves it to .quarantine/",
                    p.display()
                ));
            }
            for p in &s.strangers {
                bad(format!("{}: not a file rollway writes; `rollway verify --repair` moves it to .quarantine/", p.display()));
            }
            for p in &s.debris {
                r.notes.push(format!("{}: debris of a shard that never committed (the next writer removes it)", p.display()));
            }
            for (p, _) in &s.unpublished {
                r.notes
                    .push(format!("{}: committed, not yet published into place (the next writer does it; readers find it)", p.display()));
            }
        }
    }
    let c = &ds.metadata().counts;
    let episodes = ds.shards().iter().map(|s| s.episodes.len() as u64).sum::<u64>();
    let shards = ds.shards().len() as u64;
    // A writer killed after committing more leaves smaller totals behind; larger ones
    // mean committed episodes are missing.
    if c.episodes > episodes || c.shards > shards {
        bad(format!(
            "{} says {} episodes in {} shards; the index holds {episodes} in {shards}",
            crate::format::METADATA,
            c.episodes,
            c.shards
        ));
    }
}
