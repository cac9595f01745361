//! rollway dataset → LeRobot v3.0 directory. Data rows are written here, as
//! episodes are read; videos go through [`super::videos`], on the encoder pool.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, ListArray, RecordBatch, StringArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rollway_core::DType;
use rollway_store::{Dataset, EpisodeData};
use serde_json::{json, Map, Value as Json};

use super::meta::{self, EpisodeMeta, RollwayMeta};
use super::plan::Plan;
use super::stats::{self, Stats};
use super::videos::{Settings, Videos};
use super::{ExportOptions, ExportReport, AGENT_STATE, CODEBASE_VERSION, FINAL_OBSERVATION};
use crate::columns::{self, Writer};
use crate::error::IoContext;
use crate::staging::{self, Staging};
use crate::{Error, Result};

/// Exports the rollway dataset at `src` as the LeRobot v3.0 dataset directory `out`.
///
/// Episodes with data are written in episode-id order as `episode_index` 0, 1, …;
/// given-up episodes are left out. Everything is built in a hidden sibling of
/// `out` and renamed into place when complete, so a failed export leaves nothing
/// (and an existing `out` replaced with `force` stays intact on failure).
/// `progress(done, total)` is called after each episode.
pub fn export(src: &Path, out: &Path, opts: &ExportOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<ExportReport> {
    let bad_opt = |m: &str| Err(Error::Unsupported { path: out.to_path_buf(), message: m.into() });
    if opts.fps == 0
        || opts.chunks_size == 0
        || opts.data_file_size_in_mb == 0
        || opts.video_file_size_in_mb == 0
        || opts.episodes_per_file == Some(0)
    {
        return bad_opt("fps, chunks_size, file sizes and episodes_per_file must be positive");
    }
    let settings = Settings::of(opts).map_err(|message| Error::Unsupported { path: out.to_path_buf(), message })?;
    let ds = Dataset::open(src).map_err(|source| Error::Store { path: src.to_path_buf(), source })?;
    staging::refuse_overlap(src, out)?;
    staging::check_replaceable(out, opts.force, "LeRobot", "meta/info.json with a codebase_version", is_export)?;
    let (obs, act) = (ds.obs_layout().clone(), ds.act_layout().clone());
    let plan = Plan::new(&obs, &act, None).map_err(|message| Error::Unsupported { path: src.to_path_buf(), message })?;
    let (staging, out_abs) = Staging::beside(out, "export into a named directory")?;
    let mut report = Exporter::new(&ds, src, staging.path(), opts, plan, settings)?.run(progress)?;
    report.out = out.to_path_buf();
    report.bytes = staging::dir_bytes(staging.path());
    staging::replace_dir(staging, &out_abs)?;
    Ok(report)
}

/// Whether `dir` is a LeRobot dataset (ours or not): what `force` may replace.
fn is_export(dir: &Path) -> bool {
    let info = std::fs::read(dir.join(meta::INFO)).ok().and_then(|b| serde_json::from_slice::<Json>(&b).ok());
    info.is_some_and(|i| i.get("codebase_version").is_some_and(Json::is_string))
}

/// The data file being filled.
struct DataFile {
    w: Writer,
    path: PathBuf,
    frames: u64,
    episodes: u64,
}

/// One row of `meta/episodes/…parquet`.
struct EpisodeRow {
    length: u64,
    data: (u64, u64),
    from: u64,
    /// Filled in as the episode's videos settle, in key order.
    videos: Vec<super::videos::Placed>,
    stats: Vec<Stats>,
}

struct Exporter<'a> {
    ds: &'a Dataset,
    src: &'a Path,
    root: &'a Path,
    opts: &'a ExportOptions,
    plan: Plan,
    task: String,
    reward: DType,
    infos: bool,
    /// Floats of agent state per frame (0: the dataset stores none).
    state_width: usize,
    schema: SchemaRef,
    /// Names of the stats features, in the order of `EpisodeRow::stats`.
    stat_names: Vec<String>,
    data: Option<DataFile>,
    data_at: (u64, u64),
    data_files: u64,
    videos: Videos,
    rows: Vec<EpisodeRow>,
    frames: u64,
}

impl<'a> Exporter<'a> {
    fn new(
        ds: &'a Dataset,
        src: &'a Path,
        root: &'a Path,
        opts: &'a ExportOptions,
        plan: Plan,
        settings: Settings,
    ) -> Result<Exporter<'a>> {
        let store = |source| Error::Store { path: src.to_path_buf(), source };
        // One pass over the shards' columns, stopping once both are known. Rewards are
        // float32 by LeRobot's convention, unless that would change one. The agent-state
        // width is that of the first shard storing states (shards without any have none).
        let (mut reward, mut state_width) = (DType::F32, 0);
        for s in ds.shards() {
            if reward == DType::F64 && state_width > 0 {
                break;
            }
            let c = ds.shard_columns(s.shard).map_err(store)?;
            if c.rewards.iter().any(|&r| (r as f32) as f64 != r && !r.is_nan()) {
                reward = DType::F64;
            }
            if state_width == 0 {
                state_width = c.state_width;
            }
        }
        // Every shard of a dataset has the same columns; the first row says whether infos are kept.
        let infos = match ds.shards().first() {
            Some(s) => ds.read_rows(s.shard, 0, s.rows.min(1)).map_err(store)?.column_by_name("infos").is_some(),
            None => false,
        };
        let mut fields: Vec<Field> = Vec::new();
        let mut stat_names = Vec::new();
        for c in plan.obs.iter().filter(|c| c.video.is_none()).chain(&plan.act) {
            fields.push(Field::new(&c.name, columns::feature_type(c.dtype, c.len), false));
        }
        fields.push(Field::new("next.reward", rollway_store::arrow_type(reward), false));
        for f in ["next.done", "next.terminated", "next.truncated", FINAL_OBSERVATION] {
            fields.push(Field::new(f, DataType::Boolean, false));
        }
        stat_names.extend(fields.iter().map(|f| f.name().clone()));
        if infos {
            fields.push(Field::new("rollway.info", DataType::Utf8, true));
        }
        if state_width > 0 {
            fields.push(Field::new(AGENT_STATE, columns::feature_type(DType::F32, state_width), false));
            stat_names.push(AGENT_STATE.to_string());
        }
        for (name, dtype) in meta::DEFAULTS {
            fields.push(Field::new(name, if dtype == "float32" { DataType::Float32 } else { DataType::Int64 }, false));
            stat_names.push(name.to_string());
        }
        stat_names.extend(plan.videos().map(|c| c.name.clone()));
        let videos = Videos::new(root, plan.videos().cloned().collect(), settings, opts)?;
        Ok(Exporter {
            ds,
            src,
            root,
            opts,
            task: opts.task.clone().unwrap_or_else(|| ds.metadata().env.id.clone()),
            reward,
            infos,
            state_width,
            schema: Arc::new(Schema::new(fields)),
            stat_names,
            plan,
            data: None,
            data_at: (0, 0),
            data_files: 0,
            videos,
            rows: vec![],
            frames: 0,
        })
    }

    fn run(mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<ExportReport> {
        let ds = self.ds;
        let mut reader = ds.episode_reader();
        if reader.entries().is_empty() {
            return Err(Error::Unsupported { path: self.src.to_path_buf(), message: "it has no episodes with data to export".into() });
        }
        let total = reader.entries().len() as u64;
        let mut episodes = Vec::with_capacity(total as usize);
        let mut steps = 0;
        for k in 0..reader.entries().len() {
            let ep = reader.read(k).map_err(|source| Error::Store { path: self.src.to_path_buf(), source })?;
            steps += ep.entry.length;
            let e = ep.entry.clone();
            self.episode(k as u64, ep)?;
            episodes.push(EpisodeMeta {
                episode_id: e.episode_id,
                seed: e.seed,
                steps: e.length,
                status: e.status,
                labels: e.labels.clone(),
                info: e.info.clone(),
            });
            progress(k as u64 + 1, total);
        }
        self.close_data()?;
        let rows = &mut self.rows;
        self.videos.finish(&mut |k, placed, stats| {
            rows[k].videos.push(placed);
            rows[k].stats.push(stats);
        })?;
        self.write_meta(episodes)?;
        Ok(ExportReport {
            out: PathBuf::new(),
            episodes: total,
            steps,
            frames: self.frames,
            given_up: self.ds.episodes().count() as u64 - total,
            data_files: self.data_files,
            video_files: self.videos.files_written(),
            video_keys: self.videos.cols().map(|c| c.name.clone()).collect(),
            bytes: 0,
        })
    }

    /// Writes one episode's T+1 frames: its data rows, its video frames, its stats.
    fn episode(&mut self, k: u64, mut ep: EpisodeData) -> Result<()> {
        let t = ep.entry.length as usize;
        let n = t + 1;
        let mut cols: Vec<ArrayRef> = Vec::new();
        let mut stats: Vec<Stats> = Vec::new();
        let mut add = |cols: &mut Vec<ArrayRef>, dtype: DType, len: usize, bytes: &[u8]| {
            stats.push(Stats::of_rows(n, len, |r, j| dtype.read_f64(&bytes[r * len * dtype.size()..], j)));
            cols.push(columns::column(dtype, len, bytes));
        };
        for c in self.plan.obs.iter().filter(|c| c.video.is_none()) {
            add(&mut cols, c.dtype, c.len, &ep.observations[c.leaf].1.data);
        }
        for c in &self.plan.act {
            // The final-observation frame takes no action: zeros.
            let mut bytes = ep.actions[c.leaf].1.data.clone();
            bytes.resize(n * c.bytes(), 0);
            add(&mut cols, c.dtype, c.len, &bytes);
        }
        let rewards: Vec<f64> = ep.rewards.iter().copied().chain([0.0]).collect();
        let reward_bytes: Vec<u8> = match self.reward {
            DType::F32 => rewards.iter().flat_map(|&r| (r as f32).to_ne_bytes()).collect(),
            _ => rewards.iter().flat_map(|r| r.to_ne_bytes()).collect(),
        };
        add(&mut cols, self.reward, 1, &reward_bytes);
        let flags = |head: &[bool], last: bool| -> Vec<u8> { head.iter().copied().chain([last]).map(u8::from).collect() };
        add(&mut cols, DType::Bool, 1, &flags(&ep.terminations, true));
        add(&mut cols, DType::Bool, 1, &flags(&ep.terminations, false));
        add(&mut cols, DType::Bool, 1, &flags(&ep.truncations, false));
        add(&mut cols, DType::Bool, 1, &flags(&vec![false; t], true));
        if self.infos {
            let infos = ep.infos.as_ref().ok_or_else(|| Error::Unsupported {
                path: self.src.to_path_buf(),
                message: format!("episode {} has no infos where others do", ep.entry.episode_id),
            })?;
            cols.push(Arc::new(StringArray::from_iter(infos.iter().map(|i| Some(i.to_json())))));
        }
        if self.state_width > 0 {
            add(&mut cols, DType::F32, self.state_width, &self.states(&ep, n)?);
        }
        let fps = f64::from(self.opts.fps);
        let ts: Vec<f32> = (0..n).map(|i| (i as f64 / fps) as f32).collect();
        add(&mut cols, DType::F32, 1, bytemuck::cast_slice(&ts));
        let ints = |f: &dyn Fn(usize) -> i64| -> Vec<u8> { (0..n).flat_map(|i| f(i).to_ne_bytes()).collect() };
        let from = self.frames;
        add(&mut cols, DType::I64, 1, &ints(&|i| i as i64));
        add(&mut cols, DType::I64, 1, &ints(&|_| k as i64));
        add(&mut cols, DType::I64, 1, &ints(&|i| (from + i as u64) as i64));
        add(&mut cols, DType::I64, 1, &ints(&|_| 0));
        let batch = RecordBatch::try_new(self.schema.clone(), cols)
            .map_err(|e| Error::Parquet { path: self.root.to_path_buf(), message: format!("episode {k}: {e}") })?;
        let data = self.write_data(&batch)?;
        self.rows.push(EpisodeRow { length: n as u64, data, from, videos: vec![], stats });
        self.frames += n as u64;
        // The frames move to the encoder pool; the rest of the episode is written.
        let leaves: Vec<usize> = self.videos.cols().map(|c| c.leaf).collect();
        let pixels = leaves.into_iter().map(|l| std::mem::take(&mut ep.observations[l].1.data)).collect();
        let rows = &mut self.rows;
        self.videos.submit(k as usize, n, pixels, &mut |k, placed, stats| {
            rows[k].videos.push(placed);
            rows[k].stats.push(stats);
        })
    }

    /// The episode's agent states as `n` frames of `state_width` floats: zeros on the
    /// final-observation frame, and for an episode that stored none.
    fn states(&self, ep: &EpisodeData, n: usize) -> Result<Vec<u8>> {
        let w = self.state_width;
        let mut bytes = match &ep.agent_state {
            Some(a) if a.shape.get(1) != Some(&w) => {
                return Err(Error::Unsupported {
                    path: self.src.to_path_buf(),
                    message: format!("episode {}: agent state of shape {:?} where others have width {w}", ep.entry.episode_id, a.shape),
                })
            }
            Some(a) => a.data.clone(),
            None => vec![],
        };
        bytes.resize(n * w * 4, 0);
        Ok(bytes)
    }

    fn data_path(&self, at: (u64, u64)) -> PathBuf {
        self.root.join(meta::fill(meta::DATA_PATH, None, at.0, at.1).expect("our template"))
    }

    /// Appends an episode's rows as one row group, starting a new file first when
    /// the current one is full (LeRobot's size estimate: bytes per frame so far).
    fn write_data(&mut self, batch: &RecordBatch) -> Result<(u64, u64)> {
        let limit = self.opts.data_file_size_in_mb * 1_000_000;
        if let Some(d) = &self.data {
            let est = d.w.bytes() + d.w.bytes() / d.frames.max(1) * batch.num_rows() as u64;
            if est >= limit || self.opts.episodes_per_file.is_some_and(|m| d.episodes >= m) {
                self.close_data()?;
                self.data_at = meta::next_file(self.data_at, self.opts.chunks_size);
            }
        }
        if self.data.is_none() {
            let path = self.data_path(self.data_at);
            let dir = path.parent().expect("templated paths have directories");
            std::fs::create_dir_all(dir).io("creating", dir)?;
            let w = Writer::create(&path, self.schema.clone()).map_err(|message| Error::Parquet { path: path.clone(), message })?;
            self.data = Some(DataFile { w, path, frames: 0, episodes: 0 });
        }
        let d = self.data.as_mut().expect("opened above");
        d.w.write(batch).map_err(|message| Error::Parquet { path: d.path.clone(), message })?;
        d.frames += batch.num_rows() as u64;
        d.episodes += 1;
        Ok(self.data_at)
    }

    fn close_data(&mut self) -> Result<()> {
        if let Some(d) = self.data.take() {
            d.w.close().map_err(|message| Error::Parquet { path: d.path, message })?;
            self.data_files += 1;
        }
        Ok(())
    }

    fn write_json(&self, rel: &str, j: &Json) -> Result<()> {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().expect("meta/")).io("creating", &p)?;
        std::fs::write(&p, serde_json::to_string_pretty(j).expect("JSON serializes") + "\n").io("writing", &p)
    }

    fn write_parquet(&self, rel: &str, batch: &RecordBatch) -> Result<()> {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().expect("meta/")).io("creating", &p)?;
        columns::write_file(&p, batch).map(|_| ()).map_err(|message| Error::Parquet { path: p, message })
    }

    fn write_meta(&self, episodes: Vec<EpisodeMeta>) -> Result<()> {
        let n = self.rows.len() as u64;
        let mut features = Map::new();
        for f in self.schema.fields() {
            let (dtype, shape) = match f.data_type() {
                DataType::FixedSizeList(item, k) => (dtype_name(item.data_type()), *k as usize),
                DataType::Utf8 => ("string", 1),
                other => (dtype_name(other), 1),
            };
            features.insert(f.name().clone(), json!({"dtype": dtype, "shape": [shape], "names": null}));
        }
        for c in self.videos.cols() {
            let mut f = c.feature();
            let [h, w, _] = c.video.expect("video columns have a frame shape");
            f["info"] = self.videos.settings().info(h, w);
            features.insert(c.name.clone(), f);
        }
        let info = json!({
            "codebase_version": CODEBASE_VERSION,
            "robot_type": self.opts.robot_type,
            "total_episodes": n,
            "total_frames": self.frames,
            "total_tasks": 1,
            "chunks_size": self.opts.chunks_size,
            "data_files_size_in_mb": self.opts.data_file_size_in_mb,
            "video_files_size_in_mb": self.opts.video_file_size_in_mb,
            "fps": self.opts.fps,
            "splits": {"train": format!("0:{n}")},
            "data_path": meta::DATA_PATH,
            "video_path": if self.videos.cols().next().is_none() { Json::Null } else { json!(meta::VIDEO_PATH) },
            "features": features,
        });
        self.write_json(meta::INFO, &info)?;
        let mut total: Vec<Stats> = self.rows[0].stats.clone();
        for r in &self.rows[1..] {
            total.iter_mut().zip(&r.stats).for_each(|(a, b)| a.merge(b));
        }
        let stats: Map<String, Json> = self.stat_names.iter().zip(&total).map(|(k, s)| (k.clone(), s.json())).collect();
        self.write_json(meta::STATS, &Json::Object(stats))?;
        self.write_parquet(meta::TASKS, &meta::tasks_batch(std::slice::from_ref(&self.task)))?;
        let episodes_rel = meta::fill(meta::EPISODES_PATH, None, 0, 0).expect("our template");
        self.write_parquet(&episodes_rel, &self.episodes_batch())?;
        let mut agents: Vec<&str> = Vec::new();
        for r in &self.ds.metadata().runs {
            if !agents.contains(&r.agent.as_str()) {
                agents.push(&r.agent);
            }
        }
        let rw = RollwayMeta {
            rollway_lerobot: 1,
            env: self.ds.metadata().env.clone(),
            agent: agents.join(", "),
            columns: self.plan.names(),
            episodes,
        };
        self.write_json(meta::ROLLWAY, &serde_json::to_value(&rw).expect("metadata serializes"))
    }

    /// `meta/episodes/chunk-000/file-000.parquet`: one row per episode.
    fn episodes_batch(&self) -> RecordBatch {
        let rows = &self.rows;
        let mut cols: Vec<(String, ArrayRef)> = Vec::new();
        let int = |f: &dyn Fn(&EpisodeRow) -> u64| -> ArrayRef { Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| f(r) as i64))) };
        cols.push(("episode_index".into(), Arc::new(Int64Array::from_iter_values(0..rows.len() as i64))));
        let tasks = StringArray::from_iter_values(rows.iter().map(|_| self.task.as_str()));
        let item = Arc::new(Field::new("item", DataType::Utf8, true));
        cols.push((
            "tasks".into(),
            Arc::new(ListArray::new(item, OffsetBuffer::from_lengths(rows.iter().map(|_| 1)), Arc::new(tasks), None)),
        ));
        cols.push(("length".into(), int(&|r| r.length)));
        cols.push(("data/chunk_index".into(), int(&|r| r.data.0)));
        cols.push(("data/file_index".into(), int(&|r| r.data.1)));
        cols.push(("dataset_from_index".into(), int(&|r| r.from)));
        cols.push(("dataset_to_index".into(), int(&|r| r.from + r.length)));
        for (v, c) in self.videos.cols().enumerate() {
            let key = &c.name;
            cols.push((format!("videos/{key}/chunk_index"), int(&|r| r.videos[v].0 .0)));
            cols.push((format!("videos/{key}/file_index"), int(&|r| r.videos[v].0 .1)));
            cols.push((
                format!("videos/{key}/from_timestamp"),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.videos[v].1))),
            ));
            cols.push((format!("videos/{key}/to_timestamp"), Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.videos[v].2)))));
        }
        for (i, name) in self.stat_names.iter().enumerate() {
            let shape = rows[0].stats[i].shape.clone();
            for stat in stats::NAMES {
                let vals: Vec<Vec<f64>> = rows.iter().map(|r| r.stats[i].get(stat)).collect();
                cols.push((format!("stats/{name}/{stat}"), columns::f64_lists(&vals, &shape)));
            }
            let counts = Int64Array::from_iter_values(rows.iter().map(|r| r.stats[i].count as i64));
            let item = Arc::new(Field::new("item", DataType::Int64, true));
            cols.push((
                format!("stats/{name}/count"),
                Arc::new(ListArray::new(item, OffsetBuffer::from_lengths(rows.iter().map(|_| 1)), Arc::new(counts), None)),
            ));
        }
        cols.push(("meta/episodes/chunk_index".into(), int(&|_| 0)));
        cols.push(("meta/episodes/file_index".into(), int(&|_| 0)));
        let schema = Schema::new(cols.iter().map(|(n, a)| Field::new(n, a.data_type().clone(), true)).collect::<Vec<_>>());
        RecordBatch::try_new(Arc::new(schema), cols.into_iter().map(|(_, a)| a).collect()).expect("columns of one length each")
    }
}

fn dtype_name(t: &DataType) -> &'static str {
    DType::ALL.into_iter().find(|&d| &rollway_store::arrow_type(d) == t).map_or("string", DType::name)
}
