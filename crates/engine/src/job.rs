//! The `run` job: the TOML config file and the flags merged into a `RunConfig`
//! and writer settings (flags win over the file, the file wins over defaults).

use std::path::PathBuf;

use rollway_core::Params;
use rollway_runner::{Mode, RunConfig, Target};

use crate::error::{Error, InputContext, Result};
use crate::request::RunRequest;
use crate::settings::{DurationSetting, ModeArg, RunOptions, DEFAULT_COMMIT_EVERY};

/// The default job's filter: MineStudio's diamond filter.
pub const DEFAULT_FILTER: &str = "key=mine_block,val=diamond.*,num=1,label=diamond";

/// The default job (no env, agent or config given) is a user's first run: one
/// round of its 16 envs, frames as H.264 (a few MB, against ~70 MB as lz4), done in
/// seconds. Any target or frame media given still wins.
pub const DEFAULT_JOB_EPISODES: u64 = 16;
/// The default job's frame media (see [`DEFAULT_JOB_EPISODES`]).
pub const DEFAULT_JOB_MEDIA: &str = "h264";

/// A fully resolved `run` invocation.
pub struct Job {
    /// What the generator runs.
    pub cfg: RunConfig,
    /// Filter specs labelling each episode (`rollway_runner::filter::parse`).
    pub filters: Vec<String>,
    /// Where the summary goes as JSON (`--summary-json`).
    pub summary_json: Option<PathBuf>,
    /// Where each episode goes as a JSON line (`--episodes-json`).
    pub episodes_json: Option<PathBuf>,
    /// How the dataset is written.
    pub writer: rollway_store::WriterConfig,
    /// True when this is the built-in default job (no env, agent or config given).
    pub is_default: bool,
    /// Envs per worker were not given: the run may measure them (`rollway_runner::tune`).
    pub calibrate: bool,
    /// Nor was the mode: calibrating may switch it to sync.
    pub calibrate_mode: bool,
    /// The training policy version acting in every step (`--policy-version`), recorded with each step.
    pub policy_version: Option<u64>,
    origin: Origin,
}

impl Job {
    /// A runner error about this job's settings, naming the flag or config key
    /// each setting came from.
    pub fn explain(&self, e: rollway_runner::Error) -> Error {
        match e {
            rollway_runner::Error::Config { field, message } => Error::input(format!("{}: {message}", self.origin.name(field))),
            e => Error::input_from(e),
        }
    }

    /// The resolved configuration as a config file, stored in datasets for `--resume`.
    pub fn to_file_config(&self) -> RunOptions {
        let c = &self.cfg;
        let table = |p: &Params| p.0.iter().map(|(k, v)| (k.clone(), toml::Value::String(v.clone()))).collect::<toml::Table>();
        let (episodes, steps) = match c.target {
            Target::Episodes(n) => (Some(n), None),
            Target::Steps(n) => (None, Some(n)),
        };
        RunOptions {
            env: Some(c.env.clone()),
            env_params: Some(table(&c.env_params)),
            agent: Some(c.agent.clone()),
            agent_params: Some(table(&c.agent_params)),
            workers: Some(c.workers),
            envs_per_worker: Some(c.envs_per_worker),
            episodes,
            steps,
            max_episode_steps: c.max_steps,
            seed: Some(c.seed),
            mode: Some(if c.mode == Mode::Async { ModeArg::Async } else { ModeArg::Sync }),
            batch: Some(format!("{}:{}", c.min_batch, c.max_batch)),
            max_wait: Some(DurationSetting::stored(c.max_wait)),
            max_restarts: Some(c.max_restarts),
            max_attempts: Some(c.max_attempts),
            check: Some(c.check),
            step_timeout: c.step_timeout.map(DurationSetting::stored),
            filters: Some(self.filters.clone()),
            summary_json: None,
            episodes_json: None,
            record_infos: Some(self.writer.record_infos),
            max_buffer_steps: self.writer.max_buffer_steps,
            max_buffer_episodes: self.writer.max_buffer_episodes,
            commit_every: Some(self.writer.max_buffer_age.as_secs_f64()),
            frame_media: Some(self.writer.frame_media.clone()),
            crf: Some(self.writer.frame_options.h264.crf),
            preset: Some(self.writer.frame_options.h264.preset.clone()),
            keyint: Some(self.writer.frame_options.h264.keyint),
            fps: Some(self.writer.frame_options.h264.fps),
            jpeg_quality: Some(self.writer.frame_options.jpeg_quality),
            x264_params: Some(self.writer.frame_options.h264.x264_params.clone()),
            env_opt: vec![],
            agent_opt: vec![],
            policy_version: self.policy_version,
        }
    }
}

/// Resolves a stored config (from a dataset) as if it were a config file with no flags.
pub fn resolve_stored(json: &serde_json::Value) -> Result<Job> {
    let file: RunOptions = serde_json::from_value(json.clone()).input(|| "the dataset's stored run config".into())?;
    RunRequest::default().resolve_with(file)
}

/// What `--resume` takes beside it whatever its value: output files, a larger
/// target of the same kind, and how often to commit (which changes no episode).
/// Any other option must equal the stored config's.
const RESUME_TAKES: [&str; 5] = ["episodes", "steps", "summary_json", "episodes_json", "commit_every"];

/// The job `--resume DIR` continues: the last run stored in the dataset at `dir`
/// (see [`resume_job`]), with the request's config (file) beside it, if any.
pub fn resume_from(dir: &std::path::Path, a: &RunRequest) -> Result<Job> {
    if let Some(out) = &a.out {
        let same = |p: &std::path::Path| std::fs::canonicalize(p).ok();
        if same(out) != same(dir) {
            bad!(
                "{}: a resumed run records into the dataset it resumes ({})",
                a.said("out", out.display()),
                a.said("resume", dir.display())
            );
        }
    }
    let ds = rollway_store::Dataset::open(dir).input(|| a.said("resume", dir.display()))?;
    let run = ds.metadata().runs.last().cloned().input(|| "the dataset has no run to resume".into())?;
    let file = match (&a.file, &a.config) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(path)) => Some(read_config(path)?),
        (None, None) => None,
    };
    resume_job(&run.config, a, file)
}

/// The job `--resume` continues: the dataset's stored config, with a target
/// raised by `--episodes`/`--steps` and the output files given. Every other option
/// given (flags, or `file`'s keys) must resolve to the stored value: a user may
/// re-run their command with `--resume` added; an option that differs is refused,
/// each named with the stored value beside the given one.
pub fn resume_job(stored: &serde_json::Value, a: &RunRequest, file: Option<RunOptions>) -> Result<Job> {
    let stored_opts: RunOptions = serde_json::from_value(stored.clone()).input(|| "the dataset's stored run config".into())?;
    let mut job = RunRequest::default().resolve_with(stored_opts.clone())?;
    // The given options over the stored ones, targets and output files aside.
    let strip = |o: &RunOptions| RunOptions { episodes: None, steps: None, summary_json: None, episodes_json: None, ..o.clone() };
    let given = RunRequest { settings: strip(&a.settings), ..RunRequest::default() };
    let file = file.unwrap_or_default();
    let merged = strip(&file).over(stored_opts);
    // A setting as the caller names it: the flag on the command line, the keyword in Python.
    let name = |k: &str| if a.python { k.to_string() } else { RunOptions::flag(k).unwrap_or_else(|| k.to_string()) };
    let differ = differences(&job.to_file_config(), &given.resolve_with(merged)?.to_file_config(), &name);
    if !differ.is_empty() {
        let takes: Vec<String> = RESUME_TAKES.iter().map(|k| name(k)).collect();
        bad!(
            "a resumed run keeps the config stored in its dataset; these differ from it: {}. Leave them out or give the stored values \
             (beside {}, {} may change)",
            differ.join("; "),
            a.setting("resume"),
            takes.join(", ")
        );
    }
    let target = (a.settings.episodes.or(file.episodes), a.settings.steps.or(file.steps));
    job.cfg.target = match (job.cfg.target, target.0, target.1) {
        (t, None, None) => t,
        (Target::Episodes(n), Some(e), None) if e >= n => Target::Episodes(e),
        (Target::Steps(n), None, Some(s)) if s >= n => Target::Steps(s),
        (t, e, s) => {
            let given = e.map_or_else(|| a.said("steps", s.unwrap_or_default()), |e| a.said("episodes", e));
            let stored = match t {
                Target::Episodes(n) => a.said("episodes", n),
                Target::Steps(n) => a.said("steps", n),
            };
            let resume = a.setting("resume");
            bad!("{given}: the resumed run's target is {stored}; with {resume} a target can only be raised, in the same unit");
        }
    };
    job.origin.given = a.settings.given();
    job.summary_json = a.settings.summary_json.clone().or(file.summary_json).or(job.summary_json);
    job.episodes_json = a.settings.episodes_json.clone().or(file.episodes_json).or(job.episodes_json);
    Ok(job)
}

/// The keys whose values differ between two resolved configs, as `--flag: stored X, given Y`.
fn differences(stored: &RunOptions, given: &RunOptions, name: &dyn Fn(&str) -> String) -> Vec<String> {
    let (s, g) = (serde_json::to_value(stored).expect("configs serialize"), serde_json::to_value(given).expect("configs serialize"));
    let (s, g) = (s.as_object().cloned().unwrap_or_default(), g.as_object().cloned().unwrap_or_default());
    let text = |v: Option<&serde_json::Value>| match v {
        None | Some(serde_json::Value::Null) => "(none)".to_string(),
        Some(serde_json::Value::String(x)) => x.clone(),
        Some(v) => v.to_string(),
    };
    g.iter()
        .filter(|(k, v)| s.get(*k) != Some(*v) && !RESUME_TAKES.contains(&k.as_str()))
        .map(|(k, v)| format!("{}: stored {}, given {}", name(k), text(s.get(k)), text(Some(v))))
        .collect()
}

/// A TOML config file.
fn read_config(path: &std::path::Path) -> Result<RunOptions> {
    let text = std::fs::read_to_string(path).input(|| format!("reading config {}", path.display()))?;
    let at = || format!("config {}", path.display());
    let mut table: toml::Table = toml::from_str(&text).input(at)?;
    crate::settings::rename_keys(&mut table, &at())?;
    table.try_into().input(at)
}

/// Which settings came from flags, so errors name `--max-wait` rather than the
/// config key `max_wait` when the user typed the flag.
#[derive(Default)]
struct Origin {
    given: Vec<String>,
}

impl Origin {
    /// How an error names the setting `key`.
    fn name(&self, key: &str) -> String {
        match RunOptions::flag(key) {
            Some(flag) if self.given.iter().any(|g| g == key) => flag,
            _ => format!("config field `{key}`"),
        }
    }
}

/// A config table of parameters as an env's or agent's `Params` (strings kept, other values as TOML text).
pub fn table_params(t: Option<toml::Table>) -> Params {
    let mut p = Params::new();
    for (k, v) in t.unwrap_or_default() {
        let s = match v {
            toml::Value::String(s) => s,
            other => other.to_string(),
        };
        p.0.insert(k, s);
    }
    p
}

fn opt_params(base: Params, opts: &[String], flag: &str) -> Result<Params> {
    let mut p = base;
    for o in opts {
        // Each flag takes `k=v` or several as `k=v,k=v`.
        let more = Params::parse(o).input(|| format!("{flag} `{o}`: expected KEY=VALUE[,KEY=VALUE…]"))?;
        p.0.extend(more.0);
    }
    Ok(p)
}

fn parse_batch(s: &str) -> Result<(usize, usize)> {
    let (a, b) = s.split_once(':').input(|| format!("`{s}`: expected MIN:MAX, e.g. 1:256 (MAX 0 = all envs)"))?;
    Ok((a.trim().parse().input(|| format!("`{a}` is not a count"))?, b.trim().parse().input(|| format!("`{b}` is not a count"))?))
}

impl RunRequest {
    /// Reads the config (the request's `file`, else its TOML file, if any) and
    /// applies the settings on top.
    pub fn resolve(&self) -> Result<Job> {
        let file: RunOptions = match (&self.file, &self.config) {
            (Some(f), _) => f.clone(),
            (None, Some(path)) => read_config(path)?,
            (None, None) => RunOptions::default(),
        };
        self.resolve_with(file)
    }

    /// Applies the flags on top of an already parsed config.
    pub fn resolve_with(&self, file: RunOptions) -> Result<Job> {
        let is_default = self.config.is_none()
            && file.env.is_none()
            && file.agent.is_none()
            && self.settings.env.is_none()
            && self.settings.agent.is_none();
        let origin = Origin { given: self.settings.given() };
        let o = self.settings.over(file);
        let mut writer = writer_config(&o, &origin)?;
        let mut cfg = self.run_config(&o, &origin)?;
        if is_default && o.episodes.is_none() && o.steps.is_none() {
            cfg.target = Target::Episodes(DEFAULT_JOB_EPISODES);
        }
        if is_default && o.frame_media.is_none() {
            writer.frame_media = DEFAULT_JOB_MEDIA.into();
        }
        // Outside the default job (a fixed first run), what the run did not say is
        // chosen for speed: a worker a core, envs per worker measured, async mode
        // unless the measuring finds sync faster.
        let fast = !is_default;
        if fast && o.workers.is_none() {
            cfg.workers = std::thread::available_parallelism().map_or(cfg.workers, |n| n.get());
        }
        if fast && o.mode.is_none() {
            cfg.mode = rollway_runner::tune::DEFAULT_MODE;
        }
        let filters = match o.filters {
            Some(f) => f,
            None if cfg.env == RunConfig::default().env => vec![DEFAULT_FILTER.to_string()],
            None => vec![],
        };
        let job = Job {
            cfg,
            filters,
            summary_json: o.summary_json,
            episodes_json: o.episodes_json,
            writer,
            is_default,
            calibrate: fast && o.envs_per_worker.is_none(),
            calibrate_mode: fast && o.mode.is_none(),
            policy_version: o.policy_version,
            origin,
        };
        if let Err(e) = job.cfg.validate() {
            return Err(job.explain(e));
        }
        Ok(job)
    }

    /// The generator's settings from the merged options `o`; checked by
    /// `RunConfig::validate` afterwards.
    fn run_config(&self, o: &RunOptions, origin: &Origin) -> Result<RunConfig> {
        let d = RunConfig::default();
        let target = match (o.episodes, o.steps) {
            (Some(_), Some(_)) => bad!("config fields `episodes` and `steps`: give one target, not both"),
            (Some(e), None) => Target::Episodes(e),
            (None, Some(s)) => Target::Steps(s),
            (None, None) => d.target,
        };
        let (min_batch, max_batch) = match &o.batch {
            Some(b) => parse_batch(b).input(|| origin.name("batch"))?,
            None => (d.min_batch, d.max_batch),
        };
        let max_wait = match &o.max_wait {
            Some(w) => w.duration().input(|| origin.name("max_wait"))?,
            None => d.max_wait,
        };
        let step_timeout = match &o.step_timeout {
            Some(t) => Some(t.duration().input(|| origin.name("step_timeout"))?),
            None => d.step_timeout,
        };
        Ok(RunConfig {
            step_timeout,
            env_params: opt_params(table_params(o.env_params.clone()), &self.settings.env_opt, "--env-opt")?,
            agent_params: opt_params(table_params(o.agent_params.clone()), &self.settings.agent_opt, "--agent-opt")?,
            env: o.env.clone().unwrap_or(d.env.clone()),
            agent: rollway_onnx::absolute(&o.agent.clone().unwrap_or(d.agent.clone())),
            workers: o.workers.unwrap_or(d.workers),
            envs_per_worker: o.envs_per_worker.unwrap_or(d.envs_per_worker),
            target,
            max_steps: o.max_episode_steps,
            seed: o.seed.unwrap_or(d.seed),
            mode: if o.mode == Some(ModeArg::Async) { Mode::Async } else { Mode::Sync },
            min_batch,
            max_batch,
            max_wait,
            max_restarts: o.max_restarts.unwrap_or(d.max_restarts),
            max_attempts: o.max_attempts.unwrap_or(d.max_attempts),
            check: o.check.unwrap_or(d.check),
            ..d
        })
    }
}

/// The dataset writer's settings from the merged options `o`, checked.
fn writer_config(o: &RunOptions, origin: &Origin) -> Result<rollway_store::WriterConfig> {
    let wd = rollway_store::WriterConfig::default();
    let (d, h) = (&wd.frame_options, &wd.frame_options.h264);
    let h264 = rollway_store::frames::H264Options {
        crf: o.crf.unwrap_or(h.crf),
        preset: o.preset.clone().unwrap_or(h.preset.clone()),
        keyint: o.keyint.unwrap_or(h.keyint),
        fps: o.fps.unwrap_or(h.fps),
        x264_params: o.x264_params.clone().unwrap_or(h.x264_params.clone()),
    };
    let writer = rollway_store::WriterConfig {
        record_infos: o.record_infos.unwrap_or(false),
        max_buffer_steps: o.max_buffer_steps.or(wd.max_buffer_steps),
        max_buffer_episodes: o.max_buffer_episodes,
        max_buffer_age: crate::settings::commit_age(o.commit_every.unwrap_or(DEFAULT_COMMIT_EVERY), &origin.name("commit_every"))?,
        frame_media: o.frame_media.clone().unwrap_or(wd.frame_media.clone()),
        frame_options: rollway_store::frames::FrameOptions { jpeg_quality: o.jpeg_quality.unwrap_or(d.jpeg_quality), h264 },
        ..wd
    };
    check_writer(&writer, origin)?;
    Ok(writer)
}

/// Checks what the store would only reject once the first shard is encoded.
fn check_writer(w: &rollway_store::WriterConfig, o: &Origin) -> Result<()> {
    crate::settings::check_frame_media(&w.frame_media, &o.name("frame_media"))?;
    let h = &w.frame_options.h264;
    if !(0.0..=51.0).contains(&h.crf) {
        bad!("{}: {} is outside 0–51", o.name("crf"), h.crf);
    }
    if h.keyint == 0 {
        bad!("{}: must be at least 1", o.name("keyint"));
    }
    // x264 refuses frame rates far above this, and only after a shard is encoded.
    if !(1..=1000).contains(&h.fps) {
        bad!("{}: {} is outside 1–1000", o.name("fps"), h.fps);
    }
    const PRESETS: [&str; 10] = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"];
    if !PRESETS.contains(&h.preset.as_str()) {
        bad!("{}: `{}` is not one of {}", o.name("preset"), h.preset, PRESETS.join(", "));
    }
    if !(1..=100).contains(&w.frame_options.jpeg_quality) {
        bad!("{}: {} is outside 1–100", o.name("jpeg_quality"), w.frame_options.jpeg_quality);
    }
    Ok(())
}
