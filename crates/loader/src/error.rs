//! The crate's one error type.

/// The one error type of `rollway-loader`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading the dataset failed.
    #[error(transparent)]
    Store(#[from] rollway_store::Error),
    /// The configuration is inconsistent.
    #[error("loader config `{field}`: {message}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Bringing the dataset up to date before reading it again failed (the
    /// [`crate::Loader::before_read`] hook: pulling a replica from an object store).
    #[error("bringing the dataset up to date: {0}")]
    Source(String),
    /// A loader thread died.
    #[error("loader thread failed: {0}")]
    Thread(String),
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
