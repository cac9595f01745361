//! The one error type of `rollway-engine`.
//!
//! A front needs to know three things of a failed run: whether the user gave
//! something wrong (the CLI's exit 2, Python's `InputError`), whether the caller
//! stopped it, or whether the run itself failed (exit 1). Those are the variants'
//! kinds ([`Error::is_input`]); the context each carries names the flag, config
//! key or path, and the cause stays in the `source()` chain with its own type, so
//! Python can still tell a held lock (`rollway_store::Error::Locked`) from other
//! input errors without reading any text.

use std::path::PathBuf;

/// A cause of any type, kept for its chain.
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What running, resolving or reporting on a job can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Something the user gave is wrong: a setting, a config file, the dataset a
    /// run resumes or joins, a path to write.
    #[error("{}", Error::text(what, source))]
    Input {
        /// The flag, config key or path, and what is wrong with it; empty when
        /// the cause says it all.
        what: String,
        /// Why, when another error says.
        #[source]
        source: Option<Cause>,
    },
    /// The dataset the run records into could not be written or committed.
    #[error("{op}")]
    Store {
        /// What we were doing (`committing the dataset`).
        op: &'static str,
        /// The store's error, which names the file.
        #[source]
        source: rollway_store::Error,
    },
    /// A dataset on an object store could not be reached, pulled or pushed.
    #[error("{op}")]
    Remote {
        /// What we were doing (`pushing the run's shards`).
        op: &'static str,
        /// The store client's error, which names the object.
        #[source]
        source: rollway_remote::Error,
    },
    /// A file the run writes beside its dataset failed.
    #[error("{op} {}", path.display())]
    Io {
        /// What we were doing (`writing --episodes-json`).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The dataset's report could not be rendered.
    #[error("reporting on {}", path.display())]
    Report {
        /// The dataset.
        path: PathBuf,
        /// Why.
        #[source]
        source: rollway_report::Error,
    },
    /// A training log (TensorBoard event file) could not be written.
    #[error("writing the training log {}", path.display())]
    Log {
        /// The event file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The run failed (a worker, a sink).
    #[error(transparent)]
    Run(rollway_runner::Error),
    /// The caller stopped the run; what it committed is kept.
    #[error("{0}")]
    Interrupted(crate::progress::Interrupted),
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An input error with this message and no cause.
    pub fn input(what: impl Into<String>) -> Error {
        Error::Input { what: what.into(), source: None }
    }

    /// A remote error from `op`: an input error when the user can fix it (a bad URL,
    /// a missing bucket, refused credentials, another writer).
    pub fn remote(op: &'static str, source: rollway_remote::Error) -> Error {
        if source.is_input() {
            Error::input_from(source)
        } else {
            Error::Remote { op, source }
        }
    }

    /// `cause` as an input error, its message its own.
    pub fn input_from(cause: impl Into<Cause>) -> Error {
        Error::Input { what: String::new(), source: Some(cause.into()) }
    }

    /// Whether the user gave something wrong (exit 2) rather than the run failing.
    pub fn is_input(&self) -> bool {
        matches!(self, Error::Input { .. })
    }

    /// Whether the caller stopped the run.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Error::Interrupted(_))
    }

    fn text(what: &str, source: &Option<Cause>) -> String {
        match source {
            Some(s) if what.is_empty() => s.to_string(),
            _ => what.to_string(),
        }
    }
}

/// Context for results and options whose failure is the user's input error.
pub(crate) trait InputContext<T> {
    /// The error as the cause of an input error saying `what`.
    fn input(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: Into<Cause>> InputContext<T> for std::result::Result<T, E> {
    fn input(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::Input { what: what(), source: Some(e.into()) })
    }
}

impl<T> InputContext<T> for Option<T> {
    fn input(self, what: impl FnOnce() -> String) -> Result<T> {
        self.ok_or_else(|| Error::input(what()))
    }
}

/// `context: cause: cause…`, each message once: some errors (the store's I/O
/// errors, an input error that only wraps its cause) print their source
/// themselves and also return it as `source()`.
pub fn chain_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut next = Some(e);
    while let Some(cause) = next {
        let text = cause.to_string();
        next = cause.source();
        if text.is_empty() || out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_keeps_its_type_in_the_chain_and_its_text_once() {
        let locked = rollway_store::Error::Locked { path: "/d".into() };
        let e = Error::Input { what: "--join /d".into(), source: Some(Error::input_from(locked).into()) };
        assert!(e.is_input());
        assert_eq!(chain_text(&e), "--join /d: /d is being written by another process (lock held)");
        let mut chain = std::iter::successors(Some(&e as &(dyn std::error::Error + 'static)), |c| c.source());
        assert!(chain.any(|c| matches!(c.downcast_ref::<rollway_store::Error>(), Some(rollway_store::Error::Locked { .. }))));
        let bare = Error::input("the dataset has no run to resume");
        assert_eq!(
            (bare.to_string(), chain_text(&bare)),
            ("the dataset has no run to resume".into(), "the dataset has no run to resume".into())
        );
    }
}
