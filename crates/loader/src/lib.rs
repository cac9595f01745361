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

mod batch;
mod config;
mod error;
mod follow;
mod pipeline;
mod row;
mod table;

use std::path::Path;
use std::sync::Arc;

pub use batch::Batch;
pub use config::{default_threads, LoaderConfig, LoaderState, Selection, Window};
pub use error::{Error, Result};
pub use follow::Follow;
pub use pipeline::LentBatch;
pub use table::{needed_shards, shard_chooser, EpisodeSpan};

/// Batches from a dataset.
pub struct Loader {
    /// The dataset's directory, read again by `refresh`.
    root: std::path::PathBuf,
    view: View,
    cfg: LoaderConfig,
    state: LoaderState,
    pipe: Option<pipeline::Pipeline>,
    /// A refreshed view waiting for the epoch in progress to end.
    pending: Option<View>,
    /// Rounds instead of epochs, when following a growing dataset (`follow`).
    follow: Option<follow::Following>,
    /// Called before the dataset is read again ([`Loader::before_read`]).
    before_read: Option<BeforeRead>,
}

/// What brings a loader's directory up to date before it is read again: a replica
/// of a dataset on an object store pulls the store's new shards.
pub type BeforeRead = Box<dyn FnMut() -> std::result::Result<(), String> + Send + Sync>;

/// What the loader sees of the dataset: the selected episodes and their windows.
struct View {
    table: Arc<table::Table>,
    windows: Arc<Vec<Window>>,
    clip: usize,
}

impl View {
    fn load(ds: &rollway_store::Dataset, cfg: &LoaderConfig, cache: Option<&mut table::ColumnCache>) -> Result<View> {
        let table = table::Table::load(ds, &cfg.select, cache)?;
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
        Ok(View { table: Arc::new(table), windows: Arc::new(windows), clip })
    }
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
        if cfg.follow.is_some() && cfg.replacement {
            return bad("replacement", "a following loader delivers each window once a round; bound repeats with max_reuse".into());
        }
        let mut view = View::load(ds, &cfg, None)?;
        let follow = cfg.follow.clone().map(follow::Following::new);
        if follow.is_some() {
            // The first batch starts the first round (reading the dataset again).
            view.windows = Arc::new(Vec::new());
        }
        let state = LoaderState { epoch: 0, batches: 0 };
        Ok(Loader { root: ds.root().to_path_buf(), view, cfg, state, pipe: None, pending: None, follow, before_read: None })
    }

    /// Windows per epoch over all ranks.
    pub fn num_windows(&self) -> usize {
        self.view.windows.len()
    }

    /// Steps per window.
    pub fn clip_len(&self) -> usize {
        self.view.clip
    }

    /// The loaded episodes.
    pub fn episodes(&self) -> &[EpisodeSpan] {
        &self.view.table.episodes
    }

    /// Every window, in dataset order.
    pub fn windows(&self) -> &[Window] {
        &self.view.windows
    }

    /// This rank's windows of `epoch`, in delivery order.
    pub fn epoch_order(&self, epoch: u64) -> Vec<u32> {
        self.cfg.order(&(0..self.view.windows.len() as u32).collect::<Vec<u32>>(), epoch)
    }

    /// Batches per epoch for this rank.
    pub fn batches_per_epoch(&self) -> u64 {
        self.cfg.batches(self.cfg.rank_len(self.view.windows.len()))
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

    /// Reads the dataset again and takes in the episodes committed since (a dataset
    /// that is still being written). They join at the next epoch: an epoch in progress
    /// keeps its windows, so each is still delivered exactly once. Returns how many
    /// more episodes the loader will see than it sees now.
    pub fn refresh(&mut self) -> Result<usize> {
        self.bring_up_to_date()?;
        let view = View::load(&rollway_store::Dataset::open(&self.root)?, &self.cfg, None)?;
        let added = view.table.episodes.len().saturating_sub(self.view.table.episodes.len());
        if self.state.batches == 0 {
            self.switch(view);
        } else {
            self.pending = Some(view);
        }
        Ok(added)
    }

    /// Has `hook` called before every read of the dataset after the first: each
    /// [`Loader::refresh`] and, following, each round.
    pub fn before_read(&mut self, hook: BeforeRead) {
        self.before_read = Some(hook);
    }

    pub(crate) fn bring_up_to_date(&mut self) -> Result<()> {
        match self.before_read.as_mut() {
            Some(hook) => hook().map_err(Error::Source),
            None => Ok(()),
        }
    }

    fn switch(&mut self, view: View) {
        // The pool may have run ahead into the next epoch with the old windows.
        self.pipe = None;
        self.view = view;
    }

    /// Like [`Loader::next_batch`], but the batch is the caller's to keep: it goes back
    /// to the pool when dropped (Python's numpy views hold it this way).
    pub fn next_lent(&mut self) -> Result<Option<LentBatch>> {
        if self.next_batch()?.is_none() {
            return Ok(None);
        }
        Ok(self.pipe.as_mut().and_then(|p| p.lend()))
    }

    /// The next batch of the current epoch, or `None` once it is over (the following
    /// call starts the next epoch). A following loader (`LoaderConfig::follow`) goes
    /// on from round to round and returns `None` only when no window is eligible now.
    pub fn next_batch(&mut self) -> Result<Option<&Batch>> {
        if self.follow.is_some() {
            return self.follow_batch();
        }
        Ok(if self.step()? { self.current() } else { None })
    }

    /// The batch the last [`Loader::next_batch`] returned, while no other call moved on.
    pub fn current(&self) -> Option<&Batch> {
        self.pipe.as_ref().and_then(|p| p.current())
    }

    /// Moves to the next batch of the epoch (true), or past the epoch's end (false).
    fn step(&mut self) -> Result<bool> {
        if self.pipe.is_none() {
            let v = &self.view;
            self.pipe = Some(pipeline::Pipeline::start(v.table.clone(), v.windows.clone(), v.clip, self.cfg.clone(), self.state));
        }
        let pipe = self.pipe.as_mut().expect("started above");
        match pipe.next()? {
            Some(()) => {
                self.state.batches += 1;
                Ok(true)
            }
            None => {
                self.state = LoaderState { epoch: self.state.epoch + 1, batches: 0 };
                if let Some(view) = self.pending.take() {
                    self.switch(view);
                }
                Ok(false)
            }
        }
    }
}
