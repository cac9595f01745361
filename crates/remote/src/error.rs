//! The one error type of `rollway-remote`.

use std::path::PathBuf;

/// What can go wrong reaching, pulling or pushing a dataset on an object store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The URL names no store this build reaches, or is malformed.
    #[error("{url}: {message}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// A request to the store failed (after the client's retries with backoff).
    #[error("{op} {url}: {source}")]
    Store {
        /// What we were doing (`listing`, `uploading`, …).
        op: &'static str,
        /// The object or prefix, as a URL.
        url: String,
        /// The store client's error.
        source: Box<object_store::Error>,
    },
    /// The dataset's place on the store cannot be listed: a missing bucket, refused
    /// credentials, a wrong or down endpoint.
    #[error("cannot reach {url} (is the bucket there, are the credentials and AWS_ENDPOINT_URL right?): {source}")]
    Unreachable {
        /// The dataset URL.
        url: String,
        /// The store client's error.
        source: Box<object_store::Error>,
    },
    /// A local file of the replica could not be read or written.
    #[error("{op} {path}: {source}")]
    Local {
        /// What we were doing.
        op: &'static str,
        /// The local file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The store holds no rollway dataset at the URL.
    #[error("{url} is not a rollway dataset: {message}")]
    NotADataset {
        /// The dataset URL.
        url: String,
        /// Why not.
        message: String,
    },
    /// An object is not what the format says (bad index, wrong size or hash).
    #[error("corrupt {url}: {message}")]
    Corrupt {
        /// The object.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// An environment variable of this crate's holds a value it cannot use.
    #[error("{name}: {message}")]
    Setting {
        /// The variable.
        name: &'static str,
        /// What is wrong with its value.
        message: String,
    },
    /// Another writer holds the dataset, or committed a shard this writer meant to.
    #[error("{url}: {message}")]
    Conflict {
        /// The dataset or object.
        url: String,
        /// What the other writer did.
        message: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the user can fix this by what they pass (a bad URL, a missing bucket,
    /// wrong credentials, not a dataset, another writer): an input error, exit 2.
    pub fn is_input(&self) -> bool {
        match self {
            Error::Url { .. } | Error::NotADataset { .. } | Error::Conflict { .. } | Error::Unreachable { .. } | Error::Setting { .. } => {
                true
            }
            Error::Store { source, .. } => {
                matches!(
                    **source,
                    object_store::Error::NotFound { .. }
                        | object_store::Error::PermissionDenied { .. }
                        | object_store::Error::Unauthenticated { .. }
                )
            }
            _ => false,
        }
    }
}

pub(crate) trait LocalContext<T> {
    fn local(self, op: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> LocalContext<T> for std::io::Result<T> {
    fn local(self, op: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| Error::Local { op, path: path.to_path_buf(), source })
    }
}
