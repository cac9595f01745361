//! The on-disk format (see FORMAT.md): paths, metadata, the per-shard index, and
//! the one write primitive everything commits through (write, fsync, rename, fsync dir).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use rollway_core::{DType, EnvSpec, Info, Label, Layout, Leaf, Space, Status};
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::frames;
use crate::{Error, Result};

/// Format version written by this build; readers refuse newer ones. Version 2
/// publishes data files after the index commit and records a content hash per file;
/// version 1 datasets are still read (and upgraded by the next writer).
pub const FORMAT_VERSION: u32 = 3;

/// Hidden folders a writer owns: staged files, and debris moved aside by a repair.
const TMP: &str = ".tmp";
const PUBLISH: &str = "publish";
const QUARANTINE: &str = ".quarantine";

/// The metadata file at the dataset root.
pub const METADATA: &str = "rollway.json";

/// Whether `dir` holds a dataset already (its metadata file is there): what a front
/// that records into a new dataset refuses, rather than appending a run to it.
pub fn holds_dataset(dir: &std::path::Path) -> bool {
    dir.join(METADATA).exists()
}

/// Total bytes of the files under `dir`, subfolders included (0 for what cannot be
/// read): what a dataset, an export or an import takes on disk.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |rd| {
        rd.flatten()
            .map(|e| match e.file_type() {
                Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                _ => e.metadata().map_or(0, |m| m.len()),
            })
            .sum()
    })
}

/// The env a dataset was recorded from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnvInfo {
    /// Env id.
    pub id: String,
    /// Observation space, Minari's space JSON.
    pub observation_space: String,
    /// Action space, Minari's space JSON.
    pub action_space: String,
    /// The env's own time limit.
    pub max_episode_steps: Option<u64>,
    /// Frames per second for video.
    pub render_fps: Option<u32>,
    /// Gymnasium's `EnvSpec.to_json()` of an env Gymnasium made, when it had one that
    /// serializes (absent in older datasets, and for rollway's own envs): Minari exports
    /// write it as `env_spec`, so `recover_environment` rebuilds the env.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gymnasium_spec: Option<String>,
    /// A multi-agent env's possible agents, in the order its observation and action rows
    /// stack them (absent for one agent, and in older datasets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<String>>,
}

impl EnvInfo {
    /// From an env spec.
    pub fn of(spec: &EnvSpec) -> EnvInfo {
        EnvInfo {
            id: spec.id.clone(),
            observation_space: spec.observation_space.to_json(),
            action_space: spec.action_space.to_json(),
            max_episode_steps: spec.max_episode_steps,
            render_fps: spec.render_fps,
            gymnasium_spec: spec.gymnasium_spec.clone(),
            agents: spec.agents.clone(),
        }
    }

    /// The parsed observation and action spaces.
    pub fn spaces(&self) -> Result<(Space, Space)> {
        Ok((Space::from_json(&self.observation_space)?, Space::from_json(&self.action_space)?))
    }
}

/// One recording run into the dataset (a dataset can hold several: appends).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Run number, 0-based.
    pub run: u32,
    /// Agent name.
    pub agent: String,
    /// Run seed.
    pub seed: u64,
    /// Dataset episode id of this run's episode 0 (`episode_id = first_episode_id + run_index`).
    pub first_episode_id: u64,
    /// The run's full configuration, as the caller chose to describe it (for `--resume`).
    pub config: serde_json::Value,
    /// What the caller reported when the run (its last life, if resumed) ended
    /// cleanly: `rollway run` stores its summary with a throughput timeline, for
    /// `rollway report`. Absent while the run goes on or after a kill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<serde_json::Value>,
    /// The rollway that recorded the run (`CARGO_PKG_VERSION` of the writer), so a
    /// dataset says which build made each part of it. Empty in datasets from before it
    /// was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rollway_version: String,
    /// Its lives: its start and each resume, with how each ended (see [`crate::lives`]).
    /// Empty in datasets from before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lives: Vec<Life>,
}

/// One life of a run: its first start, or a resume (see [`crate::lives`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Life {
    /// When it started (Unix seconds).
    pub started_at: f64,
    /// How it ended; absent while it runs (or until a resume finds it killed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<LifeEnd>,
    /// Its wall time, seconds: to its clean end; killed, to its last commit (absent
    /// when it committed nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// How a life ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LifeEnd {
    /// The run finished or stopped, and stored its summary.
    Clean,
    /// A later resume found it without an end: the process was killed (or crashed).
    Killed,
}

impl RunInfo {
    /// For a run a training rollout recorded (its config's `rollout` mapping): the env
    /// slots its episode numbering spans (`episode_ids`' slots: every actor's envs on
    /// Ray; else its own `num_envs`), and its own envs. `None` for any other run.
    pub fn rollout_slots(&self) -> Option<(u64, u64)> {
        let r = self.config.get("rollout")?;
        let envs = r.get("num_envs")?.as_u64()?;
        let slots = r.get("episode_ids").and_then(|e| e.get(2)).and_then(|v| v.as_u64()).unwrap_or(envs);
        Some((slots, envs))
    }
}

/// `rollway.json`: what the dataset is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Always `"rollway"`.
    pub format: String,
    /// [`FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// The env.
    pub env: EnvInfo,
    /// Observation leaves kept as frames beside the Parquet shards (e.g. `observations/rgb`).
    pub frame_keys: Vec<String>,
    /// How frames are stored (`raw`).
    pub frame_media: String,
    /// Every run, oldest first.
    pub runs: Vec<RunInfo>,
    /// Committed totals when a writer last closed cleanly (informational: the
    /// index is the source of truth, and a killed writer leaves these behind).
    #[serde(default)]
    pub counts: Counts,
}

/// Totals recorded in the metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Committed episodes (given-up ones included).
    pub episodes: u64,
    /// Steps in committed episodes.
    pub steps: u64,
    /// Committed shards.
    pub shards: u64,
}

/// Where an episode's frames are, for one frame key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameRef {
    /// Index of the first frame in the shard's frame file.
    pub start: u64,
    /// Number of frames (T+1).
    pub count: u64,
}

/// One committed episode in the index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Dataset-wide episode id.
    pub episode_id: u64,
    /// Run that recorded it.
    pub run: u32,
    /// Index of the episode within its run.
    pub run_index: u64,
    /// The env seed it was reset with.
    pub seed: u64,
    /// Shard number.
    pub shard: u32,
    /// First row in the shard's Parquet file.
    pub row_start: u64,
    /// Rows in the shard (T+1 for a recorded episode, 0 for a given-up one).
    pub rows: u64,
    /// Steps T.
    pub length: u64,
    /// Sum of rewards.
    #[serde(rename = "return")]
    pub ret: f64,
    /// How it ended.
    pub status: Status,
    /// Labels, with the filter that gave each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<Label>,
    /// Final info (filters read it; `relabel` re-runs them on it).
    #[serde(default, skip_serializing_if = "Info::is_empty")]
    pub info: Info,
    /// Worker that ran it.
    pub worker: usize,
    /// Attempt number that succeeded (or the last one, if given up).
    pub attempt: u32,
    /// Wall time of that attempt, milliseconds.
    pub wall_ms: f64,
    /// Why it was given up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Frame locations by frame key.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub frames: std::collections::BTreeMap<String, FrameRef>,
    /// The oldest and newest policy version that acted in it, for an episode a
    /// training rollout recorded (a follow-mode loader's staleness bound reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<[u64; 2]>,
    /// When the writer took the episode (Unix seconds): for a rollout, which hands each
    /// episode over as it ends, when it ended. A report draws a training run by wall
    /// time from it. Absent in datasets written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<f64>,
    /// A multi-agent env's episode: each agent's return, in `env.agents`' order (the
    /// agents' rewards summed over the episode; see [`crate::agents`]). Absent for one agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_returns: Option<Vec<f64>>,
}

/// A data file of a shard as committed: where it is, how long, and its content hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSum {
    /// Path relative to the dataset root, `/`-separated (`steps/shard-000003.parquet`).
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
    /// XXH3-64 of the whole file, 16 lowercase hex digits.
    pub xxh3: String,
}

impl FileSum {
    /// Size and hash of the file at `path` (read back from disk: what is committed is
    /// what was written, not what we meant to write). `rel` is what the index records.
    pub fn of(path: &Path, rel: String) -> Result<FileSum> {
        use std::io::Read;
        let mut f = File::open(path).io("opening", path)?;
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut bytes = 0u64;
        loop {
            let n = f.read(&mut buf).io("reading", path)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            bytes += n as u64;
        }
        Ok(FileSum { path: rel, bytes, xxh3: format!("{:016x}", h.digest()) })
    }
}

/// `index/shard-NNNNNN.json`: the commit record of one shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardIndex {
    /// Shard number.
    pub shard: u32,
    /// Rows in the Parquet file (0 for a shard of given-up episodes only: it has no files).
    pub rows: u64,
    /// Bytes of the Parquet file, checked on open.
    pub parquet_bytes: u64,
    /// Episodes in the shard, in row order.
    pub episodes: Vec<IndexEntry>,
    /// Every data file of the shard with its size and hash (format version 2; empty in
    /// version 1 indexes, whose files are found by name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileSum>,
}

/// Paths inside a dataset directory.
#[derive(Clone, Debug)]
pub struct Paths {
    /// The dataset root.
    pub root: PathBuf,
}

impl Paths {
    /// Paths under `root`.
    pub fn new(root: &Path) -> Paths {
        Paths { root: root.to_path_buf() }
    }
    /// `rollway.json`.
    pub fn metadata(&self) -> PathBuf {
        self.root.join(METADATA)
    }
    /// Where half-written files live until they are committed.
    pub fn tmp(&self) -> PathBuf {
        self.root.join(TMP)
    }
    /// Where a shard's finished data files wait for their index to commit; they keep
    /// their path relative to the root under it (`.tmp/publish/steps/shard-N.parquet`).
    pub fn publish_dir(&self) -> PathBuf {
        self.tmp().join(PUBLISH)
    }
    /// The staged place of the data file whose final place is `path`.
    pub fn staged(&self, path: &Path) -> PathBuf {
        match path.strip_prefix(&self.root) {
            Ok(rel) => self.publish_dir().join(rel),
            Err(_) => path.to_path_buf(),
        }
    }
    /// The data file whose final place is `path`, wherever it is now: there, or still
    /// staged (its index committed, the publish rename not done yet).
    pub fn located(&self, path: &Path) -> PathBuf {
        let staged = self.staged(path);
        if !path.exists() && staged.exists() {
            staged
        } else {
            path.to_path_buf()
        }
    }
    /// Opens the data file whose final place is `path` with `open`, staged or final.
    /// The writer may publish it between our look and our open; the rename is atomic,
    /// so when the staged open fails and the staged file is gone, the final one is there.
    pub fn open_located<T>(&self, path: &Path, open: impl Fn(&Path) -> Result<T>) -> Result<(PathBuf, T)> {
        if path.exists() {
            return open(path).map(|t| (path.to_path_buf(), t));
        }
        let staged = self.staged(path);
        match open(&staged) {
            Err(_) if !staged.exists() => open(path).map(|t| (path.to_path_buf(), t)),
            r => r.map(|t| (staged, t)),
        }
    }
    /// `path` relative to the root, `/`-separated, as the index records it.
    pub fn rel(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
    }
    /// The final place of a file the index records as `rel`, if `rel` is a plain
    /// relative path inside the dataset (no `..`, not absolute).
    pub fn resolve(&self, rel: &str) -> Option<PathBuf> {
        let p = Path::new(rel);
        p.components().all(|c| matches!(c, std::path::Component::Normal(_))).then(|| self.root.join(p))
    }
    /// Where a repair moves files that are not part of the dataset (never deleted).
    pub fn quarantine(&self) -> PathBuf {
        self.root.join(QUARANTINE)
    }
    /// The writer lock file.
    pub fn lock(&self) -> PathBuf {
        self.root.join(".lock")
    }
    /// Directory of Parquet step shards.
    pub fn steps_dir(&self) -> PathBuf {
        self.root.join("steps")
    }
    /// Directory of shard index files.
    pub fn index_dir(&self) -> PathBuf {
        self.root.join("index")
    }
    /// Parquet shard `n`.
    pub fn shard(&self, n: u32) -> PathBuf {
        self.steps_dir().join(format!("shard-{n:06}.parquet"))
    }
    /// Index file of shard `n`.
    pub fn shard_index(&self, n: u32) -> PathBuf {
        self.index_dir().join(format!("shard-{n:06}.json"))
    }
    /// Directory of frames for a frame key.
    pub fn frames_dir(&self, key: &str) -> PathBuf {
        self.root.join("frames").join(key.replace('/', "."))
    }
    /// Frame file of shard `n` for a key.
    pub fn frames(&self, key: &str, n: u32, ext: &str) -> PathBuf {
        self.frames_dir(key).join(format!("shard-{n:06}.{ext}"))
    }
}

/// The shard number of a file named exactly `shard-NNNNNN.<ext>` (as the writer names
/// them: at least six digits, no sign, no leading zeros beyond the padding); anything
/// else — `shard-7.txt`, `shard-000000.bak.json` — is not a shard file.
pub(crate) fn shard_number(name: &str, ext: &str) -> Option<u32> {
    let digits = name.strip_prefix("shard-")?.strip_suffix(ext)?.strip_suffix('.')?;
    let n: u32 = if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()?
    } else {
        return None;
    };
    (format!("{n:06}") == digits).then_some(n)
}

/// The column name of a leaf (`observations`, `observations/rgb`, `actions/_index_0`).
pub fn column_name(prefix: &str, leaf: &Leaf) -> String {
    if leaf.path.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}/{}", leaf.path)
    }
}

/// Image-like observation leaves (uint8 H×W×C with C in 1, 3, 4) go to frame files,
/// not Parquet: they are most of the bytes and want their own codecs.
pub fn is_frame_leaf(leaf: &Leaf) -> bool {
    leaf.dtype == DType::U8 && leaf.shape.len() == 3 && matches!(leaf.shape[2], 1 | 3 | 4) && leaf.shape[0] * leaf.shape[1] >= 64
}

/// The frame keys of an observation layout.
pub fn frame_keys(obs: &Layout) -> Vec<String> {
    obs.leaves().iter().filter(|l| is_frame_leaf(l)).map(|l| column_name("observations", l)).collect()
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or the new
/// one: write a temp file in `tmp_dir`, fsync it, rename over `path`, fsync the directory.
pub(crate) fn write_atomic(path: &Path, tmp_dir: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = tmp_dir.join(format!("{name}.partial"));
    crate::faults::check("creating", &tmp)?;
    let mut f = File::create(&tmp).io("creating", &tmp)?;
    f.write_all(bytes).io("writing", &tmp)?;
    crate::faults::check("syncing", &tmp)?;
    f.sync_all().io("syncing", &tmp)?;
    drop(f);
    commit_file(&tmp, path)
}

/// Renames a fully written, synced file into place and makes the rename durable.
pub(crate) fn commit_file(from: &Path, to: &Path) -> Result<()> {
    crate::faults::check("renaming into", to)?;
    std::fs::rename(from, to).io("renaming into", to)?;
    sync_dir(to.parent().unwrap_or(Path::new(".")))
}

/// fsyncs a directory so renames and creations inside it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    crate::faults::check("syncing directory", dir)?;
    File::open(dir).and_then(|d| d.sync_all()).io("syncing directory", dir)
}

/// Creates `dir` and any missing parents, fsyncing the parent of each directory it
/// creates, so the directory entries themselves survive a crash (a file renamed into
/// a directory whose own entry was never synced can vanish with it).
pub(crate) fn create_dir_durable(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_durable(parent)?;
    }
    crate::faults::check("creating", dir)?;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => return Ok(()),
        Err(e) => return Err(Error::Io { op: "creating", path: dir.to_path_buf(), source: e }),
    }
    sync_dir(dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")))
}

/// Refuses to work through a symbolic link where rollway writes or removes files.
pub(crate) fn require_real_dir(dir: &Path) -> Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::NotADataset {
            path: dir.to_path_buf(),
            message: "it is a symbolic link; rollway does not write or clean up through links".into(),
        }),
        _ => Ok(()),
    }
}

/// Reads and parses a JSON file, mapping damage to [`Error::Corrupt`].
pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).io("reading", path)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt { path: path.to_path_buf(), message: e.to_string() })
}

/// The files the writer gives shard `n` when it has rows: its Parquet file and one
/// frame file per frame key.
pub(crate) fn expected_files(paths: &Paths, meta: &Metadata, n: u32) -> Vec<PathBuf> {
    let mut v = vec![paths.shard(n)];
    for key in &meta.frame_keys {
        v.push(paths.frames(key, n, frame_ext(meta, key)));
    }
    v
}

/// The file extension of a frame key's media.
pub(crate) fn frame_ext(meta: &Metadata, key: &str) -> &'static str {
    frames::media(frames::media_name_for(&meta.frame_media, key)).map_or("raw", |m| m.ext())
}

/// Refuses a `dir` without `rollway.json` before anything is created in it (relabelling
/// or closing a typo must not make a dataset).
pub(crate) fn require_dataset(dir: &Path) -> Result<()> {
    if Paths::new(dir).metadata().is_file() {
        Ok(())
    } else {
        Err(Error::NotADataset { path: dir.to_path_buf(), message: format!("no {}", METADATA) })
    }
}
