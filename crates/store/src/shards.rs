//! The writer thread's side of a dataset writer: it buffers finished episodes and
//! commits them shard by shard.
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
//! A shard's number comes from [`Numbers`]: the next one for the one writer of a
//! dataset, a claimed one for one of many ([`crate::shared`]).
//!
//! Cost over writing in place: one extra rename per file and reading each file back
//! once to hash it (from the page cache, at memory speed: under 1% of a commit).
//! Frames are encoded on the pool as episodes arrive, so a commit mostly waits for
//! the last episode's encodings.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError, Sender, TryRecvError};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rollway_core::{EpisodeResult, Recycler, Status};
use rollway_media::pool::Pool;

use crate::columns::{traj, Columns, SLICE_BYTES};
use crate::config::{WriteStats, WriterConfig, MAX_SHARD_EPISODES};
use crate::error::IoContext;
use crate::format::{self, write_atomic, FileSum, FrameRef, IndexEntry, Metadata, Paths, RunInfo, ShardIndex};
use crate::frames::{Encoded, FrameMedia, Geom};
use crate::reader::load_shard_indexes;
use crate::recover;
use crate::{Error, Result};

/// About what one index entry costs in memory and on disk, counted toward the byte limit.
const INDEX_ENTRY_BYTES: usize = 256;

/// What the writer thread is sent.
pub(crate) enum Msg {
    Episode(EpisodeResult),
    Flush(Sender<Result<()>>),
    Summary(serde_json::Value),
}

/// How long a lingering writer sleeps between looks at an empty queue (see [`receive`]).
const LINGER: Duration = Duration::from_micros(200);
/// Looks at an empty queue before a lingering writer blocks: ~1 ms with no episode.
const LINGER_LOOKS: u32 = 5;

/// The next message, or a timeout after `wait`; with `linger`, the writer looks at an
/// empty queue [`LINGER_LOOKS`] times, [`LINGER`] apart, before it blocks on it.
///
/// Why: a sender wakes a writer blocked on the queue, and on a VM that wake-up is a
/// syscall of 15–40 µs on the *sender's* thread. A Python `DataCollector` finishing
/// an episode every ~0.2 ms paid it for every episode (~0.7 µs a step, a third of
/// what recording added). A writer that sleeps between looks while episodes keep
/// coming is never blocked on the queue, so sending costs the sender nothing; the
/// writer pays for its own timer wake-ups, on its own core. After ~1 ms without an
/// episode it blocks as before. The generator's recording measured ~5% slower with
/// lingering (its writer's timer wake-ups land on cores its workers use), so only
/// the collector asks for it ([`WriterConfig::linger`]).
fn receive(rx: &crossbeam_channel::Receiver<Msg>, wait: Duration, linger: bool) -> std::result::Result<Msg, RecvTimeoutError> {
    let until = Instant::now() + wait;
    let looks = if linger { LINGER_LOOKS } else { 0 };
    for _ in 0..looks {
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(RecvTimeoutError::Timeout);
        }
        std::thread::sleep(LINGER.min(left));
    }
    rx.recv_timeout(until.saturating_duration_since(Instant::now()))
}

/// Where a writer's shard numbers come from.
pub(crate) enum Numbers {
    /// The one writer (`.lock` held exclusive): the next number past every one in use.
    Own { next: u32, _lock: std::fs::File },
    /// One of many writers ([`crate::shared`]): numbers are claimed.
    Shared(crate::shared::Member),
}

impl Numbers {
    fn take(&mut self) -> Result<u32> {
        match self {
            Numbers::Own { next, .. } => Ok(*next),
            Numbers::Shared(m) => m.claim(),
        }
    }

    /// Shard `n` is committed and published.
    fn done(&mut self, n: u32) -> Result<()> {
        match self {
            Numbers::Own { next, .. } => {
                *next = n + 1;
                Ok(())
            }
            Numbers::Shared(m) => m.release(n),
        }
    }
}

/// The writer thread's state: the open dataset, the encoders, what it committed.
pub(crate) struct WriterThread {
    pub(crate) paths: Paths,
    pub(crate) columns: Columns,
    pub(crate) frame_leaves: Vec<FrameLeaf>,
    pub(crate) pool: Option<Pool>,
    pub(crate) numbers: Numbers,
    pub(crate) run: RunInfo,
    pub(crate) stats: WriteStats,
    /// Shared with the handle: set before a failed flush is answered, so a writer that
    /// reported an error refuses every later episode instead of queueing it.
    pub(crate) failed: Arc<Mutex<Option<String>>>,
    /// Where committed episodes' observation buffers go back to the run.
    pub(crate) recycle: Recycler,
}

impl WriterThread {
    pub(crate) fn serve(&mut self, rx: &crossbeam_channel::Receiver<Msg>, cfg: &WriterConfig) -> Result<()> {
        let mut buf: Vec<Pending> = Vec::new();
        let (mut steps, mut bytes) = (0usize, 0usize);
        let mut oldest = Instant::now();
        loop {
            let wait = if buf.is_empty() { Duration::from_secs(3600) } else { cfg.max_buffer_age.saturating_sub(oldest.elapsed()) };
            match receive(rx, wait, cfg.linger) {
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
                    // The age counts here too: under a steady stream of episodes the
                    // queue is never quiet long enough for the timeout below to fire.
                    let full = cfg.max_buffer_steps.is_some_and(|m| steps >= m)
                        || buf.len() >= cfg.max_buffer_episodes.unwrap_or(MAX_SHARD_EPISODES).min(MAX_SHARD_EPISODES)
                        || bytes >= cfg.max_buffer_bytes
                        || oldest.elapsed() >= cfg.max_buffer_age;
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
                    // Many writers leave rollway.json to whoever runs them (close_run).
                    return match self.numbers {
                        Numbers::Own { .. } => write_counts(&self.paths, self.run.run, self.run.summary.as_ref()),
                        Numbers::Shared(_) => Ok(()),
                    };
                }
            }
        }
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
        let taken = crate::lives::now();
        Pending { ep, taken, frames }
    }

    /// Writes and commits one shard holding `buf`'s episodes.
    fn commit(&mut self, buf: &mut Vec<Pending>) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let n = self.numbers.take()?;
        // A shard of given-up episodes only has no rows and so no files: index only.
        let files = if buf.iter().any(|p| p.ep.status != Status::GivenUp) { self.stage(n, buf)? } else { vec![] };
        let keys: Vec<String> = self.frame_leaves.iter().map(|l| l.key.clone()).collect();
        let parquet = self.paths.rel(&self.paths.shard(n));
        let parquet_bytes = files.iter().find(|f| f.path == parquet).map_or(0, |f| f.bytes);
        let mut row = 0u64;
        let episodes = buf
            .drain(..)
            .map(|p| {
                let entry = self.entry(n, row, &keys, &p.ep, p.taken);
                // Encoder jobs may still hold their clone for a moment after answering:
                // then the buffer is freed with the last clone instead.
                if let Some(t) = Arc::try_unwrap(p.ep).ok().and_then(|e| e.trajectory) {
                    self.recycle.give(t.obs);
                }
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
        self.numbers.done(n)
    }

    /// Writes shard `n`'s Parquet and frame files to their staged places, each fsynced,
    /// their folders too, and returns each with its size and hash as committed.
    fn stage(&mut self, n: u32, buf: &[Pending]) -> Result<Vec<FileSum>> {
        let with_data: Vec<&EpisodeResult> = buf.iter().map(|p| &*p.ep).filter(|e| e.status != Status::GivenUp).collect();
        let ids: Vec<u64> = with_data.iter().map(|e| self.run.first_episode_id + e.run_index).collect();
        let shard = self.columns.shard(&with_data, &ids)?;
        let pq_final = self.paths.shard(n);
        let pq = self.paths.staged(&pq_final);
        crate::faults::check("creating", &pq)?;
        let file = std::fs::File::create(&pq).io("creating", &pq)?;
        // Dictionaries pay off for repeated values, not for float observations; plain + Snappy is
        // both faster to write and about as small here.
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_enabled(false).build();
        let mut w = ArrowWriter::try_new(file, shard.schema(), Some(props)).map_err(|e| parquet_err(&pq, e))?;
        shard.for_each_slice(SLICE_BYTES, |batch| w.write(batch).map_err(|e| parquet_err(&pq, e)))?;
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

    /// The index entry of episode `e`, whose rows start at `row` of shard `n`, taken by the writer at `taken` (Unix seconds).
    fn entry(&self, n: u32, row: u64, keys: &[String], e: &EpisodeResult, taken: f64) -> IndexEntry {
        let t = e.trajectory.as_deref();
        let rows = if e.status == Status::GivenUp { 0 } else { e.length + 1 };
        let frames = keys.iter().filter(|_| rows > 0).map(|k| (k.clone(), FrameRef { start: row, count: rows })).collect();
        let versions = t.map_or(&[][..], |t| &t.versions[..]);
        let policy_version = versions.iter().min().zip(versions.iter().max()).map(|(&a, &b)| [a, b]);
        let agent_returns = t.and_then(|t| crate::agents::returns(&self.columns.obs, &t.obs));
        IndexEntry {
            episode_id: self.run.first_episode_id + e.run_index,
            run: self.run.run,
            run_index: e.run_index,
            seed: e.seed,
            shard: n,
            row_start: row,
            rows,
            length: e.length,
            ret: e.ret,
            status: e.status,
            labels: e.labels.clone(),
            info: e.info.clone(),
            worker: e.worker,
            attempt: e.attempt,
            wall_ms: e.wall_ms,
            error: e.error.clone(),
            frames,
            policy_version,
            ended_at: Some(taken),
            agent_returns,
        }
    }
}

fn parquet_err(path: &Path, e: parquet::errors::ParquetError) -> Error {
    Error::Parquet { path: path.to_path_buf(), message: e.to_string() }
}

/// An episode waiting in the buffer, with its frame encodings under way.
struct Pending {
    ep: Arc<EpisodeResult>,
    /// When the writer took it, Unix seconds.
    taken: f64,
    /// One per frame key, in `frame_leaves` order (empty for given-up episodes).
    frames: Vec<crossbeam_channel::Receiver<Result<Encoded>>>,
}

#[derive(Clone)]
pub(crate) struct FrameLeaf {
    pub(crate) key: String,
    pub(crate) offset: usize,
    pub(crate) geom: Geom,
    pub(crate) media: Arc<dyn FrameMedia>,
}

/// Refreshes the informational totals in `rollway.json`, and run `run`'s summary when
/// one is given.
pub(crate) fn write_counts(paths: &Paths, run: u32, summary: Option<&serde_json::Value>) -> Result<()> {
    let mut meta = crate::reader::read_metadata(paths)?;
    if let (Some(s), Some(r)) = (summary, meta.runs.get_mut(run as usize)) {
        r.summary = Some(s.clone());
        crate::lives::ended_clean(r, s["seconds"].as_f64());
    }
    let (shards, _) = load_shard_indexes(paths, &meta)?;
    meta.counts = format::Counts {
        episodes: shards.iter().map(|s| s.episodes.len() as u64).sum(),
        steps: shards.iter().flat_map(|s| &s.episodes).filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum(),
        shards: shards.len() as u64,
    };
    write_metadata(paths, &meta)
}

/// Replaces `rollway.json` atomically.
pub(crate) fn write_metadata(paths: &Paths, meta: &Metadata) -> Result<()> {
    write_atomic(&paths.metadata(), &paths.tmp(), &serde_json::to_vec_pretty(meta).expect("metadata serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(n: i64) -> Msg {
        Msg::Summary(serde_json::json!(n))
    }

    fn got(r: std::result::Result<Msg, RecvTimeoutError>) -> Option<i64> {
        match r {
            Ok(Msg::Summary(v)) => v.as_i64(),
            _ => None,
        }
    }

    #[test]
    fn a_lingering_writer_gets_what_is_sent_while_it_sleeps_and_in_order() {
        for linger in [false, true] {
            let (tx, rx) = bounded(4);
            let sender = std::thread::spawn(move || {
                for n in 0..3 {
                    std::thread::sleep(Duration::from_micros(300));
                    tx.send(summary(n)).expect("writer side open");
                }
            });
            for n in 0..3 {
                assert_eq!(got(receive(&rx, Duration::from_secs(5), linger)), Some(n), "linger {linger}");
            }
            sender.join().expect("sender ran");
            assert!(matches!(receive(&rx, Duration::from_secs(5), linger), Err(RecvTimeoutError::Disconnected)));
        }
    }

    #[test]
    fn a_lingering_writer_still_times_out_when_its_buffer_is_due() {
        for linger in [false, true] {
            let (_tx, rx) = bounded::<Msg>(1);
            let t = Instant::now();
            assert!(matches!(receive(&rx, Duration::from_millis(3), linger), Err(RecvTimeoutError::Timeout)));
            assert!(t.elapsed() >= Duration::from_millis(3), "linger {linger}: returned before the wait was over");
            // A buffer already due is committed without sleeping first.
            assert!(matches!(receive(&rx, Duration::ZERO, linger), Err(RecvTimeoutError::Timeout)));
        }
    }
}
