//! The `run` command: a job planned from flags or an in-memory config, run with
//! live progress, its episodes committed as they finish.
//!
//! [`execute`] is the one place a run happens, for the CLI and for Python alike.
//! Whatever way a run ends (done, failed, interrupted), the episodes it finished are
//! committed before `execute` returns, so the dataset is always resumable.
//!
//! The generator knows envs and agents only as factories; [`generator`] is where a
//! job's env and agent names are resolved to them: the built-in registries, Python
//! envs hosted in worker processes (`gym:ID`, `module:callable`), or factories the
//! caller brings ([`Sources`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use rollway_core::{AgentFactory, EnvFactory};
use rollway_runner::tune::Calibration;
use rollway_runner::{filter, Generator, RunConfig, Summary};
use rollway_store::{ResumePoint, WriteStats};

use crate::args::{Part, RunArgs, RunOptions};
use crate::job::{self, Job};
use crate::{input, progress, report};

/// Re-exported where runs are made: what `execute` returns when its caller stopped it.
pub use crate::progress::Interrupted;

/// What a caller adds to a run besides its settings.
#[derive(Default)]
pub struct RunHooks<'a> {
    /// Asked about ten times a second; `true` stops the run ([`Interrupted`]).
    pub stop: Option<Box<dyn FnMut() -> bool + 'a>>,
    /// Where the env and agent come from when not from their names.
    pub sources: Sources,
}

/// Env and agent factories a caller brings itself (a Python callable, say), and
/// the Python that hosts `gym:`/`module:` envs. Each factory's name must be the
/// run's `env`/`agent` setting, which is what the dataset records.
#[derive(Default)]
pub struct Sources {
    /// The run's envs, instead of resolving `env`.
    pub envs: Option<Arc<dyn EnvFactory>>,
    /// A Python env factory pickled with cloudpickle (`rollway.run(env=callable)`):
    /// hosted in Python processes, called with `env_params`; `env` names it.
    pub env_pickle: Option<Vec<u8>>,
    /// The run's agent, instead of resolving `agent`.
    pub agents: Option<Arc<dyn AgentFactory>>,
    /// The interpreter for hosted envs (default: `$ROLLWAY_PYTHON`, else `python3`).
    pub python: Option<PathBuf>,
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
}

/// Returns Ok(false) when the run finished but gave up or left untried episodes.
pub(crate) fn cli_run(a: &RunArgs) -> Result<bool> {
    let o = execute(a, None, RunHooks::default())?;
    let summary = &o.summary;
    print!("{}", report::summary_table(summary));
    if let (Some(dir), Some(w)) = (&o.out, &o.written) {
        let mb = w.bytes as f64 / 1e6;
        println!("  {:<18} {} (+{} episodes, {} steps in {} shards, {mb:.1} MB)", "dataset", dir.display(), w.episodes, w.steps, w.shards);
        println!("  {:<18} {:.2} s after the run (encoding the last frames, fsyncs)", "committed", o.commit_wait.as_secs_f64());
        if a.report {
            crate::data::report(dir, None)?;
        }
        if !a.quiet {
            print!("{}", report::next_steps(dir, summary));
        }
    }
    Ok(report::shortfall(summary, o.out.as_deref()))
}

/// Plans and runs a job: `a` as the flags, `file` (when given) in place of the
/// `--config` file. Input errors are [`crate::InputError`]s.
pub fn execute(a: &RunArgs, file: Option<RunOptions>, hooks: RunHooks<'_>) -> Result<Outcome> {
    let (mut job, out, start) = input(plan(a, file))?;
    if a.report && out.is_none() {
        return input(Err(anyhow!("--report writes the report of the dataset the run records: add --out DIR")));
    }
    if out.is_some() {
        job.cfg.record_steps = true;
        job.cfg.record_infos = job.writer.record_infos;
    }
    let filters = input(job.filters.iter().map(|f| filter::parse(f).map_err(Into::into)).collect::<Result<Vec<_>>>())?;
    let (envs, agents) = factories(&job.cfg, hooks.sources);
    let calibration = calibrate(&mut job, &envs, &agents, a.quiet);
    let stored = serde_json::to_value(job.to_file_config()).expect("configs serialize");
    let (writer, resumed) = match (&out, &start) {
        (Some(dir), Start::Join(p)) => {
            let w = rollway_store::DatasetWriter::join(dir, p.run, &p.id, job.writer.clone());
            (Some(input(w.with_context(|| format!("--join {}", dir.display())))?), None)
        }
        (Some(dir), Start::Resume) => {
            // The stored config with the target this resume runs to (raised, or as it was).
            let (w, point) =
                input(rollway_store::DatasetWriter::resume(dir, job.writer.clone(), Some(stored.clone())).map_err(Into::into))?;
            job.cfg.start_index = point.next_index;
            job.cfg.start_steps = point.steps;
            if !a.quiet {
                eprintln!(
                    "rollway: resuming run {} in {}: {} episodes ({} steps) already committed",
                    point.run.run,
                    dir.display(),
                    point.episodes,
                    point.steps
                );
            }
            (Some(w), Some(point))
        }
        _ => (None, None),
    };
    let generator = input(Generator::new(job.cfg.clone(), envs, agents, filters).map_err(|e| job.explain(e)))?;
    let writer = match (&out, writer) {
        (Some(dir), None) => {
            let w = rollway_store::DatasetWriter::create(dir, generator.spec(), &job.cfg.agent, job.cfg.seed, stored, job.writer.clone());
            Some(input(w.with_context(|| format!("--out {}", dir.display())))?)
        }
        (_, w) => w,
    };
    if a.prepare {
        return prepared(&job, out, writer);
    }
    // Both output files are created before the run, so a bad path costs no work.
    let episodes_out = input(create(job.episodes_json.as_deref(), "--episodes-json"))?;
    let summary_out = input(create(job.summary_json.as_deref(), "--summary-json"))?;
    let mut display = progress::Display::new(generator.config().target, a.quiet, episodes_out);
    display.writer = writer;
    display.stop = hooks.stop;
    let summary = generator.run(&mut display);
    display.finish();
    if let (Ok(s), Some(w)) = (&summary, &display.writer) {
        let samples = display.timeline.finish(s.seconds, s.episodes);
        let mut stored = serde_json::to_value(s).expect("summaries serialize");
        stored["timeline"] = serde_json::json!(samples);
        stored["calibration"] = serde_json::json!(calibration);
        // A writer that failed says so from `finish` below, with its own error.
        let _ = w.set_summary(stored);
    }
    // Commit what the run produced even when it failed part-way: it is all valid.
    let t = Instant::now();
    let written = display.writer.take().map(|w| w.finish()).transpose();
    let commit_wait = t.elapsed();
    let summary = summary.map(|s| Summary { calibration, ..s }).map_err(|e| match e {
        rollway_runner::Error::Sink(s) if s.is::<Interrupted>() => anyhow!(Interrupted),
        e => e.into(),
    })?;
    let written = written.context("committing the dataset")?;
    if let Some(e) = display.write_error.take() {
        return Err(e).context("writing --episodes-json");
    }
    if let Some(mut f) = summary_out {
        let text = serde_json::to_string_pretty(&summary).expect("summaries serialize");
        writeln!(f, "{text}").context("writing --summary-json")?;
    }
    Ok(Outcome { summary, out, written, resumed, commit_wait })
}

/// Measures the envs per worker a job did not give (`rollway_runner::tune`), and
/// its mode when not given either, when there is a choice to make: envs in this
/// process (a probe of Python envs would time their processes starting) and a
/// target that keeps more than the smallest size busy.
fn calibrate(job: &mut Job, envs: &Arc<dyn EnvFactory>, agents: &Arc<dyn AgentFactory>, quiet: bool) -> Option<Calibration> {
    if !job.calibrate || rollway_host::is_hosted(&job.cfg.env) || !rollway_runner::tune::has_choice(&job.cfg) {
        return None;
    }
    if !quiet {
        let what = if job.calibrate_mode { "envs per worker and mode" } else { "envs per worker" };
        eprintln!("rollway: measuring {what} (--envs-per-worker skips this)");
    }
    // A probe that fails (an agent that gives up, say) leaves the run its default
    // size: the run then meets the same failure and reports it as its own.
    let Ok(c) = rollway_runner::tune::calibrate(&job.cfg, envs.clone(), agents.clone(), job.calibrate_mode) else { return None };
    job.cfg.envs_per_worker = c.envs_per_worker;
    job.cfg.mode = c.mode;
    Some(c)
}

/// A generator for `cfg`: its env and agent from `sources` where given, else by
/// name (with their parameters): `gym:ID` and `module:callable` envs hosted in
/// Python processes, the rest from the built-in registries.
pub fn generator(cfg: RunConfig, filters: Vec<Box<dyn filter::EpisodeFilter>>, sources: Sources) -> rollway_runner::Result<Generator> {
    let (envs, agents) = factories(&cfg, sources);
    Generator::new(cfg, envs, agents, filters)
}

/// The env and agent factories of `cfg`, from `sources` where given.
fn factories(cfg: &RunConfig, sources: Sources) -> (Arc<dyn EnvFactory>, Arc<dyn AgentFactory>) {
    let envs: Arc<dyn EnvFactory> = match sources.envs {
        Some(f) => f,
        None if sources.env_pickle.is_some() => {
            let pickle = sources.env_pickle.unwrap_or_default();
            Arc::new(rollway_host::PythonEnvs::pickled(&cfg.env, &cfg.env_params, sources.python, pickle))
        }
        None if rollway_host::is_hosted(&cfg.env) => Arc::new(rollway_host::PythonEnvs::new(&cfg.env, &cfg.env_params, sources.python)),
        None => Arc::new(rollway_envs::Registered::new(&cfg.env, cfg.env_params.clone())),
    };
    let agents = sources.agents.unwrap_or_else(|| Arc::new(rollway_agents::Registered::new(&cfg.agent, cfg.agent_params.clone())));
    (envs, agents)
}

/// How a run starts writing.
enum Start {
    /// A new dataset, or a new run appended to one.
    New,
    /// Continuing the dataset's last run (`--resume`).
    Resume,
    /// Part of a prepared run, as one of its many writers (`--join`).
    Join(Part),
}

/// The job, where it records, and how it starts writing there.
fn plan(a: &RunArgs, file: Option<RunOptions>) -> Result<(Job, Option<PathBuf>, Start)> {
    if let (Some(dir), Some(part)) = (&a.join, &a.part) {
        let ds = rollway_store::Dataset::open(dir).with_context(|| format!("--join {}", dir.display()))?;
        let run =
            ds.metadata().runs.get(part.run as usize).cloned().with_context(|| format!("--join {}: no run {}", dir.display(), part.run))?;
        let mut job = job::resolve_stored(&run.config)?;
        job.cfg.start_index = part.start;
        job.cfg.target = rollway_runner::Target::Episodes(part.end);
        return Ok((job, Some(dir.clone()), Start::Join(part.clone())));
    }
    if let Some(dir) = &a.resume {
        return Ok((job::resume_from(dir, a, file)?, Some(dir.clone()), Start::Resume));
    }
    let job = match file {
        Some(f) => a.resolve_with(f)?,
        None => a.resolve()?,
    };
    if let Some(dir) = &a.out {
        // A second `run --out D` after a crash would otherwise record a duplicate run.
        if !a.append && rollway_store::format::holds_dataset(dir) {
            let d = dir.display();
            return Err(anyhow!("--out {d} already holds a dataset: `rollway run --resume {d}` continues its last run; add --append to record a new run after it"));
        }
    }
    let out = a.out.clone().or_else(|| (job.is_default && !a.no_record).then(|| crate::data::fresh_dir(&job.cfg.env)));
    Ok((job, out, Start::New))
}

/// `--prepare`: the dataset was created and the run recorded with its config (the
/// generator was built only to learn the env's spaces); members run its episodes.
fn prepared(job: &Job, out: Option<PathBuf>, writer: Option<rollway_store::DatasetWriter>) -> Result<Outcome> {
    let written = writer.context("--prepare needs --out")?.finish().context("committing the dataset")?;
    let summary = Summary { env: job.cfg.env.clone(), agent: job.cfg.agent.clone(), ..Summary::default() };
    Ok(Outcome { summary, out, written: Some(written), resumed: None, commit_wait: Duration::ZERO })
}

fn create(path: Option<&Path>, flag: &str) -> Result<Option<File>> {
    path.map(|p| File::create(p).with_context(|| format!("{flag} {}", p.display()))).transpose()
}
