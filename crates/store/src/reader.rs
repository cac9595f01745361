//! Reading a dataset: committed episodes only, even while a writer is running.

use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use arrow_array::{Array as _, BooleanArray, Float32Array, Float64Array, ListArray, RecordBatch};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use rollway_core::{Array, Info, Layout, Status};

use crate::columns::{leaf_bytes, AGENT_STATE};
use crate::error::IoContext;
use crate::format::{self, column_name, is_frame_leaf, read_json, shard_number, IndexEntry, Metadata, Paths, ShardIndex};
use crate::frames;
use crate::{Error, Result};

/// An episode's data, in Gymnasium's convention.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeData {
    /// Its index entry.
    pub entry: IndexEntry,
    /// Observation leaves (frames included) by column name, each `[T+1, ...shape]`.
    pub observations: Vec<(String, Array)>,
    /// Action leaves by column name, each `[T, ...shape]`.
    pub actions: Vec<(String, Array)>,
    /// T rewards.
    pub rewards: Vec<f64>,
    /// T termination flags.
    pub terminations: Vec<bool>,
    /// T truncation flags.
    pub truncations: Vec<bool>,
    /// T+1 infos, when the dataset stores them.
    pub infos: Option<Vec<Info>>,
    /// `[T, width]` float32: the agent's recurrent state after each step, when the
    /// shard stores agent states (zeros for an agent that kept none).
    pub agent_state: Option<Array>,
}

/// A shard's columns as native bytes, row-major per leaf (nulls as zeros).
#[derive(Clone, Debug, Default)]
pub struct ShardColumns {
    /// One buffer per observation leaf (empty for frame leaves).
    pub observations: Vec<Vec<u8>>,
    /// One buffer per action leaf.
    pub actions: Vec<Vec<u8>>,
    /// Rewards.
    pub rewards: Vec<f64>,
    /// Termination flags (0/1).
    pub terminations: Vec<u8>,
    /// Truncation flags (0/1).
    pub truncations: Vec<u8>,
    /// The agents' recurrent states, `state_width` floats a row (zeros where a row has
    /// none or fewer); empty when the shard stores none.
    pub states: Vec<f32>,
    /// Floats per row of `states`: the longest state in the shard.
    pub state_width: usize,
}

/// An open dataset.
pub struct Dataset {
    paths: Paths,
    meta: Metadata,
    shards: Vec<ShardIndex>,
    obs: Layout,
    act: Layout,
}

pub(crate) fn read_metadata(paths: &Paths) -> Result<Metadata> {
    let meta: Metadata = read_json(&paths.metadata())?;
    if meta.format != "rollway" {
        return Err(Error::NotADataset { path: paths.root.clone(), message: format!("format `{}`", meta.format) });
    }
    if meta.format_version > format::FORMAT_VERSION {
        return Err(Error::NotADataset { path: paths.root.clone(), message: format!("format version {} is newer than this rollway ({})", meta.format_version, format::FORMAT_VERSION) });
    }
    Ok(meta)
}

/// Removes what a crash left behind: everything in `.tmp/`, and data files of
/// shards that never got their index file. Only call with the writer lock held.
pub(crate) fn recover(paths: &Paths, meta: Option<&Metadata>) -> Result<Vec<std::path::PathBuf>> {
    let mut removed = Vec::new();
    let mut remove = |p: std::path::PathBuf| -> Result<()> {
        std::fs::remove_file(&p).io("removing", &p)?;
        removed.push(p);
        Ok(())
    };
    if let Ok(rd) = std::fs::read_dir(paths.tmp()) {
        for e in rd.flatten() {
            remove(e.path())?;
        }
    }
    let committed: std::collections::BTreeSet<u32> = list_shards(&paths.index_dir())?.into_iter().collect();
    let mut data_dirs = vec![paths.steps_dir()];
    if let Some(m) = meta {
        data_dirs.extend(m.frame_keys.iter().map(|k| paths.frames_dir(k)));
    }
    for dir in data_dirs {
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if shard_number(&name).is_some_and(|n| !committed.contains(&n)) {
                remove(e.path())?;
            }
        }
    }
    Ok(removed)
}

fn list_shards(dir: &Path) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(v) };
    for e in rd {
        let e = e.io("listing", dir)?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") {
            if let Some(n) = shard_number(&name) {
                v.push(n);
            }
        }
    }
    v.sort_unstable();
    Ok(v)
}

pub(crate) fn load_shard_indexes(paths: &Paths) -> Result<Vec<ShardIndex>> {
    list_shards(&paths.index_dir())?
        .into_iter()
        .map(|n| {
            let p = paths.shard_index(n);
            let idx: ShardIndex = read_json(&p)?;
            if idx.shard != n {
                return Err(Error::Corrupt { path: p, message: format!("says shard {}", idx.shard) });
            }
            let rows: u64 = idx.episodes.iter().map(|e| e.rows).sum();
            if rows != idx.rows {
                return Err(Error::Corrupt { path: p, message: format!("episodes cover {rows} rows, shard has {}", idx.rows) });
            }
            Ok(idx)
        })
        .collect()
}

impl Dataset {
    /// Opens a dataset. If no writer holds it, leftovers of a crash are cleaned up;
    /// if one does, only what is committed is visible.
    pub fn open(dir: &Path) -> Result<Dataset> {
        let paths = Paths::new(dir);
        if !paths.metadata().exists() {
            return Err(Error::NotADataset { path: dir.to_path_buf(), message: format!("no {}", format::METADATA) });
        }
        let meta = read_metadata(&paths)?;
        if let Ok(lock) = File::options().write(true).open(paths.lock()) {
            if lock.try_lock().is_ok() {
                recover(&paths, Some(&meta))?;
            }
        }
        let shards = load_shard_indexes(&paths)?;
        let (obs, act) = meta.env.spaces()?;
        Ok(Dataset { paths, meta, shards, obs: Layout::of(&obs), act: Layout::of(&act) })
    }

    /// Re-reads the index to see episodes committed since opening.
    pub fn refresh(&mut self) -> Result<()> {
        self.shards = load_shard_indexes(&self.paths)?;
        Ok(())
    }

    /// Dataset metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.meta
    }

    /// The dataset root.
    pub fn root(&self) -> &Path {
        &self.paths.root
    }

    /// Shard indexes, in shard order.
    pub fn shards(&self) -> &[ShardIndex] {
        &self.shards
    }

    /// Every committed episode (given-up ones included), in commit order.
    pub fn episodes(&self) -> impl Iterator<Item = &IndexEntry> {
        self.shards.iter().flat_map(|s| &s.episodes)
    }

    /// Committed episodes with data that satisfy `keep`.
    pub fn select<'a>(&'a self, keep: impl Fn(&IndexEntry) -> bool + 'a) -> impl Iterator<Item = &'a IndexEntry> + 'a {
        self.episodes().filter(move |e| e.status != Status::GivenUp && keep(e))
    }

    /// The entry of episode `id`.
    pub fn entry(&self, id: u64) -> Result<&IndexEntry> {
        self.episodes().find(|e| e.episode_id == id).ok_or(Error::NoEpisode(id))
    }

    /// Observation layout.
    pub fn obs_layout(&self) -> &Layout {
        &self.obs
    }

    /// Action layout.
    pub fn act_layout(&self) -> &Layout {
        &self.act
    }

    /// Reads rows `start..start+rows` of shard `n` as one batch.
    pub fn read_rows(&self, n: u32, start: u64, rows: u64) -> Result<RecordBatch> {
        let path = self.paths.shard(n);
        let file = File::open(&path).io("opening", &path)?;
        let corrupt = |m: String| Error::Corrupt { path: path.clone(), message: m };
        // The Parquet decoder is not ours; a malformed file must never take the process down.
        let res = catch_unwind(AssertUnwindSafe(|| -> std::result::Result<RecordBatch, String> {
            let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?;
            let schema = b.schema().clone();
            let sel = RowSelection::from(vec![RowSelector::skip(start as usize), RowSelector::select(rows as usize)]);
            let reader = b.with_row_selection(sel).with_batch_size(rows.max(1) as usize).build().map_err(|e| e.to_string())?;
            let batches = reader.collect::<std::result::Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
            arrow_select_concat(&schema, &batches)
        }));
        let batch = res.map_err(|_| corrupt("the Parquet decoder panicked".into()))?.map_err(corrupt)?;
        if batch.num_rows() as u64 != rows {
            return Err(Error::Corrupt { path: path.clone(), message: format!("{} rows where the index has {rows}", batch.num_rows()) });
        }
        Ok(batch)
    }

    /// Every row of shard `n`, column by column, as native bytes: what a loader
    /// keeps in memory. Frame leaves are left out (open them with [`Dataset::open_frames`]).
    pub fn shard_columns(&self, n: u32) -> Result<ShardColumns> {
        let idx = self.shards.iter().find(|s| s.shard == n).ok_or(Error::NoEpisode(u64::MAX))?;
        let batch = self.read_rows(n, 0, idx.rows)?;
        self.columns_of(&batch, &self.paths.shard(n))
    }

    /// A batch's columns as native bytes (frame leaves empty, nulls as zeros).
    pub(crate) fn columns_of(&self, batch: &RecordBatch, path: &Path) -> Result<ShardColumns> {
        let corrupt = |m: String| Error::Corrupt { path: path.to_path_buf(), message: m };
        let col = |name: &str| batch.column_by_name(name).cloned().ok_or_else(|| corrupt(format!("no column `{name}`")));
        let mut out = ShardColumns::default();
        for leaf in self.obs.leaves() {
            let mut bytes = Vec::new();
            if !is_frame_leaf(leaf) {
                leaf_bytes(col(&column_name("observations", leaf))?.as_ref(), leaf, &mut bytes).map_err(corrupt)?;
            }
            out.observations.push(bytes);
        }
        for leaf in self.act.leaves() {
            let mut bytes = Vec::new();
            leaf_bytes(col(&column_name("actions", leaf))?.as_ref(), leaf, &mut bytes).map_err(corrupt)?;
            out.actions.push(bytes);
        }
        let r = col("rewards")?;
        let r = r.as_any().downcast_ref::<Float64Array>().ok_or_else(|| corrupt("rewards are not float64".into()))?;
        out.rewards = (0..r.len()).map(|i| if r.is_null(i) { 0.0 } else { r.value(i) }).collect();
        for (name, dst) in [("terminations", &mut out.terminations), ("truncations", &mut out.truncations)] {
            let c = col(name)?;
            let b = c.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| corrupt(format!("{name} are not bool")))?;
            *dst = (0..b.len()).map(|i| (!b.is_null(i) && b.value(i)) as u8).collect();
        }
        if let Some(c) = batch.column_by_name(AGENT_STATE) {
            let list = c.as_any().downcast_ref::<ListArray>().ok_or_else(|| corrupt(format!("{AGENT_STATE} is not a list")))?;
            let values = list.values().as_any().downcast_ref::<Float32Array>().ok_or_else(|| corrupt(format!("{AGENT_STATE} is not a list of float32")))?;
            let offsets = list.value_offsets();
            let len = |i: usize| (offsets[i + 1] - offsets[i]) as usize;
            let w = (0..list.len()).map(len).max().unwrap_or(0);
            out.states = vec![0.0; list.len() * w];
            for i in (0..list.len()).filter(|&i| !list.is_null(i)) {
                let from = offsets[i] as usize;
                out.states[i * w..i * w + len(i)].copy_from_slice(&values.values()[from..from + len(i)]);
            }
            out.state_width = w;
        }
        Ok(out)
    }

    /// Opens a shard's frames for a frame key, for random access.
    pub fn open_frames(&self, key: &str, shard: u32) -> Result<Box<dyn frames::FrameShard>> {
        let leaf = self.obs.leaves().iter().find(|l| column_name("observations", l) == key).ok_or_else(|| Error::NotADataset { path: self.paths.root.clone(), message: format!("no frame key `{key}`") })?;
        let media = frames::media(frames::media_name_for(&self.meta.frame_media, key)).ok_or_else(|| Error::NotADataset { path: self.paths.root.clone(), message: format!("unknown frame media `{}`", self.meta.frame_media) })?;
        media.open(&self.frames_path(key, shard), &frames::Geom::of(leaf))
    }

    /// The frames file of a shard for a key.
    pub fn frames_path(&self, key: &str, shard: u32) -> std::path::PathBuf {
        let ext = frames::media(frames::media_name_for(&self.meta.frame_media, key)).map_or("raw", |m| m.ext());
        self.paths.frames(key, shard, ext)
    }

    pub(crate) fn paths(&self) -> &Paths {
        &self.paths
    }
}

fn arrow_select_concat(schema: &arrow_schema::SchemaRef, batches: &[RecordBatch]) -> std::result::Result<RecordBatch, String> {
    match batches {
        [] => Ok(RecordBatch::new_empty(schema.clone())),
        [one] => Ok(one.clone()),
        many => arrow_select::concat::concat_batches(schema, many).map_err(|e| e.to_string()),
    }
}
