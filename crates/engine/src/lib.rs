//! rollway's one run API, under every front.
//!
//! A run is asked for as a typed [`RunRequest`] (settings declared once in
//! [`RunOptions`]); [`RunRequest::resolve`] merges it with its config file and
//! checks it into a [`Job`]; [`execute`] runs the job and commits what it
//! recorded, its episodes going through the stages of [`Sinks`]. The `rollway`
//! binary is clap and printing over this crate; the Python extension builds
//! requests from keyword arguments (no clap); a Ray run's driver prepares its
//! dataset and its actors run parts of it through the same `execute`. So a run
//! resolves its settings, names its errors and commits its dataset the same way
//! from every front.
//!
//! Errors: what the user gave wrong is an [`InputError`] in the chain (the CLI's
//! exit 2, Python's `InputError`); a caller's stop is [`Interrupted`]; anything
//! else is a failed run (exit 1).
#![forbid(unsafe_code)]

pub mod dataset;
mod execute;
mod job;
pub mod progress;
mod request;
pub mod settings;
mod sinks;

pub use execute::{execute, Outcome, RunHooks, Sources};
pub use job::{resolve_stored, resume_from, resume_job, Job, DEFAULT_FILTER, DEFAULT_JOB_EPISODES, DEFAULT_JOB_MEDIA};
pub use progress::Interrupted;
pub use request::RunRequest;
pub use settings::{DurationSetting, ModeArg, Part, RunOptions};
pub use sinks::{JsonLines, Sinks};

/// An error in what the user gave us (exit 2, `InputError` in Python), as opposed
/// to a failed run (exit 1).
#[derive(Debug)]
pub struct InputError(pub anyhow::Error);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&chain_text(&self.0))
    }
}

impl std::error::Error for InputError {}

/// Marks an error as the user's input error.
pub fn input<T>(r: anyhow::Result<T>) -> anyhow::Result<T> {
    r.map_err(|e| InputError(e).into())
}

/// The run's filter specs parsed (`rollway_runner::filter::parse`); a bad spec is an input error.
pub fn parse_filters(specs: &[String]) -> anyhow::Result<Vec<Box<dyn rollway_runner::filter::EpisodeFilter>>> {
    input(specs.iter().map(|f| rollway_runner::filter::parse(f).map_err(Into::into)).collect())
}

/// `context: cause: cause…`, each message once: some errors (e.g. the store's I/O
/// errors) print their source themselves and also return it as `source()`.
pub fn chain_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
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
