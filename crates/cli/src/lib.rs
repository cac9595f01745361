//! The rollway application: config files and flags resolved into jobs, runs with
//! progress and a summary, and the dataset commands. The `rollway` binary is a
//! thin `main` over [`cli_main`]; the Python package (`crates/python`) calls
//! [`run::execute`] and [`job`] directly, so a run from Python resolves its
//! settings, names its errors and commits its dataset exactly as the CLI does.
//!
//! Exit codes (listed in `--help`): 0 ok, 1 the work failed, 2 usage or input error.
#![forbid(unsafe_code)]

pub mod args;
pub mod data;
pub mod interop;
pub mod job;
pub mod progress;
mod ray;
pub mod report;
pub mod run;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};

/// An error in what the user gave us (exit 2, `ValueError` in Python), as opposed
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

/// The `rollway` command line: parses the arguments, runs the command, prints
/// errors, and returns the exit code.
pub fn cli_main() -> ExitCode {
    quiet_worker_panics();
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Run(a) if a.backend == args::Backend::Ray => ray::run(&a),
        Command::Run(a) => run::cli_run(&a),
        Command::Envs => {
            print!("{}", report::list_envs());
            Ok(true)
        }
        Command::Agents => {
            print!("{}", report::list_agents());
            Ok(true)
        }
        Command::Inspect(a) => data::inspect(&a),
        Command::Verify(a) => data::verify(&a),
        Command::Report(a) => data::report(&a.dir, a.out.as_deref()).map(|_| true),
        Command::Relabel(a) => data::relabel(&a),
        Command::Load(a) => data::load(&a),
        Command::Export(a) => interop::export(&a),
        Command::Import(a) => interop::import(&a),
    };
    match res {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) if e.is::<InputError>() => {
            eprintln!("rollway: error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("rollway: failed: {}", chain_text(&e));
            ExitCode::from(1)
        }
    }
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
