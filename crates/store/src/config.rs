//! What a writer is told (how much it buffers, how it stores frames) and what it
//! reports: the settings every layer of the writer reads, below all of them.

use std::time::Duration;

use crate::frames::FrameOptions;

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
    /// Whether the writer thread, having emptied the queue, sleeps between looks at it
    /// for ~1 ms before it blocks, so that sending does not have to wake it (see
    /// `shards::receive`). For a producer that sends an episode at a time from a thread
    /// it must not stall (a Python `DataCollector`); the generator's recording ran ~5%
    /// slower with it, so it is off by default.
    pub linger: bool,
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
            linger: false,
        }
    }
}

/// The most episodes in one shard, whatever the config says: it bounds the index file
/// (a few hundred bytes an entry) and what a reader holds per shard.
pub const MAX_SHARD_EPISODES: usize = 16_384;

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
