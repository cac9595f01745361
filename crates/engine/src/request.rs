//! What a caller asks of a run, typed: the settings (once, as [`RunOptions`]) and
//! where the episodes go. The CLI builds a [`RunRequest`] from its flags, the
//! Python package from keyword arguments, the Ray driver from the dataset it
//! prepared; [`RunRequest::resolve`] (in `job.rs`) turns it into the checked
//! [`crate::Job`] that [`crate::execute`] runs.

use std::path::PathBuf;
use std::time::Duration;

use rollway_runner::Summary;
use rollway_store::{ResumePoint, WriteStats};

use crate::host::Sources;
use crate::settings::{Part, RunOptions};

/// A run, as asked for. `Default` is the default job (no settings), recording
/// into a fresh `./rollway-data/` directory.
#[derive(Default, Clone)]
pub struct RunRequest {
    /// A TOML config file whose keys the settings override.
    pub config: Option<PathBuf>,
    /// The config, already read (Python's keyword arguments): used instead of `config`.
    pub file: Option<RunOptions>,
    /// Settings given directly (flags): each one set wins over the config's.
    pub settings: RunOptions,
    /// Record into this new dataset directory (or, with `append`, after its runs).
    pub out: Option<PathBuf>,
    /// With `out` holding a dataset: record a new run after the ones there.
    pub append: bool,
    /// Continue the last run recorded in this dataset to its target.
    pub resume: Option<PathBuf>,
    /// Do not record, not even the default job.
    pub no_record: bool,
    /// When the run ends, write the dataset's HTML report beside it (needs a dataset).
    pub report: bool,
    /// No progress output.
    pub quiet: bool,
    /// Create the dataset and record the run's config, then stop: members of a
    /// distributed run run its episodes (`join`).
    pub prepare: bool,
    /// Run one part of a prepared run, as one of many writers of the dataset.
    pub join: Option<(PathBuf, Part)>,
    /// The caller is Python's `rollway.run`: refusals name its keyword arguments
    /// (`out='D'`, `append=True`), not the command line's flags.
    pub python: bool,
}

impl RunRequest {
    /// A setting as this caller writes it: `--out D` on the command line, `out='D'`
    /// from Python (`flag` is the flag's name; Python's keyword has `_` for `-`).
    pub fn said(&self, flag: &str, value: impl std::fmt::Display) -> String {
        let value = value.to_string();
        // As Python would write it: numbers bare, paths and the rest as strings.
        let value = if !self.python || value.parse::<f64>().is_ok() { value } else { format!("{value:?}") };
        format!("{}{}{value}", self.setting(flag), if self.python { "" } else { " " })
    }

    /// A setting's name as this caller writes it, without a value: `--resume`, `resume=`.
    pub fn setting(&self, flag: &str) -> String {
        if self.python {
            format!("{}=", flag.replace('-', "_"))
        } else {
            format!("--{flag}")
        }
    }

    /// The refusal of a new run into `dir`, which holds a dataset, in this caller's words.
    pub(crate) fn holds_a_dataset(&self, dir: impl std::fmt::Display) -> String {
        if self.python {
            format!(
                "out={:?} already holds a dataset: rollway.run(..., resume={0:?}) continues its last run; \
                 append=True records a new run after it",
                dir.to_string()
            )
        } else {
            format!("--out {dir} already holds a dataset: `rollway run --resume {dir}` continues its last run; add --append to record a new run after it")
        }
    }
}

/// What a caller adds to a run besides its settings.
#[derive(Default)]
pub struct RunHooks<'a> {
    /// Asked about ten times a second; `true` stops the run ([`crate::Interrupted`]).
    pub stop: Option<Box<dyn FnMut() -> bool + 'a>>,
    /// Where the env and agent come from when not from their names.
    pub sources: Sources,
    /// The store a run on `s3://` pushes to, whose trouble its progress tells: set by the
    /// engine for such a run; a front leaves it `None`.
    pub store: Option<rollway_remote::StoreHealth>,
}

/// How a run went.
pub struct Outcome {
    /// The run's summary.
    pub summary: Summary,
    /// The dataset it recorded into, if it recorded.
    pub out: Option<PathBuf>,
    /// What this run added to the dataset.
    pub written: Option<WriteStats>,
    /// Where a resumed run started.
    pub resumed: Option<ResumePoint>,
    /// How long committing the last episodes took after the run ended (frames
    /// still being encoded, the last shard's fsyncs).
    pub commit_wait: Duration,
    /// The HTML report written when asked (`RunRequest::report`): its path and size in bytes.
    pub report: Option<(PathBuf, usize)>,
}
