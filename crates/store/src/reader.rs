//! Reading a dataset: committed episodes only, even while a writer is running.

use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use arrow_array::{Array as _, BooleanArray, Float32Array, Float64Array, ListArray, RecordBatch};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use rollway_core::{Array, Info, Layout, Leaf, Status};

use crate::check;
use crate::columns::{leaf_bytes, Columns, AGENT_STATE, EXTRAS, POLICY_VERSION};
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
    /// A training rollout's policy extras by name (`log_prob`), each `[T, ...shape]` float32.
    pub extras: Vec<(String, Array)>,
    /// The policy version that chose each action (T), for an episode a training rollout recorded.
    pub policy_version: Option<Vec<u64>>,
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
    /// A training rollout's policy extras (name without the `extras.` prefix), every row
    /// (zeros on final-observation rows).
    pub extras: Vec<rollway_core::StepColumn>,
    /// The acting policy version of every row (0 on final-observation rows); empty
    /// when the shard stores none.
    pub versions: Vec<u64>,
}

/// An open dataset.
pub struct Dataset {
    paths: Paths,
    meta: Metadata,
    shards: Vec<ShardIndex>,
    damaged: Vec<Damaged>,
    obs: Layout,
    act: Layout,
    /// The columns every shard must have, from the dataset's spaces.
    schema: Columns,
    opts: OpenOptions,
}

pub(crate) fn read_metadata(paths: &Paths) -> Result<Metadata> {
    let meta: Metadata = read_json(&paths.metadata())?;
    if meta.format != "rollway" {
        return Err(Error::NotADataset { path: paths.root.clone(), message: format!("format `{}`", meta.format) });
    }
    if meta.format_version == 0 || meta.format_version > format::FORMAT_VERSION {
        return Err(Error::NotADataset {
            path: paths.root.clone(),
            message: format!("format version {} is newer than this rollway ({})", meta.format_version, format::FORMAT_VERSION),
        });
    }
    Ok(meta)
}

/// Shard numbers with an index file named exactly `shard-NNNNNN.json`.
fn list_shards(dir: &Path) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(v);
    };
    for e in rd {
        let e = e.io("listing", dir)?;
        if let Some(n) = shard_number(&e.file_name().to_string_lossy(), "json").filter(|_| e.file_type().is_ok_and(|t| t.is_file())) {
            v.push(n);
        }
    }
    v.sort_unstable();
    Ok(v)
}

/// A committed shard whose index cannot be trusted: named, never silently skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// The shard.
    pub shard: u32,
    /// Its index file.
    pub path: std::path::PathBuf,
    /// What is wrong with it.
    pub message: String,
}

/// Reads every index file, checking each against itself and the metadata; a shard
/// whose index is unreadable or inconsistent is returned as damaged instead.
pub(crate) fn load_shard_indexes(paths: &Paths, meta: &Metadata) -> Result<(Vec<ShardIndex>, Vec<Damaged>)> {
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for n in list_shards(&paths.index_dir())? {
        let path = paths.shard_index(n);
        let checked = match read_json::<ShardIndex>(&path) {
            Ok(idx) => check::index(paths, meta, n, &idx).map(|()| idx),
            Err(Error::Corrupt { message, .. }) => Err(message),
            Err(e) => return Err(e),
        };
        match checked {
            Ok(idx) => good.push(idx),
            Err(message) => bad.push(Damaged { shard: n, path, message }),
        }
    }
    Ok((good, bad))
}

/// The final paths of a committed shard's data files: those its index lists
/// (version 2), else the names version 1 gave them; none for a shard without rows.
pub(crate) fn shard_files(paths: &Paths, meta: &Metadata, idx: &ShardIndex) -> Vec<std::path::PathBuf> {
    if !idx.files.is_empty() {
        return idx.files.iter().filter_map(|f| paths.resolve(&f.path)).collect();
    }
    if idx.rows == 0 {
        return vec![];
    }
    format::expected_files(paths, meta, idx.shard)
}

/// How [`Dataset::open_with`] treats shards whose index is damaged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Leave damaged shards out (listed by [`Dataset::damaged`]) instead of failing.
    pub skip_damaged: bool,
}

impl Dataset {
    /// Opens a dataset: committed episodes only, whether or not a writer is running.
    /// Reading never changes a file (crash debris is a writer's to clean up). Fails,
    /// naming the shard, if any shard's index is damaged.
    pub fn open(dir: &Path) -> Result<Dataset> {
        Self::open_with(dir, OpenOptions::default())
    }

    /// [`Dataset::open`], optionally leaving damaged shards out.
    pub fn open_with(dir: &Path, opts: OpenOptions) -> Result<Dataset> {
        let paths = Paths::new(dir);
        if !paths.metadata().exists() {
            return Err(Error::NotADataset { path: dir.to_path_buf(), message: format!("no {}", format::METADATA) });
        }
        let meta = read_metadata(&paths)?;
        let (obs, act) = meta.env.spaces()?;
        let (obs, act) = (Layout::of(&obs), Layout::of(&act));
        let schema = Columns::new(obs.clone(), act.clone(), false);
        let mut ds = Dataset { paths, meta, shards: vec![], damaged: vec![], obs, act, schema, opts };
        ds.refresh()?;
        Ok(ds)
    }

    /// Re-reads the index to see episodes committed since opening.
    pub fn refresh(&mut self) -> Result<()> {
        let (shards, damaged) = load_shard_indexes(&self.paths, &self.meta)?;
        if let (Some(d), false) = (damaged.first(), self.opts.skip_damaged) {
            let more = if damaged.len() > 1 { format!(" (and {} more damaged shard(s))", damaged.len() - 1) } else { String::new() };
            return Err(Error::Corrupt {
                path: d.path.clone(),
                message: format!("{}{more}; `rollway verify` lists the damage, --skip-damaged reads the rest", d.message),
            });
        }
        (self.shards, self.damaged) = (shards, damaged);
        Ok(())
    }

    /// Shards left out because their index is damaged (only with `skip_damaged`).
    pub fn damaged(&self) -> &[Damaged] {
        &self.damaged
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

    /// Where shard `n`'s Parquet file is now: in `steps/`, or still staged when its
    /// index has just committed and the writer has not published it yet.
    pub fn shard_path(&self, n: u32) -> std::path::PathBuf {
        self.paths.located(&self.paths.shard(n))
    }

    /// Reads rows `start..start+rows` of shard `n` as one batch, after checking the
    /// shard's columns against the dataset's spaces.
    pub fn read_rows(&self, n: u32, start: u64, rows: u64) -> Result<RecordBatch> {
        let (path, file) = self.paths.open_located(&self.paths.shard(n), |p| File::open(p).io("opening", p))?;
        let corrupt = |m: String| Error::Corrupt { path: path.clone(), message: m };
        // The Parquet decoder is not ours; a malformed file must never take the process down.
        let res = catch_unwind(AssertUnwindSafe(|| -> std::result::Result<RecordBatch, String> {
            let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| e.to_string())?;
            let schema = b.schema().clone();
            self.schema.check(&schema)?;
            let total = b.metadata().file_metadata().num_rows() as u64;
            if start.checked_add(rows).is_none_or(|end| end > total) {
                return Err(format!("rows {start}..{} asked for, the file has {total}", start.saturating_add(rows)));
            }
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
        self.columns_of(&batch, &self.shard_path(n))
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
            let values = list
                .values()
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| corrupt(format!("{AGENT_STATE} is not a list of float32")))?;
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
        step_columns(batch, &mut out).map_err(corrupt)?;
        Ok(out)
    }

    /// The observation leaf stored under frame key `key` (`observations/rgb`):
    /// its shape is the frames' height × width × channels.
    pub fn frame_leaf(&self, key: &str) -> Option<&Leaf> {
        self.obs.leaves().iter().find(|l| column_name("observations", l) == key)
    }

    /// Opens a shard's frames for a frame key, for random access.
    pub fn open_frames(&self, key: &str, shard: u32) -> Result<Box<dyn frames::FrameShard>> {
        let leaf = self
            .frame_leaf(key)
            .ok_or_else(|| Error::NotADataset { path: self.paths.root.clone(), message: format!("no frame key `{key}`") })?;
        let media = frames::media(frames::media_name_for(&self.meta.frame_media, key)).ok_or_else(|| Error::NotADataset {
            path: self.paths.root.clone(),
            message: format!("unknown frame media `{}`", self.meta.frame_media),
        })?;
        let geom = frames::Geom::of(leaf);
        let ext = media.ext();
        self.paths.open_located(&self.paths.frames(key, shard, ext), |p| media.open(p, &geom)).map(|(_, f)| f)
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

/// A training rollout's columns (`extras.*`, `policy_version`), where the shard has them.
fn step_columns(batch: &RecordBatch, out: &mut ShardColumns) -> std::result::Result<(), String> {
    let schema = batch.schema();
    for (field, col) in schema.fields().iter().zip(batch.columns()) {
        let Some(name) = field.name().strip_prefix(EXTRAS) else { continue };
        // The shape is kept in the field's metadata; a list without it is one axis.
        let shape = match field.metadata().get("rollway:shape") {
            Some(s) => s
                .trim_matches(['[', ']'])
                .split(',')
                .filter(|x| !x.trim().is_empty())
                .map(|x| x.trim().parse::<usize>())
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| format!("column `{}`: shape {s}: {e}", field.name()))?,
            None => match field.data_type() {
                arrow_schema::DataType::FixedSizeList(_, n) => vec![*n as usize],
                _ => vec![],
            },
        };
        let kind = rollway_core::LeafKind::Box { low: vec![], high: vec![] };
        let leaf = Leaf { path: name.to_string(), dtype: rollway_core::DType::F32, shape: shape.clone(), offset: 0, kind };
        let mut bytes = Vec::new();
        leaf_bytes(col.as_ref(), &leaf, &mut bytes).map_err(|e| format!("column `{}`: {e}", field.name()))?;
        // `leaf_bytes` gives native bytes, as for every leaf (the writer's byte path reversed).
        let values = bytes.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect();
        out.extras.push(rollway_core::StepColumn { name: name.to_string(), shape, values });
    }
    if let Some(c) = batch.column_by_name(POLICY_VERSION) {
        let v = c.as_any().downcast_ref::<arrow_array::UInt64Array>().ok_or_else(|| format!("{POLICY_VERSION} is not uint64"))?;
        out.versions = (0..v.len()).map(|i| if v.is_null(i) { 0 } else { v.value(i) }).collect();
    }
    Ok(())
}
