//! Every Rust error that reaches Python goes through this file.
//!
//! | Python exception | raised for |
//! |---|---|
//! | `rollway.RollwayError` (base, `Exception`) | a run or write that failed (the CLI's exit 1) |
//! | `rollway.InputError(RollwayError, ValueError)` | bad settings, paths, filters or data (the CLI's exit 2) |
//! | `rollway.DatasetNotFoundError(RollwayError, FileNotFoundError)` | a path that is missing or holds no dataset |
//! | `rollway.DatasetLockedError(InputError)` | a dataset another process is writing (its lock is held) |
//! | `rollway.IncompleteRunError(RollwayError)` | a run that ended with episodes given up or untried (raised by the package, with `.summary`) |
//! | `rollway.RollwayWarning(UserWarning)` | (a warning) a value Gymnasium's checker would warn about |
//! | `KeyboardInterrupt` | Ctrl-C during a long call (committed episodes are kept) |
//!
//! Messages are the CLI's (`context: cause: cause…`). The classes are made here at
//! import, with two bases each, which `create_exception!` cannot do.

use std::io::ErrorKind;

use pyo3::exceptions::{PyException, PyFileNotFoundError, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use rollway_engine::target::{Choose, Replica};
use rollway_engine::Source;

/// Where a Python policy (or a rollout's scan) leaves the exception that ended the rollout,
/// for `collect` to raise as it is.
pub(crate) type Raised = std::sync::Arc<std::sync::Mutex<Option<PyErr>>>;

/// Keeps the policy's exception for `collect` to raise as it is; the engine gets its text.
pub(crate) fn stash(raised: &Raised, e: PyErr) -> rollway_core::Error {
    let message = e.to_string();
    *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
    rollway_core::Error::Agent { agent: "policy".into(), message }
}

static ROLLWAY_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INPUT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static NOT_FOUND: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static LOCKED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// What kind of failure an error is, by the types in its chain.
enum Kind {
    Interrupted,
    NotFound,
    Locked,
    Input,
    Failed,
}

fn kind(e: &anyhow::Error) -> Kind {
    if e.chain().any(|c| c.downcast_ref::<rollway_engine::Error>().is_some_and(rollway_engine::Error::is_interrupted)) {
        return Kind::Interrupted;
    }
    let missing = outer(e).any(|c| {
        c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == ErrorKind::NotFound)
            || matches!(c.downcast_ref::<rollway_store::Error>(), Some(rollway_store::Error::NotADataset { .. }))
            || matches!(c.downcast_ref::<rollway_store::Error>(), Some(rollway_store::Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound)
    });
    let locked = e.chain().any(|c| matches!(c.downcast_ref::<rollway_store::Error>(), Some(rollway_store::Error::Locked { .. })));
    if missing {
        Kind::NotFound
    } else if locked {
        Kind::Locked
    } else if outer(e).any(is_input) {
        Kind::Input
    } else {
        Kind::Failed
    }
}

/// `e`'s chain down to its first input error, included. What an input error wraps
/// says why the input is wrong, not what kind of failure this is: a report written
/// into a missing directory is an `InputError`, though an OS "not found" is its
/// cause. (A held lock is looked for in the whole chain.)
fn outer(e: &anyhow::Error) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    let mut past_input = false;
    e.chain().take_while(move |c| {
        let keep = !past_input;
        past_input |= c.downcast_ref::<rollway_engine::Error>().is_some_and(rollway_engine::Error::is_input);
        keep
    })
}

/// Errors of the library crates that mean "what you gave is wrong".
fn is_input(c: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = c.downcast_ref::<rollway_engine::Error>() {
        return e.is_input();
    }
    if let Some(e) = c.downcast_ref::<rollway_interop::Error>() {
        return e.is_input();
    }
    if let Some(e) = c.downcast_ref::<rollway_core::Error>() {
        // Env and agent errors happen while running; the rest are about what was asked for.
        return !matches!(e, rollway_core::Error::Env { .. } | rollway_core::Error::Agent { .. });
    }
    if let Some(e) = c.downcast_ref::<rollway_runner::Error>() {
        return matches!(
            e,
            rollway_runner::Error::Config { .. } | rollway_runner::Error::Filter { .. } | rollway_runner::Error::BadAction { .. }
        );
    }
    if let Some(e) = c.downcast_ref::<rollway_loader::Error>() {
        return matches!(e, rollway_loader::Error::Config { .. });
    }
    matches!(
        c.downcast_ref::<rollway_store::Error>(),
        Some(
            rollway_store::Error::Corrupt { .. }
                | rollway_store::Error::Locked { .. }
                | rollway_store::Error::NoEpisode(_)
                | rollway_store::Error::WriterId(_)
                | rollway_store::Error::Mismatch { .. }
                | rollway_store::Error::BadEpisode { .. }
        )
    )
}

/// The Python exception for `e`.
pub fn to_py(e: anyhow::Error) -> PyErr {
    let msg = rollway_engine::chain_text(&*e);
    Python::attach(|py| {
        let class = match kind(&e) {
            Kind::Interrupted => return PyKeyboardInterrupt::new_err(msg),
            Kind::NotFound => NOT_FOUND.get(py),
            Kind::Locked => LOCKED.get(py),
            Kind::Input => INPUT_ERROR.get(py),
            Kind::Failed => ROLLWAY_ERROR.get(py),
        };
        match class {
            Some(c) => PyErr::from_type(c.bind(py).clone(), msg),
            None => PyException::new_err(msg),
        }
    })
}

/// Converts any error the crates return.
pub trait ToPy<T> {
    /// The result with its error as a Python exception.
    fn py(self) -> PyResult<T>;
}

impl<T, E: Into<anyhow::Error>> ToPy<T> for Result<T, E> {
    fn py(self) -> PyResult<T> {
        self.map_err(|e| to_py(e.into()))
    }
}

/// The local directory a dataset argument names: a URL of a scheme this build
/// does not support (`s3://`) is an `InputError` naming the supported ones, never
/// taken for a relative path.
pub fn dataset_dir(p: std::path::PathBuf) -> PyResult<std::path::PathBuf> {
    rollway_engine::target::local(&p).py()
}

/// The local directory to read a dataset argument from (`rollway_engine::Source`):
/// as [`dataset_dir`], or for an `s3://` URL its local replica, pulled up to date
/// first, which is returned too, to pull again; on a store only the shards `choose`
/// picks are fetched (a loader's selection).
pub fn dataset_source(p: &std::path::Path, choose: Option<Choose>) -> PyResult<(std::path::PathBuf, Option<Replica>)> {
    Source::chosen(p, choose).map(Source::into_parts).py()
}

/// [`dataset_source`]'s directory.
pub fn readable_dataset(p: &std::path::Path) -> PyResult<std::path::PathBuf> {
    dataset_source(p, None).map(|(dir, _)| dir)
}

/// An `InputError` with this message (for checks made in the bindings).
pub fn input_error(msg: impl Into<String>) -> PyErr {
    to_py(rollway_engine::Error::input(msg).into())
}

/// A `RollwayError` with this message (an env that failed in a call the bindings drive).
pub fn failed(msg: impl Into<String>) -> PyErr {
    to_py(anyhow::anyhow!(msg.into()))
}

/// Makes the classes and adds them to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let make = |name: &str, bases: Bound<'_, PyTuple>, doc: &str| -> PyResult<Py<PyType>> {
        let ns = PyDict::new(py);
        ns.set_item("__doc__", doc)?;
        ns.set_item("__module__", "rollway")?;
        let class = py.get_type::<PyType>().call1((name, bases, ns))?;
        Ok(class.cast_into::<PyType>()?.unbind())
    };
    let base = make("RollwayError", PyTuple::new(py, [py.get_type::<PyException>()])?, "A rollway call failed (the CLI's exit code 1).")?;
    let input = make(
        "InputError",
        PyTuple::new(py, [base.bind(py).clone(), py.get_type::<PyValueError>()])?,
        "Bad settings, paths or data (the CLI's exit code 2); nothing was changed.",
    )?;
    let missing = make(
        "DatasetNotFoundError",
        PyTuple::new(py, [base.bind(py).clone(), py.get_type::<PyFileNotFoundError>()])?,
        "A path that does not exist or holds no rollway dataset.",
    )?;
    let short = make(
        "IncompleteRunError",
        PyTuple::new(py, [base.bind(py).clone()])?,
        "A run ended with episodes given up or left untried (the CLI's exit code 1): `summary` is its \
         Summary; the episodes it finished are committed, and a resumed run runs the untried ones.",
    )?;
    let warning = make(
        "RollwayWarning",
        PyTuple::new(py, [py.get_type::<pyo3::exceptions::PyUserWarning>()])?,
        "A value an env returned that Gymnasium's checker would warn about (outside its space, say).",
    )?;
    let locked = make(
        "DatasetLockedError",
        PyTuple::new(py, [input.bind(py).clone()])?,
        "A dataset another process is writing (its lock is held); nothing was changed.",
    )?;
    m.add("IncompleteRunError", short.bind(py))?;
    m.add("RollwayWarning", warning.bind(py))?;
    for (name, class, cell) in [
        ("RollwayError", base, &ROLLWAY_ERROR),
        ("InputError", input, &INPUT_ERROR),
        ("DatasetNotFoundError", missing, &NOT_FOUND),
        ("DatasetLockedError", locked, &LOCKED),
    ] {
        m.add(name, class.bind(py))?;
        let _ = cell.set(py, class);
    }
    Ok(())
}
