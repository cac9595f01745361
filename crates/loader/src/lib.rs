//! Training batches from a rollway dataset: windows of `clip_len` steps taken every
//! `stride` steps inside episodes (or whole episodes, padded), shuffled per epoch
//! without replacement (or with, on request), sharded across data-parallel ranks,
//! resumable mid-epoch, assembled by a pool of threads into reused contiguous arrays
//! with `prefetch_batches` in flight. Works on a dataset that is still being written:
//! it sees the episodes committed when it was opened.
//!
//! Speed comes from the in-memory layout (`row`: a step's numeric fields side by side,
//! each as narrow as its values allow, so a shuffled window is one short contiguous
//! run) and from the caller's thread assembling batches itself whenever the next one
//! is not ready, instead of sleeping until a pool thread hands it over.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let env = rollway_envs::make("CartPole-v1", &Default::default()).unwrap();
//! # let w = rollway_store::DatasetWriter::create(dir.path(), env.spec(), "x", 0, serde_json::json!({}), Default::default()).unwrap();
//! # let mut c = rollway_store::Collector::new(env, w);
//! # for s in 0..4 { c.reset(Some(s)).unwrap(); for i in 0..20 { c.step_discrete(i % 2).unwrap(); } }
//! # c.close().unwrap();
//! use rollway_loader::{Loader, LoaderConfig};
//!
//! let cfg = LoaderConfig { clip_len: 8, stride: 4, batch_size: 5, ..Default::default() };
//! let mut loader = Loader::open(dir.path(), cfg).unwrap();
//! let mut windows = 0;
//! while let Some(batch) = loader.next_batch().unwrap() {
//!     assert_eq!(batch.rewards.shape[1], 8);
//!     windows += batch.len();
//! }
//! assert_eq!(windows, loader.num_windows()); // every window exactly once per epoch
//! ```
#![deny(missing_docs)]

mod batch;
mod pipeline;
mod row;
mod table;

use std::path::Path;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rollway_core::seed::derive_seed;
use serde::{Deserialize, Serialize};

pub use batch::Batch;
pub use table::EpisodeSpan;

/// The one error type of `rollway-loader`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the dataset failed.
    #[error(transparent)]
    Store(#[from] rollway_store::Error),
    /// The configuration is inconsistent.
    #[error("loader config `{field}`: {message}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A loader thread died.
    #[error("loader thread failed: {0}")]
    Thread(String),
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which episodes to load.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Keep episodes with any of these labels (empty: all).
    pub labels: Vec<String>,
    /// Minimum return.
    pub min_return: Option<f64>,
    /// Maximum return.
    pub max_return: Option<f64>,
    /// Minimum length.
    pub min_length: Option<u64>,
    /// Maximum length.
    pub max_length: Option<u64>,
}

/// Loader settings.
#[derive(Clone, Debug)]
pub struct LoaderConfig {
    /// Steps per window; 0 means whole episodes (padded to the longest).
    pub clip_len: usize,
    /// Steps between window starts.
    pub stride: usize,
    /// Also take windows that run past an episode's end, padded (see `Batch::mask`).
    pub pad: bool,
    /// Windows per batch.
    pub batch_size: usize,
    /// Shuffle windows each epoch (seeded).
    pub shuffle: bool,
    /// Sample windows with replacement (an epoch is then `num_windows / world_size` draws).
    pub replacement: bool,
    /// Seed of the shuffles.
    pub seed: u64,
    /// This process's data-parallel rank.
    pub rank: usize,
    /// Number of data-parallel ranks.
    pub world_size: usize,
    /// Batches assembled ahead of the consumer.
    pub prefetch_batches: usize,
    /// Background threads assembling batches. The thread calling
    /// [`Loader::next_batch`] also assembles one whenever the next is not ready, so
    /// `threads + 1` cores work when loading is the bottleneck.
    pub threads: usize,
    /// Drop a last, smaller batch.
    pub drop_last: bool,
    /// Which episodes.
    pub select: Selection,
}

impl Default for LoaderConfig {
    fn default() -> Self {
        LoaderConfig {
            clip_len: 16,
            stride: 1,
            pad: false,
            batch_size: 256,
            shuffle: true,
            replacement: false,
            seed: 0,
            rank: 0,
            world_size: 1,
            prefetch_batches: 4,
            threads: default_threads(),
            drop_last: false,
            select: Selection::default(),
        }
    }
}

/// Background threads by default: one fewer than the CPU cores (the consumer is the
/// last one), at least one.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

impl LoaderConfig {
    /// This rank's share of `items` (all windows, or their indices) for `epoch`, in
    /// delivery order: the same order whatever the items are.
    pub(crate) fn order<T: Copy>(&self, items: &[T], epoch: u64) -> Vec<T> {
        let (r, w, n) = (self.rank, self.world_size, items.len());
        if self.replacement {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(derive_seed(self.seed, epoch), r as u64 + 1));
            return (0..n / w).map(|_| items[rng.random_range(0..n)]).collect();
        }
        let mut all = items.to_vec();
        if self.shuffle {
            all.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(derive_seed(self.seed, epoch)));
        }
        if w == 1 {
            return all;
        }
        // Strided split of one global permutation: ranks are disjoint and together cover it.
        all.into_iter().skip(r).step_by(w).collect()
    }

    /// How many windows of `n` one rank gets per epoch (the length of `order`).
    pub(crate) fn rank_len(&self, n: usize) -> usize {
        let (r, w) = (self.rank, self.world_size);
        if self.replacement { n / w } else { (n + w - 1 - r) / w }
    }

    /// Batches in an epoch of `len` windows.
    pub(crate) fn batches(&self, len: usize) -> u64 {
        let b = self.batch_size;
        (if self.drop_last { len / b } else { len.div_ceil(b) }) as u64
    }
}

/// Where a loader is: enough to resume mid-epoch and see exactly the windows not yet seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderState {
    /// Current epoch.
    pub epoch: u64,
    /// Batches of it already delivered.
    pub batches: u64,
}

/// A window: an episode (index into the loaded episodes) and a start step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Index into [`Loader::episodes`].
    pub episode: u32,
    /// First step.
    pub start: u32,
}

/// Batches from a dataset.
pub struct Loader {
    table: Arc<table::Table>,
    windows: Arc<Vec<Window>>,
    clip: usize,
    cfg: LoaderConfig,
    state: LoaderState,
    pipe: Option<pipeline::Pipeline>,
}

impl Loader {
    /// Opens the dataset at `dir`.
    pub fn open(dir: &Path, cfg: LoaderConfig) -> Result<Loader> {
        Loader::new(&rollway_store::Dataset::open(dir)?, cfg)
    }

    /// Loads the selected episodes of `ds`.
    pub fn new(ds: &rollway_store::Dataset, cfg: LoaderConfig) -> Result<Loader> {
        let bad = |field, message: String| Err(Error::Config { field, message });
        if cfg.batch_size == 0 {
            return bad("batch_size", "must be at least 1".into());
        }
        if cfg.stride == 0 {
            return bad("stride", "must be at least 1".into());
        }
        if cfg.world_size == 0 || cfg.rank >= cfg.world_size {
            return bad("rank", format!("rank {} is not below world_size {}", cfg.rank, cfg.world_size));
        }
        let table = table::Table::load(ds, &cfg.select)?;
        let whole = cfg.clip_len == 0;
        let clip = if whole { table.episodes.iter().map(|e| e.length).max().unwrap_or(1).max(1) } else { cfg.clip_len };
        let mut windows = Vec::new();
        for (i, e) in table.episodes.iter().enumerate() {
            let episode = i as u32;
            if whole {
                windows.push(Window { episode, start: 0 });
                continue;
            }
            // Without padding a window must fit inside its episode; with it, any start before the end.
            let last = if cfg.pad { e.length.saturating_sub(1) } else { e.length.checked_sub(clip).map_or(0, |x| x) };
            if !cfg.pad && e.length < clip {
                continue;
            }
            windows.extend((0..=last).step_by(cfg.stride).map(|s| Window { episode, start: s as u32 }));
        }
        Ok(Loader { table: Arc::new(table), windows: Arc::new(windows), clip, cfg, state: LoaderState { epoch: 0, batches: 0 }, pipe: None })
    }

    /// Windows per epoch over all ranks.
    pub fn num_windows(&self) -> usize {
        self.windows.len()
    }

    /// Steps per window.
    pub fn clip_len(&self) -> usize {
        self.clip
    }

    /// The loaded episodes.
    pub fn episodes(&self) -> &[EpisodeSpan] {
        &self.table.episodes
    }

    /// Every window, in dataset order.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// This rank's windows of `epoch`, in delivery order.
    pub fn epoch_order(&self, epoch: u64) -> Vec<u32> {
        self.cfg.order(&(0..self.windows.len() as u32).collect::<Vec<u32>>(), epoch)
    }

    /// Batches per epoch for this rank.
    pub fn batches_per_epoch(&self) -> u64 {
        self.cfg.batches(self.cfg.rank_len(self.windows.len()))
    }

    /// Where the loader is.
    pub fn state(&self) -> LoaderState {
        self.state
    }

    /// Continues from `state` (e.g. after a restart): the next batch is the one after it.
    pub fn restore(&mut self, state: LoaderState) {
        self.pipe = None;
        self.state = state;
    }

    /// The next batch of the current epoch, or `None` once it is over (the following
    /// call starts the next epoch).
    pub fn next_batch(&mut self) -> Result<Option<&Batch>> {
        if self.pipe.is_none() {
            self.pipe = Some(pipeline::Pipeline::start(self.table.clone(), self.windows.clone(), self.clip, self.cfg.clone(), self.state));
        }
        let pipe = self.pipe.as_mut().expect("started above");
        match pipe.next()? {
            Some(()) => {
                self.state.batches += 1;
                Ok(self.pipe.as_ref().and_then(|p| p.current()))
            }
            None => {
                self.state = LoaderState { epoch: self.state.epoch + 1, batches: 0 };
                Ok(None)
            }
        }
    }
}
