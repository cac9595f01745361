//! The one error type of `rollway-interop`.

use std::path::PathBuf;

/// What can go wrong exporting or importing a dataset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The rollway dataset could not be read (export) or written (import).
    #[error("{path}: {source}")]
    Store {
        /// The rollway dataset directory.
        path: PathBuf,
        /// What the store reported.
        source: rollway_store::Error,
    },
    /// A filesystem operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What we were doing (`creating`, `renaming`, …).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The HDF5 library failed while writing.
    #[error("writing {path} ({context}): {source}")]
    Hdf5 {
        /// The HDF5 file.
        path: PathBuf,
        /// The object being written, e.g. `episode_3/observations`.
        context: String,
        /// The library's error.
        source: hdf5_metno::Error,
    },
    /// The output exists and would be overwritten.
    #[error("{path} already exists: {hint}")]
    OutputExists {
        /// The existing output.
        path: PathBuf,
        /// How to proceed.
        hint: String,
    },
    /// The output is, is inside, or contains the dataset being exported: writing it
    /// (or replacing it with `force`) would destroy the source.
    #[error("{out} overlaps the source dataset {input}: export to a directory that is outside it and does not contain it")]
    OutputOverlapsInput {
        /// The output as given.
        out: PathBuf,
        /// The source dataset as given.
        input: PathBuf,
    },
    /// `force` was asked to replace a directory that is not a previous export of the format.
    #[error(
        "{path} is not a previous {format} export ({markers} missing); --force only replaces one: remove it yourself or export elsewhere"
    )]
    NotAnExport {
        /// The directory that would have been replaced.
        path: PathBuf,
        /// `LeRobot` or `Minari`.
        format: &'static str,
        /// The files an export of the format has.
        markers: &'static str,
    },
    /// A Minari dataset id that Minari would reject.
    #[error("dataset id `{id}`: {message}")]
    BadDatasetId {
        /// The id.
        id: String,
        /// Why it is rejected.
        message: String,
    },
    /// The path holds no Minari dataset.
    #[error("{path} is not a Minari dataset: {message}")]
    NotMinari {
        /// The path given.
        path: PathBuf,
        /// What is missing.
        message: String,
    },
    /// `metadata.json` is unreadable or lacks what an import needs.
    #[error("{path}: {message}")]
    BadMetadata {
        /// The metadata file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `main_data.hdf5` is damaged or does not follow Minari's layout.
    #[error("{path}: {object}: {message}")]
    Malformed {
        /// The HDF5 file.
        path: PathBuf,
        /// The object at fault, e.g. `episode_3/rewards`.
        object: String,
        /// What is wrong.
        message: String,
    },
    /// Valid data this crate cannot convert (e.g. JPEG-encoded images, Text spaces).
    #[error("{path}: {message}")]
    Unsupported {
        /// The file or dataset.
        path: PathBuf,
        /// What is unsupported, and what to do instead.
        message: String,
    },
    /// The path holds no LeRobot v3.0 dataset.
    #[error("{path} is not a LeRobot v3.0 dataset: {message}")]
    NotLeRobot {
        /// The path given.
        path: PathBuf,
        /// What is missing.
        message: String,
    },
    /// Writing a Parquet file failed.
    #[error("writing {path}: {message}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What the Parquet writer reported.
        message: String,
    },
    /// Encoding or muxing video failed.
    #[error("writing {path}: {source}")]
    Video {
        /// The mp4 file.
        path: PathBuf,
        /// What the codec reported.
        source: rollway_media::Error,
    },
}

impl Error {
    /// True when the error is about what the caller gave (a bad path, id or input
    /// file) rather than a failure while writing: command-line tools exit 2 on these.
    pub fn is_input(&self) -> bool {
        match self {
            Error::Store { source, .. } => matches!(
                source,
                rollway_store::Error::NotADataset { .. }
                    | rollway_store::Error::Corrupt { .. }
                    | rollway_store::Error::Locked { .. }
                    | rollway_store::Error::NoEpisode(_)
            ),
            Error::Io { .. } | Error::Hdf5 { .. } | Error::Parquet { .. } | Error::Video { .. } => false,
            _ => true,
        }
    }
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
