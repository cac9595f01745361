//! `rollway.Loader`: the training loader, its batches handed to Python without a copy.
//!
//! Every array of a batch is a numpy view of the loader's own batch buffer, lent
//! out of the pool (`rollway_loader::LentBatch`). The buffer goes back only when the
//! last view of it is gone (see `arrays`), so a batch Python keeps is never
//! overwritten, and a loop that drops each batch before the next runs with the
//! pool's fixed set of buffers, allocating nothing.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};
use rollway_core::Array;
use rollway_loader::{Follow, LentBatch, Loader, LoaderConfig, LoaderState, Selection};

use crate::arrays;
use crate::errors::ToPy;

/// An open loader (the `rollway.Loader` class wraps it).
#[pyclass(module = "rollway._rollway")]
pub struct LoaderHandle {
    inner: Loader,
    fields: Option<Vec<String>>,
    /// `torch.from_numpy`, when batches are to be torch tensors (made here, in one call
    /// per batch from Python's side, instead of a Python loop over the fields).
    to_tensor: Option<Py<PyAny>>,
    /// Epochs the current iteration still delivers (see `start`).
    epochs_left: u64,
}

#[pymethods]
impl LoaderHandle {
    #[new]
    #[pyo3(signature = (path, clip=16, stride=1, batch=256, shuffle=true, seed=0, rank=0, world=1, pad=false, drop_last=false, replacement=false, prefetch=4, threads=None, labels=vec![], min_return=None, max_return=None, min_length=None, max_length=None, fields=None, torch=false, follow=false, last_episodes=None, last_steps=None, max_version_lag=None, max_reuse=None, round_windows=None, next_observations=false, min_policy_version=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        clip: usize,
        stride: usize,
        batch: usize,
        shuffle: bool,
        seed: u64,
        rank: usize,
        world: usize,
        pad: bool,
        drop_last: bool,
        replacement: bool,
        prefetch: usize,
        threads: Option<usize>,
        labels: Vec<String>,
        min_return: Option<f64>,
        max_return: Option<f64>,
        min_length: Option<u64>,
        max_length: Option<u64>,
        fields: Option<Vec<String>>,
        torch: bool,
        follow: bool,
        last_episodes: Option<usize>,
        last_steps: Option<u64>,
        max_version_lag: Option<u64>,
        max_reuse: Option<u32>,
        round_windows: Option<usize>,
        next_observations: bool,
        min_policy_version: Option<u64>,
    ) -> PyResult<Self> {
        let to_tensor = if torch { Some(py.import("torch")?.getattr("from_numpy")?.unbind()) } else { None };
        let select = Selection { labels, min_return, max_return, min_length, max_length, last_episodes, last_steps, min_policy_version };
        let follow = follow.then_some(Follow { max_version_lag, max_reuse, round_windows });
        let d = LoaderConfig::default();
        let cfg = LoaderConfig {
            clip_len: clip,
            stride,
            pad,
            batch_size: batch,
            shuffle,
            replacement,
            seed,
            rank,
            world_size: world,
            prefetch_batches: prefetch,
            threads: threads.unwrap_or(d.threads),
            drop_last,
            next_observations,
            select,
            follow,
        };
        // On a store, only the shards the selection reads are fetched (a replay's newest, say).
        let choose = rollway_loader::shard_chooser(cfg.select.clone());
        let (path, replica) = py.detach(|| crate::errors::dataset_source(&path, choose))?;
        let mut inner = py.detach(|| Loader::open(&path, cfg)).py()?;
        if let Some(r) = replica {
            // Each refresh, and each round of a following loader, pulls new shards first.
            inner.before_read(r.into_hook());
        }
        Ok(LoaderHandle { inner, fields, to_tensor, epochs_left: 0 })
    }

    /// Windows per epoch over all ranks.
    #[getter]
    fn num_windows(&self) -> usize {
        self.inner.num_windows()
    }

    /// Batches per epoch for this rank.
    #[getter]
    fn batches_per_epoch(&self) -> u64 {
        self.inner.batches_per_epoch()
    }

    /// Steps per window.
    #[getter]
    fn clip_len(&self) -> usize {
        self.inner.clip_len()
    }

    /// Episodes the loader sees.
    #[getter]
    fn num_episodes(&self) -> usize {
        self.inner.episodes().len()
    }

    /// Where the loader is: (epoch, batches of it delivered).
    fn state(&self) -> (u64, u64) {
        let s = self.inner.state();
        (s.epoch, s.batches)
    }

    /// Continues from a state: the next batch is the one after it.
    fn restore(&mut self, epoch: u64, batches: u64) {
        self.inner.restore(LoaderState { epoch, batches });
    }

    /// The learner's policy version, for a following loader's staleness bound.
    fn set_version(&mut self, version: u64) {
        self.inner.set_version(version);
    }

    /// Takes in episodes committed since; they join at the next epoch.
    fn refresh(&mut self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| self.inner.refresh()).py()
    }

    /// Makes the handle iterate over the next `epochs` epochs (the rest of the current
    /// one counting as the first). Iterating in Rust saves a Python frame per batch.
    fn start(mut slf: PyRefMut<'_, Self>, epochs: u64) -> PyRefMut<'_, Self> {
        slf.epochs_left = epochs;
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        while self.epochs_left > 0 {
            match self.next_batch(py)? {
                Some(b) => return Ok(Some(b)),
                None => self.epochs_left -= 1,
            }
        }
        Ok(None)
    }

    /// The next batch of the epoch as a dict of numpy arrays, or None at its end
    /// (the following call starts the next epoch).
    fn next_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let Some(lent) = py.detach(|| inner.next_lent()).py()? else { return Ok(None) };
        batch_dict(py, lent, self.fields.as_deref(), self.to_tensor.as_ref()).map(Some)
    }
}

/// A batch dict's keys, in the order [`batch_dict`] fills it.
const KEYS: [&str; 14] = [
    "observations",
    "actions",
    "rewards",
    "terminated",
    "truncated",
    "first",
    "mask",
    "episode_id",
    "step",
    "state",
    "index",
    "extras",
    "policy_version",
    "next_observations",
];

/// [`KEYS`] as Python strings, made once: making and interning a dozen strings a
/// batch cost ~1 µs, half of what a batch of small steps costs Python.
static KEY_STRINGS: PyOnceLock<Vec<Py<PyString>>> = PyOnceLock::new();

/// A batch's fields as views of the lent buffer (only `fields`, when given).
fn batch_dict<'py>(
    py: Python<'py>,
    lent: LentBatch,
    fields: Option<&[String]>,
    to_tensor: Option<&Py<PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let lent = Arc::new(lent);
    // One base object for all the batch's arrays: the buffer returns when the last goes.
    let base = arrays::keeper(py, lent.clone())?;
    let b: &rollway_loader::Batch = &lent;
    let d = PyDict::new(py);
    let strings = KEY_STRINGS.get_or_init(py, || KEYS.iter().map(|k| PyString::intern(py, k).unbind()).collect());
    let key = |i: usize| (KEYS[i], strings[i].bind(py));
    let want = |name: &str| fields.is_none_or(|f| f.iter().any(|x| x == name));
    let view = |a: &Array| -> PyResult<Bound<'py, PyAny>> {
        let arr = arrays::view_in(&base, &a.data, a.dtype, &a.shape)?;
        match to_tensor {
            // The tensor shares the array's memory and keeps the array (so the batch) alive.
            Some(f) => f.bind(py).call1((arr,)),
            None => Ok(arr),
        }
    };
    for (i, cols) in [&b.observations, &b.actions].into_iter().enumerate() {
        let (name, k) = key(i);
        if want(name) {
            let views = cols.iter().map(|(col, a)| Ok((col.as_str(), view(a)?))).collect::<PyResult<Vec<_>>>()?;
            d.set_item(k, arrays::leaves(py, views)?)?;
        }
    }
    let plain = [&b.rewards, &b.terminated, &b.truncated, &b.first, &b.mask, &b.episode_id, &b.step, &b.state];
    for (i, a) in plain.into_iter().enumerate() {
        let (name, k) = key(2 + i);
        if want(name) {
            d.set_item(k, view(a)?)?;
        }
    }
    d.set_item(key(10).1, b.index)?;
    // A training rollout's columns, only where the dataset records them.
    let (name, k) = key(11);
    if !b.extras.is_empty() && want(name) {
        let extras = PyDict::new(py);
        for (x, a) in &b.extras {
            extras.set_item(x, view(a)?)?;
        }
        d.set_item(k, extras)?;
    }
    let (name, k) = key(12);
    if b.policy_version.shape.len() == 2 && want(name) {
        d.set_item(k, view(&b.policy_version)?)?;
    }
    // Only when asked for (`next_observations=True`).
    let (name, k) = key(13);
    if !b.next_observations.is_empty() && want(name) {
        let views = b.next_observations.iter().map(|(col, a)| Ok((col.as_str(), view(a)?))).collect::<PyResult<Vec<_>>>()?;
        d.set_item(k, arrays::leaves(py, views)?)?;
    }
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LoaderHandle>()
}
