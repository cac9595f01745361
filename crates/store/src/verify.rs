//! `verify`: checks every committed episode's data against the index and says
//! precisely what is damaged and where.

use arrow_array::{Array as _, BooleanArray, Float64Array, Int64Array};
use rollway_core::Status;
use serde::Serialize;

use crate::format::is_frame_leaf;
use crate::frames;
use crate::Dataset;

/// One piece of damage.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// Shard it is in.
    pub shard: u32,
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
}

/// Reads every shard and checks each committed episode: row ids and step numbers,
/// rewards against the recorded return, final flags against the status, frames present.
pub fn verify(ds: &Dataset) -> VerifyReport {
    let mut r = VerifyReport::default();
    let mut frame_buf = Vec::new();
    for shard in ds.shards() {
        r.shards += 1;
        let n = shard.shard;
        let mut bad = |episode: Option<u64>, message: String| r.problems.push(Problem { shard: n, episode, message });
        let mut opened: std::collections::HashMap<String, std::result::Result<Box<dyn frames::FrameShard>, String>> = Default::default();
        let path = ds.paths().shard(n);
        match std::fs::metadata(&path) {
            Ok(m) if m.len() != shard.parquet_bytes => bad(None, format!("{} is {} bytes, the index says {}", path.display(), m.len(), shard.parquet_bytes)),
            Ok(_) => {}
            Err(e) => {
                bad(None, format!("{}: {e}", path.display()));
                continue;
            }
        }
        let batch = match ds.read_rows(n, 0, shard.rows) {
            Ok(b) => b,
            Err(e) => {
                bad(None, e.to_string());
                continue;
            }
        };
        let get = |name: &str| batch.column_by_name(name).cloned();
        let (Some(ids), Some(steps), Some(rewards), Some(term), Some(trunc)) = (get("episode_id"), get("step"), get("rewards"), get("terminations"), get("truncations")) else {
            bad(None, "missing one of the columns episode_id, step, rewards, terminations, truncations".into());
            continue;
        };
        let (Some(ids), Some(steps), Some(rewards), Some(term), Some(trunc)) = (
            ids.as_any().downcast_ref::<Int64Array>(),
            steps.as_any().downcast_ref::<Int64Array>(),
            rewards.as_any().downcast_ref::<Float64Array>(),
            term.as_any().downcast_ref::<BooleanArray>(),
            trunc.as_any().downcast_ref::<BooleanArray>(),
        ) else {
            bad(None, "a core column has the wrong type".into());
            continue;
        };
        for e in &shard.episodes {
            r.episodes += 1;
            if e.status == Status::GivenUp {
                continue;
            }
            r.steps += e.length;
            let (s, rows) = (e.row_start as usize, e.rows as usize);
            let id = Some(e.episode_id);
            if rows != e.length as usize + 1 {
                bad(id, format!("{rows} rows for {} steps", e.length));
                continue;
            }
            if (s..s + rows).any(|i| ids.value(i) != e.episode_id as i64) {
                bad(id, format!("rows {s}..{} carry another episode id", s + rows));
            }
            if (0..rows).any(|k| steps.value(s + k) != k as i64) {
                bad(id, "step numbers are not 0..=T".into());
            }
            let sum = (s..s + rows - 1).fold(0.0, |acc, i| acc + rewards.value(i));
            if sum != e.ret {
                bad(id, format!("rewards add up to {sum}, the index says {}", e.ret));
            }
            if !rewards.is_null(s + rows - 1) {
                bad(id, "the final observation row has a reward".into());
            }
            if e.length > 0 {
                let last = s + rows - 2;
                let ok = match e.status {
                    Status::Terminated => term.value(last),
                    Status::Truncated => trunc.value(last) && !term.value(last),
                    Status::GivenUp => true,
                };
                if !ok {
                    bad(id, format!("final step flags do not say {:?}", e.status));
                }
            }
            for leaf in ds.obs_layout().leaves().iter().filter(|l| is_frame_leaf(l)) {
                let key = crate::format::column_name("observations", leaf);
                match e.frames.get(&key) {
                    None => bad(id, format!("no frames recorded for {key}")),
                    Some(f) if f.count != e.rows => bad(id, format!("{} frames for {} observations", f.count, e.rows)),
                    Some(f) => {
                        // Opened once per shard and key: a video file is demuxed once, not per episode.
                        let shard_frames = opened.entry(key.clone()).or_insert_with(|| ds.open_frames(&key, n).map_err(|e| e.to_string()));
                        // Decode, not just locate: a frame that does not decode is damage.
                        let res = match shard_frames {
                            Ok(fs) => {
                                frame_buf.resize(f.count as usize * leaf.bytes(), 0);
                                fs.frames(f.start, &mut frame_buf, leaf.bytes()).map_err(|e| e.to_string())
                            }
                            Err(m) => Err(m.clone()),
                        };
                        if let Err(err) = res {
                            bad(id, err);
                        }
                    }
                }
            }
        }
    }
    r
}
