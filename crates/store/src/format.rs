//! The on-disk format (see FORMAT.md): paths, metadata, the per-shard index, and
//! the one write primitive everything commits through (write, fsync, rename, fsync dir).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use rollway_core::{DType, EnvSpec, Info, Label, Layout, Leaf, Space, Status};
use serde::{Deserialize, Serialize};

use crate::error::IoContext;
use crate::{Error, Result};

/// Format version written by this build; readers refuse newer ones.
pub const FORMAT_VERSION: u32 = 1;

/// The metadata file at the dataset root.
pub const METADATA: &str = "rollway.json";

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
}

/// `index/shard-NNNNNN.json`: the commit record of one shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardIndex {
    /// Shard number.
    pub shard: u32,
    /// Rows in the Parquet file.
    pub rows: u64,
    /// Bytes of the Parquet file, checked on open.
    pub parquet_bytes: u64,
    /// Episodes in the shard, in row order.
    pub episodes: Vec<IndexEntry>,
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
        self.root.join(".tmp")
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

/// Parses `shard-NNNNNN.<ext>` file names.
pub fn shard_number(name: &str) -> Option<u32> {
    name.strip_prefix("shard-")?.split('.').next()?.parse().ok()
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
pub fn write_atomic(path: &Path, tmp_dir: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = tmp_dir.join(format!("{name}.partial"));
    let mut f = File::create(&tmp).io("creating", &tmp)?;
    f.write_all(bytes).io("writing", &tmp)?;
    f.sync_all().io("syncing", &tmp)?;
    drop(f);
    commit_file(&tmp, path)
}

/// Renames a fully written, synced file into place and makes the rename durable.
pub fn commit_file(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).io("renaming into", to)?;
    sync_dir(to.parent().unwrap_or(Path::new(".")))
}

/// fsyncs a directory so renames and creations inside it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).io("syncing directory", dir)
}

/// Reads and parses a JSON file, mapping damage to [`Error::Corrupt`].
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).io("reading", path)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt { path: path.to_path_buf(), message: e.to_string() })
}
