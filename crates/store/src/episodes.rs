//! Turning a shard's decoded columns into episodes: one piece of code for
//! [`Dataset::read_episode`] (one episode's rows) and [`EpisodeReader`] (every
//! episode in id order, each shard decoded once — what whole-dataset exports need;
//! reading episode by episode would decode a shard's Parquet pages again per episode).

use std::collections::BTreeMap;
use std::path::PathBuf;

use arrow_array::{Array as _, RecordBatch, StringArray};
use rollway_core::{Array, Info, Leaf};

use crate::columns::stacked;
use crate::format::{column_name, is_frame_leaf, IndexEntry};
use crate::frames::FrameShard;
use crate::reader::{Dataset, EpisodeData, ShardColumns};
use crate::{Error, Result};

/// What an episode is cut from: decoded columns, their infos and open frame files.
pub(crate) struct Source {
    /// The Parquet shard the columns came from (named in errors).
    pub path: PathBuf,
    pub cols: ShardColumns,
    /// Per-row info JSON, when the dataset records infos.
    pub infos: Option<Vec<Option<String>>>,
    pub frames: BTreeMap<String, Box<dyn FrameShard>>,
}

impl Source {
    /// Decodes rows `start..start+rows` of shard `n` and opens its frame files.
    pub(crate) fn read(ds: &Dataset, n: u32, start: u64, rows: u64) -> Result<Source> {
        let batch = ds.read_rows(n, start, rows)?;
        let path = ds.shard_path(n);
        let cols = ds.columns_of(&batch, &path)?;
        let infos = infos_of(&batch).map_err(|m| Error::Corrupt { path: path.clone(), message: m })?;
        let mut frames = BTreeMap::new();
        for key in &ds.metadata().frame_keys {
            frames.insert(key.clone(), ds.open_frames(key, n)?);
        }
        Ok(Source { path, cols, infos, frames })
    }

    /// The episode of `entry`, whose first row is row `r0` of these columns.
    pub(crate) fn episode(&self, ds: &Dataset, entry: IndexEntry, r0: usize) -> Result<EpisodeData> {
        let corrupt = |m: String| Error::Corrupt { path: self.path.clone(), message: format!("episode {}: {m}", entry.episode_id) };
        let (t1, t) = (entry.rows as usize, entry.length as usize);
        let slice = |all: &[u8], leaf: &Leaf, rows: usize| -> Result<Vec<u8>> {
            let lb = leaf.bytes();
            all.get(r0 * lb..(r0 + rows) * lb)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| corrupt(format!("rows {r0}..{} are outside the shard", r0 + rows)))
        };
        let mut observations = Vec::new();
        for (leaf, all) in ds.obs_layout().leaves().iter().zip(&self.cols.observations) {
            let name = column_name("observations", leaf);
            let data = if is_frame_leaf(leaf) {
                let fr = entry.frames.get(&name).ok_or_else(|| corrupt(format!("no frames for `{name}`")))?;
                let fs = self.frames.get(&name).ok_or_else(|| corrupt(format!("no frame file for `{name}`")))?;
                let mut out = vec![0u8; t1 * leaf.bytes()];
                fs.frames(fr.start, &mut out, leaf.bytes())?;
                out
            } else {
                slice(all, leaf, t1)?
            };
            observations.push((name, stacked(leaf, t1, data)));
        }
        let mut actions = Vec::new();
        // The final observation row has no action.
        for (leaf, all) in ds.act_layout().leaves().iter().zip(&self.cols.actions) {
            actions.push((column_name("actions", leaf), stacked(leaf, t, slice(all, leaf, t)?)));
        }
        let flags = |v: &[u8]| -> Result<Vec<bool>> {
            Ok(v.get(r0..r0 + t).ok_or_else(|| corrupt("flags outside the shard".into()))?.iter().map(|&x| x != 0).collect())
        };
        let rewards = self.cols.rewards.get(r0..r0 + t).ok_or_else(|| corrupt("rewards outside the shard".into()))?.to_vec();
        let (terminations, truncations) = (flags(&self.cols.terminations)?, flags(&self.cols.truncations)?);
        let infos = match &self.infos {
            None => None,
            Some(all) => {
                let mine = all.get(r0..r0 + t1).ok_or_else(|| corrupt("infos outside the shard".into()))?;
                Some(
                    mine.iter()
                        .enumerate()
                        .map(|(i, s)| {
                            s.as_deref()
                                .map_or(Ok(Info::new()), |s| serde_json::from_str(s).map_err(|e| corrupt(format!("info row {i}: {e}"))))
                        })
                        .collect::<Result<_>>()?,
                )
            }
        };
        let w = self.cols.state_width;
        let agent_state = match w {
            0 => None,
            _ => {
                let rows = self.cols.states.get(r0 * w..(r0 + t) * w).ok_or_else(|| corrupt("agent states outside the shard".into()))?;
                Some(Array::from_f32(&[t, w], rows))
            }
        };
        let mut extras = Vec::new();
        for x in &self.cols.extras {
            let w = x.width();
            let rows = x.values.get(r0 * w..(r0 + t) * w).ok_or_else(|| corrupt(format!("extra `{}` outside the shard", x.name)))?;
            extras.push((x.name.clone(), Array::from_f32(&[&[t][..], &x.shape].concat(), rows)));
        }
        let policy_version = match self.cols.versions.is_empty() {
            true => None,
            false => Some(self.cols.versions.get(r0..r0 + t).ok_or_else(|| corrupt("policy versions outside the shard".into()))?.to_vec()),
        };
        Ok(EpisodeData { entry, observations, actions, rewards, terminations, truncations, infos, agent_state, extras, policy_version })
    }
}

/// The `infos` column as optional JSON strings (`None` when the dataset has none).
fn infos_of(batch: &RecordBatch) -> std::result::Result<Option<Vec<Option<String>>>, String> {
    let Some(col) = batch.column_by_name("infos") else {
        return Ok(None);
    };
    let s = col.as_any().downcast_ref::<StringArray>().ok_or("infos are not strings")?;
    Ok(Some((0..s.len()).map(|i| (!s.is_null(i)).then(|| s.value(i).to_string())).collect()))
}

/// Every episode with data, in episode-id order, each shard decoded once.
pub struct EpisodeReader<'a> {
    ds: &'a Dataset,
    entries: Vec<IndexEntry>,
    cur: Option<(u32, Source)>,
}

impl<'a> EpisodeReader<'a> {
    pub(crate) fn new(ds: &'a Dataset) -> EpisodeReader<'a> {
        let mut entries: Vec<IndexEntry> = ds.select(|_| true).cloned().collect();
        entries.sort_by_key(|e| e.episode_id);
        EpisodeReader { ds, entries, cur: None }
    }

    /// The entries of the episodes [`EpisodeReader::read`] returns, in order.
    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    /// Episode `k` of [`EpisodeReader::entries`]. Reading in order decodes each shard
    /// once (the last shard read is kept).
    pub fn read(&mut self, k: usize) -> Result<EpisodeData> {
        let entry = self.entries.get(k).cloned().ok_or(Error::NoEpisode(k as u64))?;
        if !matches!(&self.cur, Some((n, _)) if *n == entry.shard) {
            let rows = self.ds.shards().iter().find(|s| s.shard == entry.shard).map_or(0, |s| s.rows);
            self.cur = Some((entry.shard, Source::read(self.ds, entry.shard, 0, rows)?));
        }
        let (_, src) = self.cur.as_ref().expect("loaded above");
        let r0 = entry.row_start as usize;
        src.episode(self.ds, entry, r0)
    }
}

impl Dataset {
    /// Every episode with data in episode-id order, for whole-dataset passes
    /// (exports, conversions): each shard is decoded once.
    pub fn episode_reader(&self) -> EpisodeReader<'_> {
        EpisodeReader::new(self)
    }

    /// Reads one episode's columns and frames.
    pub fn read_episode(&self, id: u64) -> Result<EpisodeData> {
        let entry = self.entry(id)?.clone();
        Source::read(self, entry.shard, entry.row_start, entry.rows)?.episode(self, entry, 0)
    }
}
