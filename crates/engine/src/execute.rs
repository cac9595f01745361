//! A run: a request planned into a job, run with live progress, its episodes
//! committed as they finish.
//!
//! [`execute`] is the one place a run happens, for every front.
//! Whatever way a run ends (done, failed, interrupted), the episodes it finished are
//! committed before `execute` returns, so the dataset is always resumable.
//!
//! The generator knows envs and agents only as factories; [`factories`] is where a
//! job's env and agent names are resolved to them: the built-in registries, Python
//! envs hosted in worker processes (`gym:ID`, `module:callable`), `onnx:PATH`
//! models ([`crate::agent_factory`]), or factories the caller brings ([`crate::Sources`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rollway_core::{AgentFactory, EnvFactory};
use rollway_runner::tune::Calibration;
use rollway_runner::{Generator, RunConfig, Summary};
use rollway_store::ResumePoint;

use crate::error::{Error, InputContext, Result};
use crate::host::{agent_factory, env_factory, Host, Sources};
use crate::job::{self, Job};
use crate::progress::{Display, Interrupted};
use crate::request::{Outcome, RunHooks, RunRequest};
use crate::settings::Part;
use crate::sinks::{JsonLines, Sinks};
use crate::target::{on_store, Target, Want};
use crate::{dataset, parse_filters};

/// Plans and runs the job `a` asks for. What the user gave wrong is an
/// [`Error::Input`]; a run its caller stopped is [`Error::Interrupted`].
///
/// The dataset it records into is opened first ([`Target`]); on an object store the
/// run records into the target's local work directory, whose shards are pushed as
/// they commit, so everything a local run checks and does happens on a directory.
pub fn execute(a: &RunRequest, hooks: RunHooks<'_>) -> Result<Outcome> {
    let Some((at, want)) = recorded(a) else { return execute_local(a, hooks) };
    if on_store(&at) {
        store_refusals(a, &at)?;
    }
    let target = Target::open(&at, want)?;
    let mut request = a.clone();
    let join = request.join.as_mut().map(|(dir, _)| dir);
    for dir in [request.out.as_mut(), request.resume.as_mut(), join].into_iter().flatten() {
        // Another path given beside the target's stays itself, for the job to refuse by name.
        *dir = if *dir == at { target.dir().to_path_buf() } else { crate::target::local(dir)? };
    }
    let ran = execute_local(&request, RunHooks { store: target.health(), ..hooks });
    // Whatever the run did, what it committed goes to the store.
    let stored = target.on_store();
    let pushed = target.finish();
    let mut outcome = ran?;
    pushed?;
    if stored {
        outcome.out = Some(at);
    }
    Ok(outcome)
}

/// The dataset `a` records into, named, and what it wants of it (`None`: the default
/// job's fresh directory, or nothing recorded).
fn recorded(a: &RunRequest) -> Option<(PathBuf, Want)> {
    if let Some((dir, part)) = &a.join {
        return Some((dir.clone(), Want::Join { id: part.id.clone() }));
    }
    if let Some(dir) = &a.resume {
        return Some((dir.clone(), Want::Resume));
    }
    let dir = a.out.as_ref()?;
    // A second `run --out D` after a crash would otherwise record a duplicate run.
    let want = if a.append { Want::Append } else { Want::New { refusal: a.holds_a_dataset(dir.display()) } };
    Some((dir.clone(), want))
}

/// What a run on an object store cannot do, refused before the store is reached.
fn store_refusals(a: &RunRequest, at: &Path) -> Result<()> {
    let url = crate::target::store_url(at)?;
    if a.prepare {
        bad!(
            "{}: a distributed run on an object store is prepared by its driver (`rollway run --backend ray`, \
             rollway.ray.run), which holds the dataset's lease while the parts run",
            a.said("prepare", &url)
        );
    }
    if a.report {
        bad!("--report writes the report into the dataset's directory; for {url}, run `rollway report {url} --out FILE` after the run");
    }
    Ok(())
}

/// [`execute`] with every dataset a local directory.
fn execute_local(a: &RunRequest, hooks: RunHooks<'_>) -> Result<Outcome> {
    let (mut job, out, start) = plan(a)?;
    if a.report && out.is_none() {
        bad!("--report writes the report of the dataset the run records: add --out DIR");
    }
    if out.is_some() {
        job.cfg.record_steps = true;
        job.cfg.record_infos = job.writer.record_infos;
    }
    let filters = parse_filters(&job.filters)?;
    let python = hooks.sources.python.clone();
    let own_agents = hooks.sources.agents.is_none();
    let (inline, host) = (hooks.sources.inline.clone(), hooks.sources.host);
    if inline.is_some() && host == Host::Inline && job.cfg.step_timeout.is_some() {
        bad!("{}", crate::host::INLINE_CANNOT_TIME_OUT);
    }
    let (envs, mut agents) = factories(&job.cfg, hooks.sources);
    let calibration = calibrate(&mut job, &envs, &agents, a.quiet);
    let started = Instant::now();
    let (envs, choice) = crate::host_choice::choose(&mut job, envs, inline, &agents, host, a.quiet);
    let calibration = crate::host_choice::with_choice(calibration, &job.cfg, choice, started);
    if own_agents && calibration.is_some() {
        // The calibration may have changed the mode, and with it the cores a model gets.
        agents = agent_factory(&job.cfg.agent, &job.cfg.agent_params, busy_cores(&job.cfg), python);
    }
    // The resolved config, as the dataset stores it (a resume stores the target it runs to).
    let stored = serde_json::to_value(job.to_file_config()).expect("configs serialize");
    let (writer, resumed) = open_writer(&mut job, out.as_deref(), &start, &stored, a.quiet)?;
    let generator = Generator::new(job.cfg.clone(), envs, agents, filters).map_err(|e| job.explain(e))?;
    let writer = match (&out, writer) {
        (Some(dir), None) => {
            let w = rollway_store::DatasetWriter::create(dir, generator.spec(), &job.cfg.agent, job.cfg.seed, stored, job.writer.clone());
            Some(w.input(|| a.said("out", dir.display()))?)
        }
        (_, w) => w,
    };
    if a.prepare {
        return prepared(&job, out, writer);
    }
    // Both output files are created before the run, so a bad path costs no work.
    let lines = create(job.episodes_json.as_deref(), "--episodes-json")?.map(JsonLines::new);
    let summary_out = create(job.summary_json.as_deref(), "--summary-json")?;
    let mut progress = Display::new(generator.config().target, a.quiet);
    progress.stop = hooks.stop;
    progress.store = hooks.store;
    let mut sinks = Sinks { lines, record: writer, progress, version: job.policy_version };
    let summary = generator.run(&mut sinks);
    sinks.progress.finish();
    if let (Ok(s), Some(w)) = (&summary, &sinks.record) {
        let samples = sinks.progress.timeline.finish(s.seconds, s.episodes);
        let mut stored = serde_json::to_value(s).expect("summaries serialize");
        stored["timeline"] = serde_json::json!(samples);
        stored["calibration"] = serde_json::json!(calibration);
        // A writer that failed says so from `finish` below, with its own error.
        let _ = w.set_summary(stored);
    }
    // Commit what the run produced even when it failed part-way: it is all valid.
    let t = Instant::now();
    let written = sinks.record.take().map(|w| w.finish()).transpose();
    let commit_wait = t.elapsed();
    let summary = summary.map(|s| Summary { calibration, ..s }).map_err(|e| match e {
        rollway_runner::Error::Sink(s) if s.is::<Interrupted>() => Error::Interrupted(Interrupted),
        e => Error::Run(e),
    })?;
    let written = written.map_err(|source| Error::Store { op: "committing the dataset", source })?;
    let io = |op, path: &Option<PathBuf>| {
        let path = path.clone().unwrap_or_default();
        move |source| Error::Io { op, path, source }
    };
    if let Some(lines) = sinks.lines.take() {
        lines.finish().map_err(io("writing --episodes-json", &job.episodes_json))?;
    }
    if let Some(mut f) = summary_out {
        let text = serde_json::to_string_pretty(&summary).expect("summaries serialize");
        writeln!(f, "{text}").map_err(io("writing --summary-json", &job.summary_json))?;
    }
    let report = match (&out, a.report) {
        (Some(dir), true) => Some(dataset::write_report(dir, None)?),
        _ => None,
    };
    Ok(Outcome { summary, out, written, resumed, commit_wait, report })
}

/// The writer of a run that joins or resumes a dataset (a new dataset's is made
/// once the generator knows the env's spec); a resume starts the job where the
/// dataset's last run stopped.
fn open_writer(
    job: &mut Job,
    out: Option<&Path>,
    start: &Start,
    stored: &serde_json::Value,
    quiet: bool,
) -> Result<(Option<rollway_store::DatasetWriter>, Option<ResumePoint>)> {
    let Some(dir) = out else { return Ok((None, None)) };
    match start {
        Start::Join(p) => {
            let w = rollway_store::DatasetWriter::join(dir, p.run, &p.id, job.writer.clone());
            Ok((Some(w.input(|| format!("--join {}", dir.display()))?), None))
        }
        Start::Resume => {
            let (w, point) =
                rollway_store::DatasetWriter::resume(dir, job.writer.clone(), Some(stored.clone())).map_err(Error::input_from)?;
            job.cfg.start_index = point.next_index;
            job.cfg.start_steps = point.steps;
            if !quiet {
                let (run, d) = (point.run.run, dir.display());
                eprintln!("rollway: resuming run {run} in {d}: {} episodes ({} steps) already committed", point.episodes, point.steps);
            }
            Ok((Some(w), Some(point)))
        }
        Start::New => Ok((None, None)),
    }
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

/// The env and agent factories of `cfg`, from `sources` where given.
fn factories(cfg: &RunConfig, sources: Sources) -> (Arc<dyn EnvFactory>, Arc<dyn AgentFactory>) {
    let envs = env_factory(&cfg.env, &cfg.env_params, sources.envs, sources.env_pickle, sources.python.clone());
    let agents = sources.agents.unwrap_or_else(|| agent_factory(&cfg.agent, &cfg.agent_params, busy_cores(cfg), sources.python));
    (envs, agents)
}

/// The cores a run's envs keep busy while its agent acts: its workers in async
/// mode, none in sync mode (every env waits for the batch's actions).
fn busy_cores(cfg: &RunConfig) -> usize {
    if cfg.mode == rollway_runner::Mode::Async {
        cfg.workers
    } else {
        0
    }
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
fn plan(a: &RunRequest) -> Result<(Job, Option<PathBuf>, Start)> {
    if let Some((dir, part)) = &a.join {
        let ds = rollway_store::Dataset::open(dir).input(|| format!("--join {}", dir.display()))?;
        let run = ds.metadata().runs.get(part.run as usize).cloned().input(|| format!("--join {}: no run {}", dir.display(), part.run))?;
        let mut job = job::resolve_stored(&run.config)?;
        job.cfg.start_index = part.start;
        job.cfg.target = rollway_runner::Target::Episodes(part.end);
        return Ok((job, Some(dir.clone()), Start::Join(part.clone())));
    }
    if let Some(dir) = &a.resume {
        if resume_starts_afresh(a, dir)? {
            return afresh(a, dir);
        }
        return Ok((job::resume_from(dir, a)?, Some(dir.clone()), Start::Resume));
    }
    if a.no_record && a.out.is_some() {
        // The CLI's parser refuses the pair; this is the same refusal for every other front.
        return Err(Error::input("record=False (--no-record) records nothing, and out= (--out) names where to record: give one"));
    }
    let job = a.resolve()?;
    let out = a.out.clone().or_else(|| (job.is_default && !a.no_record).then(|| dataset::fresh_dir(&job.cfg.env)));
    Ok((job, out, Start::New))
}

/// Whether `--resume DIR` (`resume=DIR`) starts its run afresh instead of continuing
/// the stored one: the run was killed before it recorded anything (its first second
/// or so, before the dataset's metadata is written), so there is no stored config to
/// continue, and the request says what to run (the docs' advice: the run's own
/// command with `--resume DIR` added). A bare `--resume DIR` there cannot know that
/// command, and is refused with what to do instead of "not a dataset". One rule for
/// every front: local runs, and the Ray driver (`rollway run --backend ray`,
/// `rollway.ray.run`). An `s3://` URL is never afresh here (the store decides).
/// Says so on stderr when it starts afresh, unless the request is quiet.
pub fn resume_starts_afresh(a: &RunRequest, dir: &Path) -> Result<bool> {
    if rollway_remote::is_remote(dir) || !rollway_store::nothing_recorded(dir) {
        return Ok(false);
    }
    let file_says = a.file.as_ref().is_some_and(|f| f.env.is_some() || f.agent.is_some());
    if !(a.config.is_some() || file_says || a.settings.env.is_some() || a.settings.agent.is_some()) {
        let resume = a.said("resume", dir.display());
        bad!(
            "{resume}: nothing was recorded there to resume (a run killed in its first second or so, before its dataset was set up, \
             leaves nothing). Run the run's own command again: with {resume} added, it starts afresh when nothing was recorded"
        );
    }
    if !a.quiet {
        eprintln!("rollway: nothing was recorded in {} (the run was killed before its dataset was set up): starting afresh", dir.display());
    }
    Ok(true)
}

/// The run of `a`, started afresh into `dir` (see [`resume_starts_afresh`]).
fn afresh(a: &RunRequest, dir: &Path) -> Result<(Job, Option<PathBuf>, Start)> {
    let fresh = RunRequest { out: Some(dir.to_path_buf()), resume: None, ..a.clone() };
    Ok((fresh.resolve()?, Some(dir.to_path_buf()), Start::New))
}

/// `--prepare`: the dataset was created and the run recorded with its config (the
/// generator was built only to learn the env's spaces); members run its episodes.
fn prepared(job: &Job, out: Option<PathBuf>, writer: Option<rollway_store::DatasetWriter>) -> Result<Outcome> {
    let writer = writer.input(|| "--prepare needs --out".into())?;
    let written = writer.finish().map_err(|source| Error::Store { op: "committing the dataset", source })?;
    let summary = Summary { env: job.cfg.env.clone(), agent: job.cfg.agent.clone(), ..Summary::default() };
    Ok(Outcome { summary, out, written: Some(written), resumed: None, commit_wait: Duration::ZERO, report: None })
}

fn create(path: Option<&Path>, flag: &str) -> Result<Option<File>> {
    path.map(|p| File::create(p).input(|| format!("{flag} {}", p.display()))).transpose()
}
