//! LeRobot v3.0 datasets: export a rollway dataset so `LeRobotDataset` (and plain
//! pyarrow/PyAV) reads it, and import a LeRobot v3.0 dataset back.
//!
//! The layout written (LeRobot's `DEFAULT_*_PATH` templates):
//!
//! ```text
//! meta/info.json                                   codebase_version "v3.0", fps, features, totals
//! meta/stats.json                                  min/max/mean/std/count/q01…q99 per feature (images per channel, in [0, 1])
//! meta/tasks.parquet                               one task (`--task`, default the env id) → task_index 0
//! meta/episodes/chunk-000/file-000.parquet         one row per episode: ranges, file indices, timestamps, stats/…
//! meta/rollway.json                                rollway's spaces and per-episode fields, for a lossless import
//! data/chunk-CCC/file-FFF.parquet                  one row per frame, many episodes per file
//! videos/<video_key>/chunk-CCC/file-FFF.mp4        AV1 (or H.264), many episodes per file back to back
//! ```
//!
//! ## Names
//!
//! | rollway | LeRobot feature |
//! |---|---|
//! | the one non-image observation leaf | `observation.state` |
//! | several non-image leaves (Dict/Tuple) | `observation.<path>` (`/` → `.`, e.g. `observation.inventory`) |
//! | image leaves (uint8 H×W×3) | video `observation.images.<path>` (`observation.image` for a bare image space) |
//! | the action (one leaf; Discrete as int64 `[1]`) | `action` (`action.<path>` for Dict/Tuple actions) |
//! | rewards | `next.reward` (float32, or float64 when a reward is not exactly a float32) |
//! | terminations | `next.done`, and `next.terminated` |
//! | truncations | `next.truncated` |
//!
//! Leaves keep their dtype (a float64 Box stays float64) and are flattened to one
//! dimension (`[n]`, or `[1]` for scalars, which LeRobot stores as plain values).
//!
//! ## The final observation
//!
//! LeRobot frames are step-aligned (observation, then the action taken and the
//! reward that followed); Gymnasium episodes have T+1 observations for T steps.
//! rollway exports **T+1 frames per episode**: frame `t < T` is step `t`, and the
//! last frame carries the final observation with a zero action, `next.reward` 0,
//! `next.done` true, `next.terminated`/`next.truncated` false and
//! `rollway.final_observation` true (false on every other frame). Videos therefore
//! hold every observation, and `import` drops that frame's action and flags, so
//! `export` → `import` reproduces observations, actions, rewards and flags exactly
//! (video frames within the codec's loss). Filter on `rollway.final_observation` to
//! train on steps only.
//!
//! A LeRobot dataset not made by rollway has no such column: each of its N frames
//! is a step, and the final observation repeats the last frame's.

mod export;
mod import;
mod meta;
mod plan;
mod source;
mod stats;
mod videos;

use std::path::PathBuf;

pub use rollway_media::video::Codec;

pub use export::export;
pub use import::import;

/// The `codebase_version` written to `meta/info.json`.
pub const CODEBASE_VERSION: &str = "v3.0";

/// The video codecs an export writes, the default first.
pub const WRITES: [Codec; 2] = [Codec::Av1, Codec::H264];

/// The export codec called `name` (`--video-codec`, Python's `video_codec`), or
/// why not: the message lists the codecs an export writes.
pub fn export_codec(name: &str) -> std::result::Result<Codec, String> {
    Codec::parse(name).filter(|c| WRITES.contains(c)).ok_or_else(|| format!("choose one of {}", videos::writable()))
}

/// The bool column that marks an episode's extra final-observation frame.
pub const FINAL_OBSERVATION: &str = "rollway.final_observation";

/// The feature holding the agent's recurrent state after each step (float32 `[S]`,
/// zeros on the final-observation frame), in exports of datasets that store one.
pub const AGENT_STATE: &str = "rollway.agent_state";

/// How to export.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Frames per second: timestamps are `frame_index / fps`, and videos play at it.
    pub fps: u32,
    /// The task of every episode (LeRobot datasets need one); default: the env id.
    pub task: Option<String>,
    /// `robot_type` in `info.json` (null when unset).
    pub robot_type: Option<String>,
    /// Replace an existing output directory, which must be a LeRobot dataset (hold
    /// `meta/info.json` with a `codebase_version`); anything else is refused.
    pub force: bool,
    /// The video codec: AV1 by default, as LeRobot writes (`h264` encodes several
    /// times faster, for bigger files).
    pub video_codec: Codec,
    /// Constant rate factor (lower is better quality, bigger files); default the
    /// codec's: 30 for AV1 (LeRobot's), 23 for H.264.
    pub crf: Option<f32>,
    /// Frames between keyframes (bounds how far a reader decodes to reach a frame);
    /// default 2 for AV1 (LeRobot's), 32 for H.264.
    pub keyint: Option<u32>,
    /// Encoder threads (0: one per core); episodes encode in parallel.
    pub encode_threads: usize,
    /// Start a new data file once one reaches this size (LeRobot's default is 100).
    pub data_file_size_in_mb: u64,
    /// Start a new video file once one reaches this size (LeRobot's default is 200).
    pub video_file_size_in_mb: u64,
    /// Files per chunk directory (LeRobot's default is 1000).
    pub chunks_size: u64,
    /// Also start new data and video files after this many episodes.
    pub episodes_per_file: Option<u64>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            fps: 30,
            task: None,
            robot_type: None,
            force: false,
            video_codec: Codec::Av1,
            crf: None,
            keyint: None,
            encode_threads: 0,
            data_file_size_in_mb: 100,
            video_file_size_in_mb: 200,
            chunks_size: 1000,
            episodes_per_file: None,
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug)]
pub struct ExportReport {
    /// The LeRobot dataset root.
    pub out: PathBuf,
    /// Episodes written.
    pub episodes: u64,
    /// Steps of those episodes.
    pub steps: u64,
    /// Frames written (steps + one final observation per episode).
    pub frames: u64,
    /// Given-up episodes (no data) left out.
    pub given_up: u64,
    /// Data parquet files written.
    pub data_files: u64,
    /// mp4 files written (all video keys).
    pub video_files: u64,
    /// The video keys.
    pub video_keys: Vec<String>,
    /// Bytes written.
    pub bytes: u64,
}

/// What an import wrote.
#[derive(Clone, Debug)]
pub struct ImportReport {
    /// The env id recorded in the rollway dataset.
    pub env: String,
    /// The rollway dataset written.
    pub out: PathBuf,
    /// Episodes imported.
    pub episodes: u64,
    /// Steps imported.
    pub steps: u64,
    /// Bytes of the rollway dataset.
    pub bytes: u64,
    /// Whether the source was a rollway export (final observations and spaces restored).
    pub from_rollway: bool,
    /// Features not imported (strings, PNG images, more than one dimension, …).
    pub skipped_features: Vec<String>,
}
