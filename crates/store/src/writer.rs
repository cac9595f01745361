//! The dataset writer: a thread that takes finished episodes through a bounded
//! queue, buffers them and commits them shard by shard ([`crate::shards`] holds the
//! thread and the commit protocol). Here: opening a dataset to write — as its one
//! writer (`.lock` held exclusive, cleaning up after crashes on open) or as one of
//! many ([`DatasetWriter::join`], [`crate::shared`]) — and the handle the run sends
//! episodes through. `write` blocks while the queue is full, which is the run's
//! backpressure: a slow disk slows the run instead of filling memory.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Sender};
use rollway_core::{EnvSpec, EpisodeResult, Layout, Recycler, Status};
use rollway_media::pool::Pool;

use crate::columns::{traj, Columns};
pub use crate::config::{WriteStats, WriterConfig};
use crate::error::IoContext;
use crate::format::require_dataset;
use crate::format::{self, create_dir_durable, is_frame_leaf, require_real_dir, EnvInfo, IndexEntry, Metadata, Paths, RunInfo};
use crate::frames::{self, Geom};
use crate::reader::load_shard_indexes;
use crate::recover;
use crate::shards::{write_metadata, FrameLeaf, Msg, Numbers, WriterThread};
use crate::{Error, Result};

/// What a run needs to know to continue a killed run.
#[derive(Clone, Debug)]
pub struct ResumePoint {
    /// The run being continued.
    pub run: RunInfo,
    /// Run index of the first episode not committed.
    pub next_index: u64,
    /// Committed episodes of the run (completed or given up).
    pub episodes: u64,
    /// Steps in those episodes.
    pub steps: u64,
}

/// Writes episodes into a dataset directory from any thread.
pub struct DatasetWriter {
    tx: Option<Sender<Msg>>,
    handle: Option<JoinHandle<Result<WriteStats>>>,
    failed: Arc<Mutex<Option<String>>>,
    run: RunInfo,
    root: PathBuf,
    recycle: Recycler,
}

/// The open, locked dataset a writer works on.
pub(crate) struct Opened {
    pub(crate) paths: Paths,
    pub(crate) meta: Option<Metadata>,
    numbers: Numbers,
    pub(crate) entries: Vec<IndexEntry>,
}

/// Whether `dir` holds nothing a run recorded: it is missing, or it has no
/// metadata and nothing but a writer's own scaffolding (hidden entries, empty
/// `steps/` and `index/`). A run killed before it set up its dataset (its first
/// second or so: the env's spaces, the calibration), or while setting it up,
/// leaves that; a new run may start there, and nothing is lost by it.
pub fn nothing_recorded(dir: &Path) -> bool {
    let paths = Paths::new(dir);
    let Ok(entries) = std::fs::read_dir(dir) else { return !dir.exists() };
    let empty = |p: &Path| std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none());
    !paths.metadata().exists()
        && entries.filter_map(|e| e.ok()).all(|e| {
            let path = e.path();
            e.file_name().to_string_lossy().starts_with('.') || ((path == paths.steps_dir() || path == paths.index_dir()) && empty(&path))
        })
}

pub(crate) fn open_locked(dir: &Path) -> Result<Opened> {
    create_dir_durable(dir)?;
    let paths = Paths::new(dir);
    let lock = crate::lock::lock(&paths)?;
    let meta = if paths.metadata().exists() {
        Some(crate::reader::read_metadata(&paths)?)
    } else {
        if !nothing_recorded(dir) {
            return Err(Error::NotADataset { path: dir.to_path_buf(), message: format!("it has files but no {}", format::METADATA) });
        }
        None
    };
    require_real_dir(&paths.tmp())?;
    for d in [paths.tmp(), paths.publish_dir(), paths.steps_dir(), paths.index_dir()] {
        create_dir_durable(&d)?;
    }
    let (mut next_shard, mut entries) = (0, vec![]);
    if let Some(m) = &meta {
        let (shards, damaged) = load_shard_indexes(&paths, m)?;
        if let Some(d) = damaged.first() {
            return Err(Error::Corrupt {
                path: d.path.clone(),
                message: format!("{}; a writer will not add to a damaged dataset (`rollway verify` lists the damage)", d.message),
            });
        }
        let scan = recover::recover(&paths, m, &shards, &[])?;
        crate::shared::clear(&paths)?;
        next_shard = scan.highest.map_or(0, |h| h + 1);
        entries = shards.into_iter().flat_map(|s| s.episodes).collect();
    }
    Ok(Opened { paths, meta, numbers: Numbers::Own { next: next_shard, _lock: lock }, entries })
}

/// Creates the folders a writer puts frame files in (final and staged) durably.
fn frame_dirs(paths: &Paths, meta: &Metadata) -> Result<()> {
    for key in &meta.frame_keys {
        create_dir_durable(&paths.frames_dir(key))?;
        create_dir_durable(&paths.staged(&paths.frames_dir(key)))?;
    }
    create_dir_durable(&paths.staged(&paths.steps_dir()))
}

/// A run about to be added.
struct NewRun<'a> {
    agent: &'a str,
    seed: u64,
    config: serde_json::Value,
    first_episode_id: u64,
}

/// Opens `dir` (locked) to add a run of `spec`'s env: frame media checked, the
/// dataset's metadata read (or made, for a new dataset), its env and spaces matched.
fn open_for_run(dir: &Path, spec: &EnvSpec, cfg: &WriterConfig) -> Result<(Opened, Metadata)> {
    let obs = Layout::of(&spec.observation_space);
    frames::check_setting(&cfg.frame_media, &format::frame_keys(&obs))
        .map_err(|m| Error::Unsupported(format!("frame_media `{}`: {m}", cfg.frame_media)))?;
    for leaf in obs.leaves().iter().filter(|l| is_frame_leaf(l)) {
        let key = format::column_name("observations", leaf);
        let media = frames::media_for(&cfg.frame_media, &key, &cfg.frame_options).expect("checked above");
        media.supports(&Geom::of(leaf)).map_err(|e| Error::Unsupported(format!("{key}: {e}")))?;
    }
    let o = open_locked(dir)?;
    let env = EnvInfo::of(spec);
    let meta = match o.meta.clone() {
        Some(m) => {
            if m.env.id != env.id || m.env.spaces()? != (spec.observation_space.clone(), spec.action_space.clone()) {
                return Err(Error::Mismatch {
                    path: dir.to_path_buf(),
                    message: format!("it holds {} with other spaces than {}", m.env.id, env.id),
                });
            }
            m
        }
        None => Metadata {
            format: "rollway".into(),
            format_version: format::FORMAT_VERSION,
            env,
            frame_keys: format::frame_keys(&obs),
            frame_media: cfg.frame_media.clone(),
            runs: vec![],
            counts: Default::default(),
        },
    };
    Ok((o, meta))
}

impl DatasetWriter {
    /// Creates a dataset at `dir`, or appends a new run to the one there (same env
    /// and spaces required). `config` describes the run for `resume`.
    pub fn create(
        dir: &Path,
        spec: &EnvSpec,
        agent: &str,
        seed: u64,
        config: serde_json::Value,
        cfg: WriterConfig,
    ) -> Result<DatasetWriter> {
        let (o, meta) = open_for_run(dir, spec, &cfg)?;
        let first_episode_id = o.entries.iter().map(|e| e.episode_id + 1).max().unwrap_or(0);
        Self::add_run(o, meta, NewRun { agent, seed, config, first_episode_id }, cfg)
    }

    /// Appends a new run to the dataset at `dir` (created if there is none) that goes on
    /// numbering its episodes as the last run did: it shares the last run's
    /// `first_episode_id`, so its run indices are that run's episode numbers (a
    /// resumed training run's rollout continues each env slot's numbering, and seeds,
    /// past what its last life committed; which indices it uses is the caller's to
    /// keep apart). `check` sees the last run (`None` in a new dataset) and every
    /// committed episode's index entry before anything is written; what it refuses
    /// is an [`Error::Mismatch`], what it returns comes back with the writer.
    pub fn continue_runs<T>(
        dir: &Path,
        spec: &EnvSpec,
        new: (&str, u64, serde_json::Value),
        cfg: WriterConfig,
        check: impl FnOnce(Option<&RunInfo>, &[IndexEntry]) -> std::result::Result<T, String>,
    ) -> Result<(DatasetWriter, T)> {
        let (o, meta) = open_for_run(dir, spec, &cfg)?;
        let last = meta.runs.last();
        let seen = check(last, &o.entries).map_err(|message| Error::Mismatch { path: dir.to_path_buf(), message })?;
        let first_episode_id = last.map_or(0, |r| r.first_episode_id);
        let (agent, seed, config) = new;
        Ok((Self::add_run(o, meta, NewRun { agent, seed, config, first_episode_id }, cfg)?, seen))
    }

    fn add_run(o: Opened, mut meta: Metadata, new: NewRun<'_>, cfg: WriterConfig) -> Result<DatasetWriter> {
        let mut run = RunInfo {
            run: meta.runs.len() as u32,
            agent: new.agent.into(),
            seed: new.seed,
            first_episode_id: new.first_episode_id,
            config: new.config,
            summary: None,
            rollway_version: env!("CARGO_PKG_VERSION").into(),
            lives: Vec::new(),
        };
        crate::lives::begin(&mut run, crate::lives::now());
        // A new run after one whose last life never ended: that life was killed.
        if let Some(last) = meta.runs.last_mut() {
            crate::lives::killed(last, &o.entries);
        }
        meta.runs.push(run.clone());
        meta.format_version = format::FORMAT_VERSION;
        write_metadata(&o.paths, &meta)?;
        Self::start(o, meta, run, cfg)
    }

    /// Reopens a dataset to continue its last run where the committed episodes end.
    /// `config`, when given, replaces the run's stored config before anything is
    /// written (a resumed run whose target was raised: a later resume continues to
    /// the raised target, even if this one is killed).
    pub fn resume(dir: &Path, cfg: WriterConfig, config: Option<serde_json::Value>) -> Result<(DatasetWriter, ResumePoint)> {
        let o = open_locked(dir)?;
        let mut meta = o.meta.clone().ok_or_else(|| Error::NotADataset { path: dir.to_path_buf(), message: "nothing to resume".into() })?;
        let new_config = config.filter(|c| meta.runs.last().is_some_and(|r| &r.config != c));
        // New shards are written by this version's protocol; say so before the first.
        meta.format_version = format::FORMAT_VERSION;
        if let Some(r) = meta.runs.last_mut() {
            if let Some(c) = new_config {
                r.config = c;
            }
            // The life before this one did not end, or this would be no resume: it was killed.
            crate::lives::killed(r, &o.entries);
            crate::lives::begin(r, crate::lives::now());
        }
        write_metadata(&o.paths, &meta)?;
        let run =
            meta.runs.last().cloned().ok_or_else(|| Error::NotADataset { path: dir.to_path_buf(), message: "no run recorded".into() })?;
        let mut mine: Vec<&IndexEntry> = o.entries.iter().filter(|e| e.run == run.run).collect();
        mine.sort_by_key(|e| e.run_index);
        // Commits happen in run-index order, so the committed episodes are a prefix.
        if let Some((i, e)) = mine.iter().enumerate().find(|(i, e)| e.run_index != *i as u64) {
            return Err(Error::Corrupt {
                path: o.paths.index_dir(),
                message: format!(
                    "run {} has episode {} at position {i}: not a prefix (a run of many writers, as a Ray run, is resumed by its driver: `rollway run --resume DIR --backend ray`)",
                    run.run, e.run_index
                ),
            });
        }
        let point = ResumePoint {
            run: run.clone(),
            next_index: mine.len() as u64,
            episodes: mine.len() as u64,
            steps: mine.iter().filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum(),
        };
        Ok((Self::start(o, meta, run, cfg)?, point))
    }

    /// Joins the dataset at `dir` as writer `id`, one of many writing its run `run` at
    /// once (the actors of a distributed run, on storage they share): shard numbers are
    /// claimed, dead writers' leftovers cleaned up, and `rollway.json` left alone —
    /// [`close_run`](crate::close_run) records the run's end once every writer is gone. Episodes are
    /// given with their run index, as to any writer; which writer commits which
    /// indices is the caller's to decide (FORMAT.md, "Many writers").
    pub fn join(dir: &Path, run: u32, id: &str, cfg: WriterConfig) -> Result<DatasetWriter> {
        let paths = Paths::new(dir);
        require_dataset(dir)?;
        let meta = crate::reader::read_metadata(&paths)?;
        let info = run_info(dir, &meta, run, "join")?;
        let member = crate::shared::Member::join(&paths, id, &meta)?;
        let o = Opened { paths, meta: Some(meta.clone()), numbers: Numbers::Shared(member), entries: vec![] };
        Self::start(o, meta, info, cfg)
    }

    fn start(o: Opened, meta: Metadata, run: RunInfo, cfg: WriterConfig) -> Result<DatasetWriter> {
        frame_dirs(&o.paths, &meta)?;
        let (obs, act) = meta.env.spaces()?;
        let obs_layout = Layout::of(&obs);
        let mut frame_leaves = Vec::new();
        for l in obs_layout.leaves().iter().filter(|l| is_frame_leaf(l)) {
            let key = format::column_name("observations", l);
            let media = frames::media_for(&meta.frame_media, &key, &cfg.frame_options).ok_or_else(|| Error::NotADataset {
                path: o.paths.root.clone(),
                message: format!("unknown frame media `{}`", meta.frame_media),
            })?;
            frame_leaves.push(FrameLeaf { key, offset: l.offset, geom: Geom::of(l), media });
        }
        let pool = if frame_leaves.is_empty() {
            None
        } else {
            Some(Pool::start(cfg.encode_threads).io("starting encoder threads", &o.paths.root)?)
        };
        let columns = Columns::new(Layout::of(&obs), Layout::of(&act), cfg.record_infos);
        let (tx, rx) = bounded::<Msg>(cfg.queue.max(1));
        let failed = Arc::new(Mutex::new(None));
        let recycle = Recycler::new();
        let mut thread = WriterThread {
            paths: o.paths.clone(),
            columns,
            frame_leaves,
            pool,
            numbers: o.numbers,
            run: run.clone(),
            stats: WriteStats::default(),
            failed: failed.clone(),
            recycle: recycle.clone(),
        };
        let flag = failed.clone();
        let root = o.paths.root.clone();
        let handle = std::thread::Builder::new()
            .name("rollway-writer".into())
            .spawn(move || {
                let res = thread.serve(&rx, &cfg);
                if let Err(e) = &res {
                    *flag.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                // Only now may senders see the channel close: the cause is recorded, so
                // they report it instead of a bare "writer thread ended".
                drop(rx);
                res.map(|()| thread.stats)
            })
            .io("starting writer thread", &root)?;
        Ok(DatasetWriter { tx: Some(tx), handle: Some(handle), failed, run, root, recycle })
    }

    /// Where this writer hands back the observation buffers of the episodes it
    /// committed, for the next episodes to be built in (see [`Recycler`]).
    pub fn recycler(&self) -> Recycler {
        self.recycle.clone()
    }

    /// The run being written.
    pub fn run(&self) -> &RunInfo {
        &self.run
    }

    /// The dataset directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn gone(&self) -> Error {
        Error::WriterGone(self.failed.lock().unwrap_or_else(|p| p.into_inner()).clone().unwrap_or_else(|| "writer thread ended".into()))
    }

    fn check_alive(&self) -> Result<()> {
        match self.failed.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            Some(m) => Err(Error::WriterGone(m)),
            None => Ok(()),
        }
    }

    /// Queues an episode (its `index` is its run index); blocks while the queue is full.
    pub fn write(&self, episode: EpisodeResult) -> Result<()> {
        self.check_alive()?;
        if episode.status != Status::GivenUp {
            traj(&episode)?;
        }
        let tx = self.tx.as_ref().expect("open until finish");
        tx.send(Msg::Episode(episode)).map_err(|_| self.gone())
    }

    /// Commits everything queued so far.
    pub fn flush(&self) -> Result<()> {
        self.check_alive()?;
        let (rtx, rrx) = bounded(1);
        let tx = self.tx.as_ref().expect("open until finish");
        tx.send(Msg::Flush(rtx)).map_err(|_| self.gone())?;
        rrx.recv().map_err(|_| self.gone())?
    }

    /// Records `summary` as the run's in `rollway.json` ([`RunInfo::summary`])
    /// when the writer closes cleanly.
    pub fn set_summary(&self, summary: serde_json::Value) -> Result<()> {
        let tx = self.tx.as_ref().expect("open until finish");
        tx.send(Msg::Summary(summary)).map_err(|_| self.gone())
    }

    /// Commits what is left and stops the writer.
    pub fn finish(mut self) -> Result<WriteStats> {
        drop(self.tx.take());
        let h = self.handle.take().expect("joined once");
        h.join().map_err(|_| Error::WriterGone("writer thread panicked".into()))?
    }
}

impl Drop for DatasetWriter {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Run `run` of the dataset, for `what` (`join`, `close`) to act on.
pub(crate) fn run_info(dir: &Path, meta: &Metadata, run: u32, what: &str) -> Result<RunInfo> {
    meta.runs.get(run as usize).cloned().ok_or_else(|| Error::Mismatch {
        path: dir.to_path_buf(),
        message: format!("it records {} runs, so no run {run} to {what}", meta.runs.len()),
    })
}
