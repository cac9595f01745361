//! The `rollway` command line: clap and printing over `rollway-engine`, which
//! resolves and runs jobs for every front (the Python package calls it too). The
//! binary is a thin `main` over [`cli_main`].
//!
//! Exit codes (listed in `--help`): 0 ok, 1 the work failed, 2 usage or input error.
#![forbid(unsafe_code)]

pub mod args;
mod data;
mod interop;
mod ray;
mod report;
mod run;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use rollway_engine::{chain_text, quiet_worker_panics};

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
        Err(e) if is_input(&e) => {
            eprintln!("rollway: error: {}", chain_text(&*e));
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("rollway: failed: {}", chain_text(&*e));
            ExitCode::from(1)
        }
    }
}

/// Whether `e` is the user's input error (exit 2) rather than a failed run.
fn is_input(e: &anyhow::Error) -> bool {
    e.downcast_ref::<rollway_engine::Error>().is_some_and(rollway_engine::Error::is_input)
}

/// Marks an error as the user's input error (exit 2).
pub(crate) fn input<T>(r: anyhow::Result<T>) -> anyhow::Result<T> {
    r.map_err(|e| rollway_engine::Error::input_from(e).into())
}
