//! The report's one error type.

use std::path::PathBuf;

/// What can go wrong making a report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The dataset could not be read.
    #[error(transparent)]
    Store(#[from] rollway_store::Error),
    /// Frames could not be re-encoded as thumbnails or a clip.
    #[error("{op} for episode {episode}: {source}")]
    Media {
        /// What we were doing (`encoding a clip`, …).
        op: &'static str,
        /// The episode whose frames it was.
        episode: u64,
        /// The codec's error.
        source: rollway_media::Error,
    },
    /// A scratch or output file failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The report's result type.
pub type Result<T> = std::result::Result<T, Error>;
