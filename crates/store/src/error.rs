//! The one error type of `rollway-store`.

use std::path::PathBuf;

/// What can go wrong creating, writing, reading or checking a dataset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing (`writing`, `renaming`, …).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Encoding a Parquet shard failed (usually an IO error underneath).
    #[error("writing {path}: {message}")]
    Parquet {
        /// The shard being written.
        path: PathBuf,
        /// The Parquet library's message.
        message: String,
    },
    /// A file is malformed: truncated, corrupted or not what the format says.
    #[error("corrupt {path}: {message}")]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The directory is not a rollway dataset (or a newer format version).
    #[error("{path} is not a rollway dataset: {message}")]
    NotADataset {
        /// The directory.
        path: PathBuf,
        /// Why not.
        message: String,
    },
    /// Appending to a dataset of another env or other spaces.
    #[error("cannot append to {path}: {message}")]
    Mismatch {
        /// The dataset.
        path: PathBuf,
        /// What differs.
        message: String,
    },
    /// Frames cannot be stored with the chosen media (odd size for H.264, channels…).
    #[error("frame media: {0}")]
    Unsupported(String),
    /// Encoding frames failed.
    #[error("encoding frames: {0}")]
    Encode(String),
    /// Another process is writing the dataset.
    #[error("{path} is being written by another process (lock held)")]
    Locked {
        /// The dataset.
        path: PathBuf,
    },
    /// A writer id that cannot name its files (one of many writers of a dataset).
    #[error("writer id `{0}`: use letters, digits, `-`, `_` and `.` (not first), at most 64")]
    WriterId(String),
    /// An episode id that the dataset does not have.
    #[error("no committed episode {0}")]
    NoEpisode(u64),
    /// The writer thread stopped earlier because of this error.
    #[error("dataset writer stopped: {0}")]
    WriterGone(String),
    /// An episode handed to the writer has no per-step data or data of the wrong size.
    #[error("episode {episode}: {message}")]
    BadEpisode {
        /// Run index of the episode.
        episode: u64,
        /// What is wrong.
        message: String,
    },
    /// Spaces or values from core.
    #[error(transparent)]
    Core(#[from] rollway_core::Error),
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches the operation and path to an IO error.
pub(crate) trait IoContext<T> {
    fn io(self, op: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io(self, op: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| Error::Io { op, path: path.to_path_buf(), source })
    }
}
