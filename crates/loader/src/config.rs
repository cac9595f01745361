//! What to load and how: settings, the selection of episodes, windows, and the
//! position a loader can resume from; and the epoch order they imply.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rollway_core::seed::derive_seed;
use serde::{Deserialize, Serialize};

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
    /// Only the newest this many selected episodes (a replay buffer's capacity).
    pub last_episodes: Option<usize>,
    /// Only the newest selected episodes that hold this many steps (the oldest one
    /// kept may take the total past it).
    pub last_steps: Option<u64>,
    /// Skip episodes any of whose steps a policy older than this version chose (the
    /// `policy_version` a training rollout records; other episodes count as version 0).
    pub min_policy_version: Option<u64>,
}

impl Selection {
    /// Whether it leaves any committed episode out (given-up ones aside): a reader of
    /// a store that keeps everything pulls every shard without choosing.
    pub fn narrows(&self) -> bool {
        let Selection { labels, min_return, max_return, min_length, max_length, last_episodes, last_steps, min_policy_version } = self;
        !labels.is_empty()
            || min_return.is_some()
            || max_return.is_some()
            || min_length.is_some()
            || max_length.is_some()
            || last_episodes.is_some()
            || last_steps.is_some()
            || min_policy_version.is_some()
    }
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
    /// [`crate::Loader::next_batch`] also assembles one whenever the next is not ready, so
    /// `threads + 1` cores work when loading is the bottleneck.
    pub threads: usize,
    /// Drop a last, smaller batch.
    pub drop_last: bool,
    /// Also give each step's next observation (`Batch::next_observations`): an
    /// episode's last step gets its final observation, so a TD learner forms
    /// `(s, a, r, s')` for every step. Off by default: it copies (and for frames,
    /// decodes) the observations twice.
    pub next_observations: bool,
    /// Which episodes.
    pub select: Selection,
    /// Follow a dataset that is still being written, round after round (a replay
    /// buffer; see `follow`).
    pub follow: Option<crate::Follow>,
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
            next_observations: false,
            select: Selection::default(),
            follow: None,
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
        if self.replacement {
            n / w
        } else {
            (n + w - 1 - r) / w
        }
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
    /// Index into [`crate::Loader::episodes`].
    pub episode: u32,
    /// First step.
    pub start: u32,
}
