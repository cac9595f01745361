//! `rollway._rollway.HeldDataset`: a distributed run's driver holding its dataset on
//! an object store (`rollway_engine::remote::hold`) while its Ray actors write it.
//!
//! The driver prepares and closes the run on the hold's local work directory, by
//! the local calls it uses for a shared directory; the hold pushes what the driver
//! writes (the run's metadata), pulls the index objects the actors commit (for the
//! driver's ledger and summary), renews the lease meanwhile, and at `finish`
//! settles what killed actors left and gives the lease back.

use std::path::PathBuf;

use pyo3::prelude::*;
use rollway_engine::remote::{hold, Want};
use rollway_engine::Error;
use rollway_remote::Writing;

use crate::errors::{input_error, ToPy};

/// The lease on a dataset at an `s3://` URL, and the local work directory its
/// driver writes through.
#[pyclass(module = "rollway._rollway", name = "HeldDataset")]
pub struct HeldDataset {
    writing: Option<Writing>,
    work: PathBuf,
}

impl HeldDataset {
    fn writing(&self) -> PyResult<&Writing> {
        self.writing.as_ref().ok_or_else(|| input_error("the dataset was released (finish() was called)"))
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
        let writing = py.detach(|| hold(url, want)).py()?;
        let work = writing.work_dir().to_path_buf();
        Ok(HeldDataset { writing: Some(writing), work })
    }

    /// Whether `path` names a dataset on an object store (`s3://…`).
    #[staticmethod]
    fn is_remote(path: PathBuf) -> bool {
        rollway_remote::is_remote(&path)
    }

    /// The local work directory the driver writes the run's metadata in.
    #[getter]
    fn work_dir(&self) -> PathBuf {
        self.work.clone()
    }

    /// Pushes what the driver committed locally now (the run, before any actor starts).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.writing()?;
        py.detach(|| w.flush()).map(drop).map_err(|e| Error::remote("pushing the run to the store", e)).py()
    }

    /// Brings the index objects the actors committed into the work directory; how many were new.
    fn pull_index(&self, py: Python<'_>) -> PyResult<u64> {
        let w = self.writing()?;
        py.detach(|| w.pull_index()).map_err(|e| Error::remote("reading the run's index from the store", e)).py()
    }

    /// Pushes the rest, settles what killed actors left and releases the lease
    /// (once every actor is gone).
    fn finish(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(w) = self.writing.take() else { return Ok(()) };
        py.detach(|| w.finish()).map(drop).map_err(|e| Error::remote("closing the dataset on the store", e)).py()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<HeldDataset>()
}
