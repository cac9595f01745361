//! The one error type of `rollway-runner`.

/// Why a run could not be set up or could not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration field is out of range or inconsistent.
    #[error("config field `{field}`: {message}")]
    Config {
        /// The field, as named in the TOML config and flags.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A filter specification could not be parsed.
    #[error("filter `{spec}`: {message}")]
    Filter {
        /// The filter as written.
        spec: String,
        /// What is wrong with it.
        message: String,
    },
    /// Building the env or agent failed (bad id or parameters).
    #[error(transparent)]
    Core(#[from] rollway_core::Error),
    /// The agent kept failing, rebuilt each time, until its restarts ran out or
    /// the run's episodes were given up; the run cannot go on.
    #[error(
        "agent failed {restarts} times in a row and the run stopped (each failure rebuilds it, up to max_restarts); last error: {last}"
    )]
    AgentGaveUp {
        /// Restarts used.
        restarts: u32,
        /// The last failure.
        last: String,
    },
    /// The observer (e.g. the dataset writer) failed; the run stopped.
    #[error("recording failed: {0}")]
    Sink(crate::SinkError),
    /// A rollout's policy failed (raised, panicked, returned what does not fit, or
    /// could not load a published version); the rollout has ended.
    #[error("policy: {message}")]
    Policy {
        /// What happened.
        message: String,
    },
    /// A rollout's policy returned an action that does not fit the action space (outside a
    /// Discrete space, not a whole number, NaN): the caller's mistake, as a wrong shape is; the
    /// rollout has ended.
    #[error("policy: {message}")]
    BadAction {
        /// Which env slot's action, and what is wrong with it.
        message: String,
    },
    /// A rollout's env slot failed more often in a row than `max_restarts` allows.
    #[error("env slot {slot} failed {failures} times in a row, more than max_restarts allows; last error: {last}")]
    EnvGaveUp {
        /// The slot.
        slot: usize,
        /// Failures in a row.
        failures: u32,
        /// The last one.
        last: String,
    },
    /// The rollout was closed while collecting (never reaches a caller).
    #[error("the rollout was closed")]
    Stopped,
    /// A worker thread could not be started or died outside the fault handling.
    #[error("worker {worker}: {message}")]
    Worker {
        /// Worker index.
        worker: usize,
        /// What happened.
        message: String,
    },
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
