//! rollway's one run API, under every front.
//!
//! A run is asked for as a typed [`RunRequest`] (settings declared once in
//! [`RunOptions`]); [`RunRequest::resolve`] merges it with its config file and
//! checks it into a [`Job`]; [`execute`] runs the job and commits what it
//! recorded, its episodes going through the stages of [`Sinks`]. The `rollway`
//! binary is clap and printing over this crate; the Python package builds
//! requests from keyword arguments (clap parses only its `rollway` command's
//! flags, through the CLI's library); a Ray run's driver prepares its
//! dataset and its actors run parts of it through the same `execute`. So a run
//! resolves its settings, names its errors and commits its dataset the same way
//! from every front. A training loop's rollout is asked for the same way, as a
//! typed [`RolloutRequest`] assembled by [`RolloutPlan`] ([`rollout`]).
//!
//! Where a dataset lives (a local directory or an object store) is decided once,
//! in [`target`]: a run, a rollout, an import, a `DataCollector` and a Ray driver
//! open the dataset they write as a [`Target`] (new, append, resume or join, with
//! the refusals made before any work and the close that pushes and releases), and
//! every reader opens one as a [`Source`] (a pulled replica on a store).
//!
//! Errors are one [`Error`] enum: what the user gave wrong is [`Error::Input`]
//! (the CLI's exit 2, Python's `InputError`), a caller's stop is
//! [`Error::Interrupted`], anything else a failed run (exit 1).
#![forbid(unsafe_code)]

/// Returns an input error ([`Error::Input`]) with a `format!`ted message.
macro_rules! bad {
    ($($arg:tt)*) => {
        return Err($crate::Error::input(format!($($arg)*)))
    };
}

// The Rust rollout example (`examples/rollout.rs`) runs in this crate's unit tests, naming the crate as users do.
#[cfg(test)]
extern crate self as rollway_engine;

pub mod dataset;
mod error;
mod execute;
mod host;
mod host_choice;
mod job;
pub mod progress;
mod request;
pub mod rollout;
pub mod settings;
mod sinks;
pub mod target;
pub mod tensorboard;

pub use error::{chain_text, Cause, Error, Result};
pub use execute::{execute, resume_starts_afresh};
pub use host::{agent_factory, steps_without_gil, Host, Sources};
pub use job::{resolve_stored, resume_from, resume_job, table_params, Job, DEFAULT_FILTER, DEFAULT_JOB_EPISODES, DEFAULT_JOB_MEDIA};
pub use progress::Interrupted;
pub use request::{Outcome, RunHooks, RunRequest};
pub use rollout::{Resumed, RolloutPlan, RolloutRequest, RolloutSources, StartedRollout};
pub use settings::{DurationSetting, ModeArg, Part, RunOptions};
pub use sinks::{JsonLines, Sinks};
pub use target::{Source, Target, Want};

/// The run's filter specs parsed (`rollway_runner::filter::parse`); a bad spec is an input error.
pub fn parse_filters(specs: &[String]) -> Result<Vec<Box<dyn rollway_runner::filter::EpisodeLabeler>>> {
    specs.iter().map(|f| rollway_runner::filter::parse(f).map_err(Error::input_from)).collect()
}

/// Env and agent panics are caught, counted and listed in the summary; a full
/// panic banner for each would bury the progress output, so print one line for
/// the first few (`ROLLWAY_SHOW_PANICS=1` restores Rust's default report).
pub fn quiet_worker_panics() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SHOWN: AtomicUsize = AtomicUsize::new(0);
    if std::env::var_os("ROLLWAY_SHOW_PANICS").is_some() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let n = SHOWN.fetch_add(1, Ordering::Relaxed);
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        match n {
            0..=4 => eprintln!("rollway: panic in {}: {what}{at}", std::thread::current().name().unwrap_or("a thread")),
            5 => eprintln!("rollway: further panics not shown (ROLLWAY_SHOW_PANICS=1 shows all)"),
            _ => {}
        }
    }));
}
