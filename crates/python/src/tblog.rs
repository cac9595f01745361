//! `rollway._rollway.EventWriter`: TensorBoard scalars for `rollway.Rollout(log_dir=)`
//! (the writer is `rollway_engine::tensorboard`; the package picks the scalars).

use std::path::PathBuf;

use pyo3::prelude::*;
use rollway_engine::tensorboard::EventFile;

use crate::errors::ToPy;

/// An event file in a log directory, for TensorBoard.
#[pyclass(module = "rollway._rollway", name = "EventWriter")]
pub struct EventWriter(EventFile);

#[pymethods]
impl EventWriter {
    /// Creates `log_dir` if needed and a new event file in it; `now`: Unix seconds;
    /// `purge_step`: a resumed run's first step: what rollway's earlier files of the directory
    /// logged from it on (the killed life's uncommitted tail) is cut out of them, and the new
    /// file starts with TensorBoard's purge marker there.
    #[new]
    #[pyo3(signature = (log_dir, now, purge_step=None))]
    fn new(log_dir: PathBuf, now: f64, purge_step: Option<i64>) -> PyResult<Self> {
        EventFile::create(&log_dir, now, purge_step).py().map(EventWriter)
    }

    /// The event file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.0.path().to_path_buf()
    }

    /// One event at `step` holding `scalars` (tag, value), written and flushed.
    fn scalars(&mut self, step: i64, now: f64, scalars: Vec<(String, f64)>) -> PyResult<()> {
        let values: Vec<(&str, f64)> = scalars.iter().map(|(t, v)| (t.as_str(), *v)).collect();
        self.0.scalars(step, now, &values).py()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventWriter>()
}
