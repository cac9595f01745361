//! The selected episodes' numeric columns, concatenated in memory (they are small
//! next to frames, and memory is what makes window gathers plain `memcpy`s).
//! Frames stay on disk and are decoded per window by the loader's threads.

use rollway_core::{Layout, Status};
use rollway_store::format::{column_name, is_frame_leaf};
use rollway_store::frames::FrameShard;
use rollway_store::{Dataset, IndexEntry};

use crate::{Result, Selection};

/// One selected episode.
#[derive(Clone, Debug)]
pub struct EpisodeSpan {
    /// Dataset episode id.
    pub id: u64,
    /// Its first row in the table (its T+1 rows follow).
    pub row: usize,
    /// T.
    pub length: usize,
    /// Index into `Table::frames` of its shard.
    pub shard: usize,
    /// Its first frame in that shard's frame file.
    pub frame_start: u64,
}

pub(crate) struct Table {
    pub obs: Layout,
    pub act: Layout,
    /// Per observation leaf: rows × leaf bytes (empty for frame leaves).
    pub obs_cols: Vec<Vec<u8>>,
    /// Per action leaf: rows × leaf bytes.
    pub act_cols: Vec<Vec<u8>>,
    pub rewards: Vec<f64>,
    pub terminations: Vec<u8>,
    pub truncations: Vec<u8>,
    pub episodes: Vec<EpisodeSpan>,
    /// Per loaded shard, per observation leaf: the frame file (frame leaves only).
    pub frames: Vec<Vec<Option<Box<dyn FrameShard>>>>,
}

fn keep(sel: &Selection, e: &IndexEntry) -> bool {
    e.status != Status::GivenUp
        && (sel.labels.is_empty() || e.labels.iter().any(|l| sel.labels.contains(&l.label)))
        && sel.min_return.is_none_or(|m| e.ret >= m)
        && sel.max_return.is_none_or(|m| e.ret <= m)
        && sel.min_length.is_none_or(|m| e.length >= m)
        && sel.max_length.is_none_or(|m| e.length <= m)
}

impl Table {
    pub fn load(ds: &Dataset, sel: &Selection) -> Result<Table> {
        let (obs, act) = (ds.obs_layout().clone(), ds.act_layout().clone());
        let mut t = Table {
            obs_cols: vec![Vec::new(); obs.leaves().len()],
            act_cols: vec![Vec::new(); act.leaves().len()],
            obs,
            act,
            rewards: Vec::new(),
            terminations: Vec::new(),
            truncations: Vec::new(),
            episodes: Vec::new(),
            frames: Vec::new(),
        };
        for shard in ds.shards() {
            let chosen: Vec<&IndexEntry> = shard.episodes.iter().filter(|e| keep(sel, e)).collect();
            if chosen.is_empty() {
                continue;
            }
            let cols = ds.shard_columns(shard.shard)?;
            let si = t.frames.len();
            let mut frames = Vec::new();
            for leaf in t.obs.leaves() {
                frames.push(if is_frame_leaf(leaf) { Some(ds.open_frames(&column_name("observations", leaf), shard.shard)?) } else { None });
            }
            t.frames.push(frames);
            for e in chosen {
                let (s, n) = (e.row_start as usize, e.rows as usize);
                let row = t.rewards.len();
                for (li, leaf) in t.obs.leaves().iter().enumerate() {
                    if !is_frame_leaf(leaf) {
                        t.obs_cols[li].extend_from_slice(&cols.observations[li][s * leaf.bytes()..(s + n) * leaf.bytes()]);
                    }
                }
                for (li, leaf) in t.act.leaves().iter().enumerate() {
                    t.act_cols[li].extend_from_slice(&cols.actions[li][s * leaf.bytes()..(s + n) * leaf.bytes()]);
                }
                t.rewards.extend_from_slice(&cols.rewards[s..s + n]);
                t.terminations.extend_from_slice(&cols.terminations[s..s + n]);
                t.truncations.extend_from_slice(&cols.truncations[s..s + n]);
                let frame_start = e.frames.values().next().map_or(0, |f| f.start);
                t.episodes.push(EpisodeSpan { id: e.episode_id, row, length: e.length as usize, shard: si, frame_start });
            }
        }
        Ok(t)
    }
}
