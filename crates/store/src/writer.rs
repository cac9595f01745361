//! The dataset writer: a thread that takes finished episodes through a bounded
//! queue, buffers them, and commits them shard by shard.
//!
//! Commit protocol (FORMAT.md, version 2): a shard's Parquet and frame files are
//! written under `.tmp/publish/` (same relative paths as their final places),
//! fsynced, and hashed as written; then its index file — listing each file with its
//! size and XXH3 — is written under `.tmp/`, fsynced and renamed into `index/`. That
//! rename is the commit point: an episode exists once its shard's index file does.
//! Only then are the data files renamed into `steps/` and `frames/`, so a program
//! that globs those folders never sees a file of an uncommitted shard. A crash
//! between the two leaves a committed shard whose files are still staged: readers
//! find them there, and the next writer publishes them ([`crate::recover`]).
//!
//! Cost over writing in place: one extra rename per file and reading each file back
//! once to hash it (from the page cache, at memory speed: under 1% of a commit).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rollway_core::{EnvSpec, EpisodeResult, Layout, Status};
use rollway_media::pool::Pool;

use crate::columns::{traj, Columns};
use crate::error::IoContext;
use crate::format::{
    self, create_dir_durable, is_frame_leaf, require_real_dir, write_atomic, EnvInfo, FileSum, FrameRef, IndexEntry, Metadata, Paths,
    RunInfo, ShardIndex,
};
use crate::frames::{self, Encoded, FrameMedia, FrameOptions, Geom};
use crate::reader::load_shard_indexes;
use crate::recover;
use crate::{Error, Result};

/// How much the writer holds in memory and how it queues.
#[derive(Clone, Debug)]
pub struct WriterConfig {
    /// Commit once this many steps are buffered.
    pub max_buffer_steps: Option<usize>,
    /// Commit once this many episodes are buffered.
    pub max_buffer_episodes: Option<usize>,
    /// Commit once this many bytes of step data are buffered.
    pub max_buffer_bytes: usize,
    /// Commit at least this often while episodes arrive, so a slow run still commits.
    pub max_buffer_age: Duration,
    /// Episodes that may wait in the queue before `write` blocks (backpressure).
    pub queue: usize,
    /// Store per-step infos (a JSON column).
    pub record_infos: bool,
    /// Frame media for a new dataset: `lz4`, `raw`, `jpeg`, `h264` for every image key, or
    /// per key (`lz4,observations/rgb=h264`); an existing dataset keeps its own.
    pub frame_media: String,
    /// Encoder settings for `jpeg` and `h264`.
    pub frame_options: FrameOptions,
    /// Threads encoding frames (episodes in parallel); 0 = one per core.
    pub encode_threads: usize,
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            max_buffer_steps: Some(262_144),
            max_buffer_episodes: None,
            max_buffer_bytes: 256 << 20,
            max_buffer_age: Duration::from_secs(5),
            queue: 256,
            record_infos: false,
            frame_media: "lz4".into(),
            frame_options: FrameOptions::default(),
            encode_threads: 0,
        }
    }
}

/// The most episodes in one shard, whatever the config says: it bounds the index file
/// (a few hundred bytes an entry) and what a reader holds per shard.
pub const MAX_SHARD_EPISODES: usize = 16_384;

/// About what one index entry costs in memory and on disk, counted toward the byte limit.
const INDEX_ENTRY_BYTES: usize = 256;

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

/// Totals of a writer's session.
#[derive(Clone, Debug, Default)]
pub struct WriteStats {
    /// Shards committed.
    pub shards: u64,
    /// Episodes committed.
    pub episodes: u64,
    /// Steps committed.
    pub steps: u64,
    /// Bytes written (Parquet + frames).
    pub bytes: u64,
}

enum Msg {
    Episode(EpisodeResult),
    Flush(Sender<Result<()>>),
    Summary(serde_json::Value),
}

/// Writes episodes into a dataset directory from any thread.
pub struct DatasetWriter {
    tx: Option<Sender<Msg>>,
    handle: Option<JoinHandle<Result<WriteStats>>>,
    failed: Arc<Mutex<Option<String>>>,
    run: RunInfo,
    root: PathBuf,
}

/// The open, locked dataset a writer works on.
struct Opened {
    paths: Paths,
    meta: Option<Metadata>,
    lock: std::fs::File,
    next_shard: u32,
    entries: Vec<IndexEntry>,
}

fn open_locked(dir: &Path) -> Result<Opened> {
    create_dir_durable(dir)?;
    let paths = Paths::new(dir);
    let lock = recover::lock(&paths)?;
    let meta = if paths.metadata().exists() {
        Some(crate::reader::read_metadata(&paths)?)
    } else {
        let stray =
            std::fs::read_dir(dir).io("listing", dir)?.filter_map(|e| e.ok()).any(|e| !e.file_name().to_string_lossy().starts_with('.'));
        if stray {
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
        next_shard = scan.highest.map_or(0, |h| h + 1);
        entries = shards.into_iter().flat_map(|s| s.episodes).collect();
    }
    Ok(Opened { paths, meta, lock, next_shard, entries })
}

/// Replaces `rollway.json` atomically.
fn write_metadata(paths: &Paths, meta: &Metadata) -> Result<()> {
    write_atomic(&paths.metadata(), &paths.tmp(), &serde_json::to_vec_pretty(meta).expect("metadata serializes"))
}

/// Creates the folders a writer puts frame files in (final and staged) durably.
fn frame_dirs(paths: &Paths, meta: &Metadata) -> Result<()> {
    for key in &meta.frame_keys {
        create_dir_durable(&paths.frames_dir(key))?;
        create_dir_durable(&paths.staged(&paths.frames_dir(key)))?;
    }
    create_dir_durable(&paths.staged(&paths.steps_dir()))
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
        let mut meta = match o.meta.clone() {
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
        let first_episode_id = o.entries.iter().map(|e| e.episode_id + 1).max().unwrap_or(0);
        let run = RunInfo { run: meta.runs.len() as u32, agent: agent.into(), seed, first_episode_id, config, summary: None };
        meta.runs.push(run.clone());
        meta.format_version = format::FORMAT_VERSION;
        write_metadata(&o.paths, &meta)?;
        Self::start(o, meta, run, cfg)
    }

    /// Reopens a dataset to continue its last run where the committed episodes end.
    pub fn resume(dir: &Path, cfg: WriterConfig) -> Result<(DatasetWriter, ResumePoint)> {
        let o = open_locked(dir)?;
        let mut meta = o.meta.clone().ok_or_else(|| Error::NotADataset { path: dir.to_path_buf(), message: "nothing to resume".into() })?;
        if meta.format_version < format::FORMAT_VERSION {
            // New shards are written by this version's protocol; say so before the first.
            meta.format_version = format::FORMAT_VERSION;
            write_metadata(&o.paths, &meta)?;
        }
        let run =
            meta.runs.last().cloned().ok_or_else(|| Error::NotADataset { path: dir.to_path_buf(), message: "no run recorded".into() })?;
        let mut mine: Vec<&IndexEntry> = o.entries.iter().filter(|e| e.run == run.run).collect();
        mine.sort_by_key(|e| e.run_index);
        // Commits happen in run-index order, so the committed episodes are a prefix.
        if let Some((i, e)) = mine.iter().enumerate().find(|(i, e)| e.run_index != *i as u64) {
            return Err(Error::Corrupt {
                path: o.paths.index_dir(),
                message: format!("run {} has episode {} at position {i}: not a prefix", run.run, e.run_index),
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
        let mut shard = Shards {
            paths: o.paths.clone(),
            columns,
            frame_leaves,
            pool,
            next: o.next_shard,
            run: run.clone(),
            stats: WriteStats::default(),
            failed: failed.clone(),
            _lock: o.lock,
        };
        let flag = failed.clone();
        let root = o.paths.root.clone();
        let handle = std::thread::Builder::new()
            .name("rollway-writer".into())
            .spawn(move || {
                let res = shard.serve(&rx, &cfg);
                if let Err(e) = &res {
                    *flag.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                }
                // Only now may senders see the channel close: the cause is recorded, so
                // they report it instead of a bare "writer thread ended".
                drop(rx);
                res.map(|()| shard.stats)
            })
            .io("starting writer thread", &root)?;
        Ok(DatasetWriter { tx: Some(tx), handle: Some(handle), failed, run, root })
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

struct Shards {
    paths: Paths,
    columns: Columns,
    frame_leaves: Vec<FrameLeaf>,
    pool: Option<Pool>,
    next: u32,
    run: RunInfo,
    stats: WriteStats,
    /// Shared with the handle: set before a failed flush is answered, so a writer that
    /// reported an error refuses every later episode instead of queueing it.
    failed: Arc<Mutex<Option<String>>>,
    _lock: std::fs::File,
}

impl Shards {
    fn serve(&mut self, rx: &crossbeam_channel::Receiver<Msg>, cfg: &WriterConfig) -> Result<()> {
        let mut buf: Vec<Pending> = Vec::new();
        let (mut steps, mut bytes) = (0usize, 0usize);
        let mut oldest = Instant::now();
        loop {
            let wait = if buf.is_empty() { Duration::from_secs(3600) } else { cfg.max_buffer_age.saturating_sub(oldest.elapsed()) };
            match rx.recv_timeout(wait) {
                Ok(Msg::Episode(ep)) => {
                    if buf.is_empty() {
                        oldest = Instant::now();
                    }
                    // A given-up episode has no steps but still an index entry: it counts
                    // as one step and its entry's bytes, so a run that gives up millions
                    // of episodes still commits bounded shards.
                    steps += (ep.length as usize).max(1);
                    bytes += INDEX_ENTRY_BYTES + ep.trajectory.as_ref().map_or(0, |t| t.obs.len() + t.actions.len() + t.rewards.len() * 10);
                    buf.push(self.submit(ep));
                    let full = cfg.max_buffer_steps.is_some_and(|m| steps >= m)
                        || buf.len() >= cfg.max_buffer_episodes.unwrap_or(MAX_SHARD_EPISODES).min(MAX_SHARD_EPISODES)
                        || bytes >= cfg.max_buffer_bytes;
                    if full {
                        self.commit(&mut buf)?;
                        (steps, bytes) = (0, 0);
                    }
                }
                Ok(Msg::Flush(reply)) => {
                    let r = self.commit(&mut buf);
                    (steps, bytes) = (0, 0);
                    if let Err(e) = &r {
                        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
                    }
                    let failed = r.as_ref().err().map(|e| Error::WriterGone(e.to_string()));
                    let _ = reply.send(r);
                    if let Some(e) = failed {
                        return Err(e);
                    }
                }
                Ok(Msg::Summary(s)) => self.run.summary = Some(s),
                Err(RecvTimeoutError::Timeout) => {
                    self.commit(&mut buf)?;
                    (steps, bytes) = (0, 0);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.commit(&mut buf)?;
                    return self.write_counts();
                }
            }
        }
    }

    /// Refreshes the informational totals in `rollway.json` on a clean close, and
    /// the run's summary if one was given.
    fn write_counts(&self) -> Result<()> {
        let mut meta = crate::reader::read_metadata(&self.paths)?;
        if let (Some(s), Some(run)) = (&self.run.summary, meta.runs.get_mut(self.run.run as usize)) {
            run.summary = Some(s.clone());
        }
        let (shards, _) = load_shard_indexes(&self.paths, &meta)?;
        meta.counts = format::Counts {
            episodes: shards.iter().map(|s| s.episodes.len() as u64).sum(),
            steps: shards.iter().flat_map(|s| &s.episodes).filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum(),
            shards: shards.len() as u64,
        };
        write_metadata(&self.paths, &meta)
    }

    /// Starts encoding an arriving episode's frames on the pool, one job per frame key.
    fn submit(&self, ep: EpisodeResult) -> Pending {
        let ep = Arc::new(ep);
        let mut frames = Vec::new();
        if let (Some(pool), true) = (&self.pool, ep.status != Status::GivenUp) {
            let ob = self.columns.obs.row_bytes();
            for leaf in &self.frame_leaves {
                let (tx, rx) = bounded(1);
                let (ep, leaf) = (ep.clone(), leaf.clone());
                pool.run(Box::new(move || {
                    let r = traj(&ep).and_then(|t| {
                        leaf.media
                            .encode(&mut t.obs.chunks_exact(ob).map(|row| &row[leaf.offset..leaf.offset + leaf.geom.bytes()]), &leaf.geom)
                    });
                    let _ = tx.send(r);
                }));
                frames.push(rx);
            }
        }
        Pending { ep, frames }
    }

    /// Writes and commits one shard holding `buf`'s episodes.
    fn commit(&mut self, buf: &mut Vec<Pending>) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let n = self.next;
        // A shard of given-up episodes only has no rows and so no files: index only.
        let files = if buf.iter().any(|p| p.ep.status != Status::GivenUp) { self.stage(n, buf)? } else { vec![] };
        let keys: Vec<String> = self.frame_leaves.iter().map(|l| l.key.clone()).collect();
        let parquet = self.paths.rel(&self.paths.shard(n));
        let parquet_bytes = files.iter().find(|f| f.path == parquet).map_or(0, |f| f.bytes);
        let mut row = 0u64;
        let episodes = buf
            .drain(..)
            .map(|p| {
                // Encoder jobs may still hold their clone for a moment after answering.
                let e = Arc::try_unwrap(p.ep).unwrap_or_else(|a| (*a).clone());
                let entry = self.entry(n, row, &keys, e);
                row += entry.rows;
                entry
            })
            .collect::<Vec<_>>();
        let index = ShardIndex { shard: n, rows: row, parquet_bytes, episodes, files };
        // The commit point: once this rename is durable, the shard's episodes exist.
        write_atomic(&self.paths.shard_index(n), &self.paths.tmp(), &serde_json::to_vec(&index).expect("index serializes"))?;
        let staged: Vec<(PathBuf, PathBuf)> =
            index.files.iter().filter_map(|f| self.paths.resolve(&f.path)).map(|fin| (self.paths.staged(&fin), fin)).collect();
        recover::publish(&staged)?;
        self.stats.shards += 1;
        self.stats.episodes += index.episodes.len() as u64;
        self.stats.steps += index.episodes.iter().filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum::<u64>();
        self.stats.bytes += index.files.iter().map(|f| f.bytes).sum::<u64>();
        self.next += 1;
        Ok(())
    }

    /// Writes shard `n`'s Parquet and frame files to their staged places, each fsynced,
    /// their folders too, and returns each with its size and hash as committed.
    fn stage(&mut self, n: u32, buf: &[Pending]) -> Result<Vec<FileSum>> {
        let with_data: Vec<&EpisodeResult> = buf.iter().map(|p| &*p.ep).filter(|e| e.status != Status::GivenUp).collect();
        let ids: Vec<u64> = with_data.iter().map(|e| self.run.first_episode_id + e.index).collect();
        let batch = self.columns.batch(&with_data, &ids)?;
        let pq_final = self.paths.shard(n);
        let pq = self.paths.staged(&pq_final);
        crate::faults::check("creating", &pq)?;
        let file = std::fs::File::create(&pq).io("creating", &pq)?;
        // Dictionaries pay off for repeated values, not for float observations; plain + Snappy is
        // both faster to write and about as small here.
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_enabled(false).build();
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| parquet_err(&pq, e))?;
        w.write(&batch).map_err(|e| parquet_err(&pq, e))?;
        let file = w.into_inner().map_err(|e| parquet_err(&pq, e))?;
        file.sync_all().io("syncing", &pq)?;
        drop(file);
        let mut sums = vec![FileSum::of(&pq, self.paths.rel(&pq_final))?];
        let mut dirs = vec![pq.parent().map(Path::to_path_buf).unwrap_or_default()];
        for (k, leaf) in self.frame_leaves.iter().enumerate() {
            let fin = self.paths.frames(&leaf.key, n, leaf.media.ext());
            let staged = self.paths.staged(&fin);
            let mut encoded: Vec<Encoded> = Vec::with_capacity(buf.len());
            for p in buf.iter().filter(|p| p.ep.status != Status::GivenUp) {
                encoded.push(p.frames[k].recv().map_err(|_| Error::Encode("an encoder thread died".into()))??);
            }
            leaf.media.write(&staged, &leaf.geom, &encoded.iter().collect::<Vec<_>>())?;
            sums.push(FileSum::of(&staged, self.paths.rel(&fin))?);
            dirs.extend(staged.parent().map(Path::to_path_buf));
        }
        for d in &dirs {
            format::sync_dir(d)?;
        }
        Ok(sums)
    }

    /// The index entry of episode `e`, whose rows start at `row` of shard `n`.
    fn entry(&self, n: u32, row: u64, keys: &[String], e: EpisodeResult) -> IndexEntry {
        let rows = if e.status == Status::GivenUp { 0 } else { e.length + 1 };
        let frames = keys.iter().filter(|_| rows > 0).map(|k| (k.clone(), FrameRef { start: row, count: rows })).collect();
        IndexEntry {
            episode_id: self.run.first_episode_id + e.index,
            run: self.run.run,
            run_index: e.index,
            seed: e.seed,
            shard: n,
            row_start: row,
            rows,
            length: e.length,
            ret: e.ret,
            status: e.status,
            labels: e.labels,
            info: e.info,
            worker: e.worker,
            attempt: e.attempt,
            wall_ms: e.wall_ms,
            error: e.error,
            frames,
        }
    }
}

fn parquet_err(path: &Path, e: parquet::errors::ParquetError) -> Error {
    Error::Parquet { path: path.to_path_buf(), message: e.to_string() }
}

/// Rewrites the index under the writer lock, letting `edit` change each entry's
/// labels (or other index-only fields); each index file is replaced atomically.
/// Returns how many entries `edit` reported as changed.
pub fn rewrite_index(dir: &Path, mut edit: impl FnMut(&mut IndexEntry) -> bool) -> Result<u64> {
    // Refuse before creating anything: relabelling a typo must not make a dataset.
    if !Paths::new(dir).metadata().is_file() {
        return Err(Error::NotADataset { path: dir.to_path_buf(), message: format!("no {}", format::METADATA) });
    }
    let o = open_locked(dir)?;
    let meta =
        o.meta.as_ref().ok_or_else(|| Error::NotADataset { path: dir.to_path_buf(), message: format!("no {}", format::METADATA) })?;
    let mut changed = 0;
    for mut shard in load_shard_indexes(&o.paths, meta)?.0 {
        let before = changed;
        for e in &mut shard.episodes {
            changed += u64::from(edit(e));
        }
        if changed != before {
            write_atomic(&o.paths.shard_index(shard.shard), &o.paths.tmp(), &serde_json::to_vec(&shard).expect("index serializes"))?;
        }
    }
    Ok(changed)
}

/// An episode waiting in the buffer, with its frame encodings under way.
struct Pending {
    ep: Arc<EpisodeResult>,
    /// One per frame key, in `frame_leaves` order (empty for given-up episodes).
    frames: Vec<crossbeam_channel::Receiver<Result<Encoded>>>,
}

#[derive(Clone)]
struct FrameLeaf {
    key: String,
    offset: usize,
    geom: Geom,
    media: Arc<dyn FrameMedia>,
}
