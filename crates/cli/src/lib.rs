//! The `rollway` command line: clap and printing over `rollway-engine`, which
//! resolves and runs jobs for every front (the Python package calls it too). The
//! binary is a thin `main` over [`cli_main`]; the Python package's `rollway` script
//! (what `pip install rollway` puts in a venv's `bin/`) calls [`main_with_args`] in
//! the extension module, so both are this code.
//!
//! Exit codes (listed in `--help`): 0 ok, 1 the work failed, 2 usage or input error.
#![forbid(unsafe_code)]

pub mod args;
mod data;
mod interop;
mod ray;
mod report;
mod run;

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use rollway_engine::target::{on_store, Choose, Replica};
use rollway_engine::{chain_text, quiet_worker_panics};

/// The `rollway` command line of this process: parses its arguments, runs the
/// command, prints errors, and returns the exit code.
pub fn cli_main() -> ExitCode {
    ExitCode::from(main_with_args(std::env::args_os()))
}

/// The command line over `args` (the first names the program), for a front that is
/// not this crate's binary: the Python package's `rollway` script calls it, so its
/// flags, help and exit codes are this crate's, with no second copy. Returns the exit
/// code (0 ok, 1 the work failed, 2 usage or input error) and leaves exiting to the
/// caller. Stdout is flushed before it returns: outside a Rust `main` nothing else
/// flushes it.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    quiet_worker_panics();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    warn_renamed(&args);
    let code = match refuse_credentials(&args).map(|()| Cli::try_parse_from(args)) {
        Err(code) => code,
        Ok(parsed) => parsed_or_usage(parsed),
    };
    let _ = std::io::stdout().flush();
    code
}

/// Refuses (exit 2) a command line with a URL that carries credentials in any argument,
/// before clap (whose errors repeat the value given) or any command sees it: no output,
/// file or config of this process can then hold the secret (issue 72).
fn refuse_credentials(args: &[OsString]) -> Result<(), u8> {
    let mut given = args.iter().skip(1).map(|a| a.to_string_lossy());
    match given.find(|a| rollway_store::has_credentials(a)) {
        Some(arg) => {
            eprintln!("rollway: error: {}: {}", rollway_store::redacted(&arg), rollway_store::CREDENTIALS_REFUSED);
            Err(2)
        }
        None => Ok(()),
    }
}

/// The exit code of a command line clap parsed (or refused).
fn parsed_or_usage(parsed: Result<Cli, clap::Error>) -> u8 {
    match parsed {
        Ok(cli) => execute(cli),
        Err(e) => {
            // `--help` and `--version` print to stdout and exit 0; usage errors exit 2.
            let _ = e.print();
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
    }
}

/// Warns of each flag given by its old name (`rollway_engine::settings::RENAMED`),
/// which clap takes as an alias of the new one.
fn warn_renamed(args: &[OsString]) {
    for (old, new) in rollway_engine::settings::RENAMED {
        let (old, new) = (format!("--{}", old.replace('_', "-")), format!("--{}", new.replace('_', "-")));
        let given = |a: &OsString| a.to_str().is_some_and(|a| a == old || a.starts_with(&format!("{old}=")));
        if args.iter().skip(1).any(given) {
            eprintln!("rollway: warning: {}", rollway_engine::settings::renamed_warning(&old, &new));
        }
    }
}

/// Runs a parsed command line; the exit code.
fn execute(cli: Cli) -> u8 {
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
        Command::Inspect(mut a) => pulled(&mut a.dir, None).and_then(|_| data::inspect(&a)),
        Command::Verify(mut a) => {
            // On a store, the repair (under the lease) comes first; the replica pulled after is verified.
            let on_store = (a.repair && on_store(&a.dir)).then(|| rollway_engine::target::repair(&a.dir));
            match on_store.transpose() {
                Ok(repaired) => pulled(&mut a.dir, None).and_then(|_| data::verify(&a, repaired)),
                Err(e) => Err(e.into()),
            }
        }
        Command::Report(mut a) => {
            let out = rollway_engine::target::report_path(&a.dir, a.out.as_deref()).map_err(anyhow::Error::from);
            out.and_then(|out| {
                pulled(&mut a.dir, None)?;
                data::report(&a.dir, out.as_deref()).map(|_| true)
            })
        }
        Command::Relabel(a) => data::relabel(&a),
        Command::Load(mut a) => {
            // On a store, only the shards the selection reads are fetched (a replay's newest, say).
            let choose = rollway_loader::shard_chooser(data::load_config(&a).select);
            pulled_chosen(&mut a.dir, None, choose).and_then(|replica| data::load(&a, replica))
        }
        Command::Export(mut a) => pulled(&mut a.dir, None).and_then(|_| interop::export(&a)),
        Command::Import(a) => interop::import(&a),
    };
    match res {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) if is_input(&e) => {
            eprintln!("rollway: error: {}", chain_text(&*e));
            2
        }
        Err(e) => {
            eprintln!("rollway: failed: {}", chain_text(&*e));
            1
        }
    }
}

/// A dataset argument on an object store, pulled into its local replica, which the
/// command then reads (the replica, to pull again); `local_only` names a flag that
/// needs the dataset itself.
fn pulled(dir: &mut PathBuf, local_only: Option<&str>) -> anyhow::Result<Option<Replica>> {
    pulled_chosen(dir, local_only, None)
}

/// [`pulled`], fetching only the shards `choose` picks.
fn pulled_chosen(dir: &mut PathBuf, local_only: Option<&str>, choose: Option<Choose>) -> anyhow::Result<Option<Replica>> {
    if !on_store(dir) {
        return Ok(None);
    }
    if let Some(flag) = local_only {
        let e = rollway_engine::Error::input(format!(
            "{}: {flag} works on a local dataset only, for now",
            rollway_store::redacted(&dir.to_string_lossy())
        ));
        return Err(e.into());
    }
    let source = rollway_engine::Source::chosen(dir, choose)?;
    if let Some(line) = source.pulled() {
        eprintln!("rollway: {}: {line}", dir.display());
    }
    let (local, replica) = source.into_parts();
    *dir = local;
    Ok(replica)
}

/// Whether `e` is the user's input error (exit 2) rather than a failed run.
fn is_input(e: &anyhow::Error) -> bool {
    e.downcast_ref::<rollway_engine::Error>().is_some_and(rollway_engine::Error::is_input)
}

/// Marks an error as the user's input error (exit 2).
pub(crate) fn input<T>(r: anyhow::Result<T>) -> anyhow::Result<T> {
    r.map_err(|e| rollway_engine::Error::input_from(e).into())
}
