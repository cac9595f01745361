//! The one error type of `rollway-core`.

/// Everything that can go wrong in core: bad spaces, bad JSON, env and agent failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A space was built with inconsistent parameters (e.g. `low > high`, `n == 0`).
    #[error("invalid space: {0}")]
    InvalidSpace(String),
    /// A space JSON document could not be parsed or does not describe a known space.
    #[error("space JSON at {path}: {message}")]
    SpaceJson {
        /// JSON path to the offending node (e.g. `$.subspaces.rgb`).
        path: String,
        /// What was wrong there.
        message: String,
    },
    /// A value does not fit the space or layout it was written to.
    #[error("value does not match space: {0}")]
    ValueMismatch(String),
    /// An environment failed while resetting or stepping.
    #[error("env {env}: {message}")]
    Env {
        /// The env id.
        env: String,
        /// What went wrong.
        message: String,
    },
    /// An agent failed while acting.
    #[error("agent {agent}: {message}")]
    Agent {
        /// The agent name.
        agent: String,
        /// What went wrong.
        message: String,
    },
    /// An agent's action for one row of its batch does not fit the action space
    /// (found while converting it); the run names the row's env slot.
    #[error("agent {agent}: batch row {row}: {message}")]
    Action {
        /// The agent name.
        agent: String,
        /// The row of the batch.
        row: usize,
        /// What is wrong, e.g. `action 0.5 is not an integer (Discrete(2) takes integers)`.
        message: String,
    },
    /// No env/agent/filter is registered under that name.
    #[error("unknown {what} `{name}` (known: {known})")]
    Unknown {
        /// What kind of thing was looked up (`env`, `agent`).
        what: &'static str,
        /// The name asked for.
        name: String,
        /// Comma-separated registered names.
        known: String,
    },
    /// A user-supplied parameter (env or agent option) is missing or malformed.
    #[error("parameter `{name}`: {message}")]
    Param {
        /// The parameter name as the user wrote it.
        name: String,
        /// What was wrong with it.
        message: String,
    },
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
