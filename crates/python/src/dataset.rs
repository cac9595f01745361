//! `rollway.Dataset`: a committed dataset read from Python.
//!
//! Episodes come back as numpy arrays that own the decoded columns (no copy after
//! decoding). Only committed episodes are seen; the dataset is never changed by
//! reading. The sequence is the episodes that have data (given-up episodes are in
//! the index, with their status, but hold no steps), in episode-id order.

use std::path::PathBuf;

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rollway_core::DType;
use rollway_store::{Dataset, EpisodeData, IndexEntry, OpenOptions};

use crate::arrays;
use crate::errors::ToPy;

/// An open dataset (the `rollway.Dataset` class wraps it).
#[pyclass(module = "rollway._rollway")]
pub struct DatasetHandle {
    ds: Dataset,
    /// The episodes with data, in episode-id order: what `ds[i]` indexes.
    order: Vec<u64>,
    /// The replica of a dataset on an object store: `refresh` pulls again.
    replica: Option<rollway_engine::target::Replica>,
}

fn order(ds: &Dataset) -> Vec<u64> {
    let mut ids: Vec<u64> = ds.select(|_| true).map(|e| e.episode_id).collect();
    ids.sort_unstable();
    ids
}

#[pymethods]
impl DatasetHandle {
    #[new]
    #[pyo3(signature = (path, skip_damaged=false))]
    fn new(py: Python<'_>, path: PathBuf, skip_damaged: bool) -> PyResult<Self> {
        let (path, replica) = py.detach(|| crate::errors::dataset_source(&path, None))?;
        let ds = py.detach(|| Dataset::open_with(&path, OpenOptions { skip_damaged })).py()?;
        Ok(DatasetHandle { order: order(&ds), ds, replica })
    }

    /// Reads the index again, taking in episodes committed since.
    fn refresh(&mut self, py: Python<'_>) -> PyResult<()> {
        if let Some(r) = self.replica.as_mut() {
            py.detach(|| r.refresh()).map_err(|e| rollway_engine::Error::remote("pulling the dataset", e)).py()?;
        }
        py.detach(|| self.ds.refresh()).py()?;
        self.order = order(&self.ds);
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.order.len()
    }

    /// The dataset's directory.
    #[getter]
    fn root(&self) -> PathBuf {
        self.ds.root().to_path_buf()
    }

    /// `metadata.json` as JSON text.
    fn metadata_json(&self) -> String {
        serde_json::to_string(self.ds.metadata()).expect("metadata serializes")
    }

    /// Every index entry (given-up episodes included) as JSON text, in episode-id order.
    fn entries_json(&self) -> String {
        let mut all: Vec<&IndexEntry> = self.ds.episodes().collect();
        all.sort_by_key(|e| e.episode_id);
        serde_json::to_string(&all).expect("entries serialize")
    }

    /// Observation and action spaces, as Minari's space JSON.
    fn spaces_json(&self) -> (String, String) {
        (self.ds.obs_layout().space().to_json(), self.ds.act_layout().space().to_json())
    }

    /// The committed shards' Parquet files, wherever each is now (see FORMAT.md).
    fn parquet_files(&self) -> Vec<PathBuf> {
        self.ds.shards().iter().filter(|s| s.rows > 0).map(|s| self.ds.shard_path(s.shard)).collect()
    }

    /// Shards that could not be read (with `skip_damaged=True`): (shard, why).
    fn damaged(&self) -> Vec<(u32, String)> {
        self.ds.damaged().iter().map(|d| (d.shard, d.message.clone())).collect()
    }

    /// Episode `i` of the sequence as a dict of numpy arrays.
    fn episode<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyDict>> {
        let n = self.order.len() as isize;
        let k = if i < 0 { i + n } else { i };
        if !(0..n).contains(&k) {
            return Err(PyIndexError::new_err(format!("episode {i} out of range: the dataset has {n} episodes with data")));
        }
        let id = self.order[k as usize];
        let data = py.detach(|| self.ds.read_episode(id)).py()?;
        episode_dict(py, data)
    }
}

/// The fields of an episode, Gymnasium's names; leaves keyed by their path in the space.
fn episode_dict(py: Python<'_>, e: EpisodeData) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let leaves = |cols: Vec<(String, rollway_core::Array)>| -> PyResult<Bound<'_, PyAny>> {
        let names: Vec<String> = cols.iter().map(|(n, _)| n.clone()).collect();
        let arrays = cols.into_iter().map(|(_, a)| arrays::owned(py, a)).collect::<PyResult<Vec<_>>>()?;
        arrays::leaves(py, names.iter().map(String::as_str).zip(arrays).collect())
    };
    d.set_item("entry", serde_json::to_string(&e.entry).expect("entries serialize"))?;
    d.set_item("observations", leaves(e.observations)?)?;
    d.set_item("actions", leaves(e.actions)?)?;
    let t = e.rewards.len();
    d.set_item("rewards", arrays::from_vec(py, e.rewards, DType::F64, &[t])?)?;
    d.set_item("terminations", arrays::from_bools(py, &e.terminations)?)?;
    d.set_item("truncations", arrays::from_bools(py, &e.truncations)?)?;
    d.set_item("infos", e.infos.map(|i| serde_json::to_string(&i).expect("infos serialize")))?;
    d.set_item("agent_state", e.agent_state.map(|a| arrays::owned(py, a)).transpose()?)?;
    let extras = PyDict::new(py);
    for (name, a) in e.extras {
        extras.set_item(name, arrays::owned(py, a)?)?;
    }
    d.set_item("extras", extras)?;
    let versions = e.policy_version.map(|v| arrays::from_vec(py, v, DType::U64, &[t])).transpose()?;
    d.set_item("policy_version", versions)?;
    Ok(d)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DatasetHandle>()
}
