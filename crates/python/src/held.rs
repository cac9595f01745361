//! `rollway._rollway.HeldDataset`: a distributed run's driver holding its dataset on
//! an object store (a `rollway_engine::Target`) while its Ray actors write it.
//!
//! The driver prepares and closes the run on the hold's local work directory, by
//! the local calls it uses for a shared directory; the hold pushes what the driver
//! writes (the run's metadata), pulls the index objects the actors commit (for the
//! driver's ledger and summary), renews the lease meanwhile, and at `finish`
//! settles what killed actors left and gives the lease back.

use std::path::PathBuf;

use pyo3::prelude::*;
use rollway_engine::{Target, Want};

use crate::errors::{input_error, ToPy};

/// The lease on a dataset at an `s3://` URL, and the local work directory its
/// driver writes through.
#[pyclass(module = "rollway._rollway", name = "HeldDataset")]
pub struct HeldDataset {
    target: Option<Target>,
    work: PathBuf,
}

impl HeldDataset {
    fn target(&self) -> PyResult<&Target> {
        self.target.as_ref().ok_or_else(|| input_error("the dataset was released (finish() was called)"))
    }
}

#[pymethods]
impl HeldDataset {
    /// Takes the lease of the dataset at `url`. `want`: `"new"` (refused with
    /// `refusal` when a dataset is there), `"append"` or `"resume"`.
    #[new]
    #[pyo3(signature = (url, want, refusal=String::new()))]
    fn new(py: Python<'_>, url: &str, want: &str, refusal: String) -> PyResult<Self> {
        let want = match want {
            "new" => Want::New { refusal },
            "append" => Want::Append,
            "resume" => Want::Resume,
            other => return Err(input_error(format!("want={other:?}: one of \"new\", \"append\", \"resume\""))),
        };
        if !rollway_engine::target::on_store(url.as_ref()) {
            return Err(input_error(format!("{url}: a dataset is held only on an object store (s3://…)")));
        }
        let target = py.detach(|| Target::open(url.as_ref(), want)).py()?;
        let work = target.dir().to_path_buf();
        Ok(HeldDataset { target: Some(target), work })
    }

    /// Whether `path` names a dataset on an object store (`s3://…`).
    #[staticmethod]
    fn is_remote(path: PathBuf) -> bool {
        rollway_engine::target::on_store(&path)
    }

    /// The local work directory the driver writes the run's metadata in.
    #[getter]
    fn work_dir(&self) -> PathBuf {
        self.work.clone()
    }

    /// Pushes what the driver committed locally now (the run, before any actor starts).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let t = self.target()?;
        py.detach(|| t.flush()).py()
    }

    /// Brings the index objects the actors committed into the work directory; how many were new.
    fn pull_index(&self, py: Python<'_>) -> PyResult<u64> {
        let t = self.target()?;
        py.detach(|| t.pull_index()).py()
    }

    /// Pushes the rest, settles what killed actors left and releases the lease
    /// (once every actor is gone).
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(t) = self.target.take() else { return Ok(()) };
        py.detach(|| t.finish()).py()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HeldDataset>()
}
