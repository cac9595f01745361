//! `rollway`: flags → library calls. Exit codes (listed in `--help`): 0 ok,
//! 1 the work failed, 2 usage or input error.

mod args;
mod data;
mod interop;
mod job;
mod progress;
mod report;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use rollway_runner::{filter, Generator};

use args::{Cli, Command, RunArgs};
use job::Job;

/// An error in what the user gave us (exit 2), as opposed to a failed run (exit 1).
#[derive(Debug)]
pub(crate) struct InputError(pub(crate) anyhow::Error);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&chain_text(&self.0))
    }
}

impl std::error::Error for InputError {}

pub(crate) fn input<T>(r: Result<T>) -> Result<T> {
    r.map_err(|e| InputError(e).into())
}

/// `context: cause: cause…`, each message once: some errors (e.g. the store's I/O
/// errors) print their source themselves and also return it as `source()`.
fn chain_text(e: &anyhow::Error) -> String {
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
            eprintln!("rollway: failed: {}", chain_text(&e));
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

/// Returns Ok(false) when the run finished but gave up or left untried episodes.
fn run(a: &RunArgs) -> Result<bool> {
    let (mut job, out, resume) = input(plan(a))?;
    if out.is_some() {
        job.cfg.record_steps = true;
        job.cfg.record_infos = job.writer.record_infos;
    }
    let filters = input(job.filters.iter().map(|f| filter::parse(f).map_err(Into::into)).collect::<Result<Vec<_>>>())?;
    let stored = serde_json::to_value(job.to_file_config()).expect("configs serialize");
    let writer = match &out {
        Some(dir) if resume => {
            let (w, point) = input(rollway_store::DatasetWriter::resume(dir, job.writer.clone()).map_err(Into::into))?;
            job.cfg.start_index = point.next_index;
            job.cfg.start_steps = point.steps;
            if !a.quiet {
                eprintln!("rollway: resuming run {} in {}: {} episodes ({} steps) already committed", point.run.run, dir.display(), point.episodes, point.steps);
            }
            Some(w)
        }
        _ => None,
    };
    let generator = input(Generator::new(job.cfg.clone(), filters).map_err(|e| job.explain(e)))?;
    let writer = match (&out, writer) {
        (Some(dir), None) => {
            let w = rollway_store::DatasetWriter::create(dir, generator.spec(), &job.cfg.agent, job.cfg.seed, stored, job.writer.clone());
            Some(input(w.with_context(|| format!("--out {}", dir.display())))?)
        }
        (_, w) => w,
    };
    // Both output files are created before the run, so a bad path costs no work.
    let episodes_out = input(create(job.episodes_json.as_deref(), "--episodes-json"))?;
    let summary_out = input(create(job.summary_json.as_deref(), "--summary-json"))?;
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
    if let Some(mut f) = summary_out {
        let text = serde_json::to_string_pretty(&summary).expect("summaries serialize");
        writeln!(f, "{text}").context("writing --summary-json")?;
    }
    Ok(report::shortfall(&summary, out.as_deref()))
}

/// The job, where it records, and whether it resumes a recorded run.
fn plan(a: &RunArgs) -> Result<(Job, Option<PathBuf>, bool)> {
    if let Some(dir) = &a.resume {
        let ds = rollway_store::Dataset::open(dir).with_context(|| format!("--resume {}", dir.display()))?;
        let run = ds.metadata().runs.last().cloned().context("the dataset has no run to resume")?;
        return Ok((job::resume_job(&run.config, a)?, Some(dir.clone()), true));
    }
    let job = a.resolve()?;
    if let Some(dir) = &a.out {
        // A second `run --out D` after a crash would otherwise record a duplicate run.
        if !a.append && dir.join(rollway_store::format::METADATA).exists() {
            let d = dir.display();
            return Err(anyhow!("--out {d} already holds a dataset: `rollway run --resume {d}` continues its last run; add --append to record a new run after it"));
        }
    }
    let out = a.out.clone().or_else(|| (job.is_default && !a.no_record).then(|| data::fresh_dir(&job.cfg.env)));
    Ok((job, out, false))
}

fn create(path: Option<&Path>, flag: &str) -> Result<Option<File>> {
    path.map(|p| File::create(p).with_context(|| format!("{flag} {}", p.display()))).transpose()
}
