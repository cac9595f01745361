//! `rollway`: flags → library calls. Exit codes: 0 ok, 1 the run failed,
//! 2 usage or input error.

mod args;
mod data;
mod interop;
mod job;
mod progress;
mod report;

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use rollway_runner::{filter, Generator};

use args::{Cli, Command, RunArgs};

/// An error in what the user gave us (exit 2), as opposed to a failed run (exit 1).
#[derive(Debug)]
pub(crate) struct InputError(pub(crate) anyhow::Error);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for InputError {}

pub(crate) fn input<T>(r: Result<T>) -> Result<T> {
    r.map_err(|e| InputError(e).into())
}

fn main() -> ExitCode {
    quiet_worker_panics();
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Run(a) => run(&a),
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
            eprintln!("rollway: run failed: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Env and agent panics are caught, counted and listed in the summary; a full
/// panic banner for each would bury the progress output, so print one line for
/// the first few (`ROLLWAY_SHOW_PANICS=1` restores Rust's default report).
fn quiet_worker_panics() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SHOWN: AtomicUsize = AtomicUsize::new(0);
    if std::env::var_os("ROLLWAY_SHOW_PANICS").is_some() {
        return;
    }
    std::panic::set_hook(Box::new(|info| {
        let n = SHOWN.fetch_add(1, Ordering::Relaxed);
        let what = info.payload().downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| info.payload().downcast_ref::<String>().cloned()).unwrap_or_default();
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        match n {
            0..=4 => eprintln!("rollway: panic in {}: {what}{at}", std::thread::current().name().unwrap_or("a thread")),
            5 => eprintln!("rollway: further panics not shown (ROLLWAY_SHOW_PANICS=1 shows all)"),
            _ => {}
        }
    }));
}

/// Returns Ok(false) when the run finished but gave up episodes.
fn run(a: &RunArgs) -> Result<bool> {
    let (mut job, out, resume) = match &a.resume {
        Some(dir) => {
            let ds = input(rollway_store::Dataset::open(dir).with_context(|| format!("--resume {}", dir.display())))?;
            let run = input(ds.metadata().runs.last().cloned().context("the dataset has no run to resume"))?;
            (input(job::resolve_stored(&run.config))?, Some(dir.clone()), true)
        }
        None => {
            let job = input(a.resolve())?;
            let out = a.out.clone().or_else(|| (job.is_default && !a.no_record).then(|| data::fresh_dir(&job.cfg.env)));
            (job, out, false)
        }
    };
    if out.is_some() {
        job.cfg.record_steps = true;
        job.cfg.record_infos = job.writer.record_infos;
    }
    let filters = input(job.filters.iter().map(|f| filter::parse(f).map_err(Into::into)).collect::<Result<Vec<_>>>())?;
    let stored = serde_json::to_value(job.to_file_config()).expect("configs serialize");
    let writer = match &out {
        None => None,
        Some(dir) if resume => {
            let (w, point) = input(rollway_store::DatasetWriter::resume(dir, job.writer.clone()).map_err(Into::into))?;
            job.cfg.start_index = point.next_index;
            job.cfg.start_steps = point.steps;
            if !a.quiet {
                eprintln!("rollway: resuming run {} in {}: {} episodes ({} steps) already committed", point.run.run, dir.display(), point.episodes, point.steps);
            }
            Some(w)
        }
        Some(_) => None,
    };
    let generator = input(Generator::new(job.cfg.clone(), filters).map_err(Into::into))?;
    let writer = match (&out, writer) {
        (Some(dir), None) => {
            let w = rollway_store::DatasetWriter::create(dir, generator.spec(), &job.cfg.agent, job.cfg.seed, stored, job.writer.clone());
            Some(input(w.with_context(|| format!("--out {}", dir.display())))?)
        }
        (_, w) => w,
    };
    let episodes_out = match &job.episodes_json {
        Some(p) => Some(input(std::fs::File::create(p).with_context(|| format!("creating {}", p.display())))?),
        None => None,
    };
    let mut display = progress::Display::new(generator.config().target, a.quiet, episodes_out);
    display.writer = writer;
    let summary = generator.run(&mut display);
    display.finish();
    // Commit what the run produced even when it failed part-way: it is all valid.
    let written = display.writer.take().map(|w| w.finish()).transpose();
    let summary = summary?;
    let written = written.context("committing the dataset")?;
    if let Some(e) = display.write_error.take() {
        return Err(e).context("writing --episodes-json");
    }
    print!("{}", report::summary_table(&summary));
    if let (Some(dir), Some(w)) = (&out, &written) {
        println!("  {:<18} {} (+{} episodes, {} steps in {} shards, {:.1} MB)", "dataset", dir.display(), w.episodes, w.steps, w.shards, w.bytes as f64 / 1e6);
    }
    if let Some(p) = &job.summary_json {
        let text = serde_json::to_string_pretty(&summary).expect("summaries serialize");
        std::fs::write(p, text + "\n").with_context(|| format!("writing summary to {}", p.display()))?;
    }
    if summary.given_up > 0 {
        eprintln!("rollway: {} episode(s) given up after failed attempts; see the summary", summary.given_up);
    }
    if summary.untried > 0 {
        let how = out.as_ref().map_or(String::new(), |d| format!("; `rollway run --resume {}` runs them", d.display()));
        eprintln!("rollway: {} episode(s) untried: every worker used up its --max-restarts{how}", summary.untried);
    }
    Ok(summary.given_up == 0 && summary.untried == 0)
}
