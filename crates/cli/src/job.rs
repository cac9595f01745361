//! The `run` job: the TOML config file and the flags merged into a `RunConfig`
//! and writer settings (flags win over the file, the file wins over defaults).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rollway_core::Params;
use rollway_runner::{Mode, RunConfig, Target};
use serde::{Deserialize, Serialize};

use crate::args::{ModeArg, RunArgs};

/// The default job's filter: MineStudio's diamond filter.
pub const DEFAULT_FILTER: &str = "key=mine_block,val=diamond.*,num=1,label=diamond";

/// The default job (no env, agent or config given) is a user's first run: one
/// round of its 16 envs, frames as H.264 (a few MB, against ~70 MB as lz4), done in
/// seconds. Any target or frame media given still wins.
pub const DEFAULT_JOB_EPISODES: u64 = 16;
/// The default job's frame media (see [`DEFAULT_JOB_EPISODES`]).
pub const DEFAULT_JOB_MEDIA: &str = "h264";

/// The TOML config file. Unknown keys are errors, so typos do not pass silently.
/// Recording runs store it (fully resolved) in the dataset, for `--resume`.
#[derive(Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    env: Option<String>,
    env_params: Option<toml::Table>,
    agent: Option<String>,
    agent_params: Option<toml::Table>,
    workers: Option<usize>,
    envs_per_worker: Option<usize>,
    episodes: Option<u64>,
    steps: Option<u64>,
    max_steps: Option<u64>,
    seed: Option<u64>,
    mode: Option<ModeArg>,
    batch: Option<String>,
    max_wait: Option<String>,
    max_restarts: Option<u32>,
    max_attempts: Option<u32>,
    step_timeout: Option<String>,
    filters: Option<Vec<String>>,
    summary_json: Option<PathBuf>,
    episodes_json: Option<PathBuf>,
    record_infos: Option<bool>,
    max_buffer_steps: Option<usize>,
    max_buffer_episodes: Option<usize>,
    #[serde(alias = "image_media")]
    frame_media: Option<String>,
    crf: Option<f32>,
    preset: Option<String>,
    keyint: Option<u32>,
    fps: Option<u32>,
    jpeg_quality: Option<u8>,
    x264_params: Option<String>,
}

/// A fully resolved `run` invocation.
pub struct Job {
    pub cfg: RunConfig,
    pub filters: Vec<String>,
    pub summary_json: Option<PathBuf>,
    pub episodes_json: Option<PathBuf>,
    pub writer: rollway_store::WriterConfig,
    /// True when this is the built-in default job (no env, agent or config given).
    pub is_default: bool,
    /// Envs per worker were not given: the run may measure them (`rollway_runner::tune`).
    pub calibrate: bool,
    origin: Origin,
}

impl Job {
    /// A runner error about this job's settings, naming the flag or config key
    /// each setting came from.
    pub fn explain(&self, e: rollway_runner::Error) -> anyhow::Error {
        match e {
            rollway_runner::Error::Config { field, message } => anyhow!("{}: {message}", self.origin.name(field)),
            e => e.into(),
        }
    }

    /// The resolved configuration as a config file, stored in datasets for `--resume`.
    pub fn to_file_config(&self) -> FileConfig {
        let c = &self.cfg;
        let table = |p: &Params| p.0.iter().map(|(k, v)| (k.clone(), toml::Value::String(v.clone()))).collect::<toml::Table>();
        let (episodes, steps) = match c.target {
            Target::Episodes(n) => (Some(n), None),
            Target::Steps(n) => (None, Some(n)),
        };
        FileConfig {
            env: Some(c.env.clone()),
            env_params: Some(table(&c.env_params)),
            agent: Some(c.agent.clone()),
            agent_params: Some(table(&c.agent_params)),
            workers: Some(c.workers),
            envs_per_worker: Some(c.envs_per_worker),
            episodes,
            steps,
            max_steps: c.max_steps,
            seed: Some(c.seed),
            mode: Some(if c.mode == Mode::Async { ModeArg::Async } else { ModeArg::Sync }),
            batch: Some(format!("{}:{}", c.min_batch, c.max_batch)),
            max_wait: Some(format!("{}us", c.max_wait.as_micros())),
            max_restarts: Some(c.max_restarts),
            max_attempts: Some(c.max_attempts),
            step_timeout: c.step_timeout.map(|t| format!("{}us", t.as_micros())),
            filters: Some(self.filters.clone()),
            summary_json: None,
            episodes_json: None,
            record_infos: Some(self.writer.record_infos),
            max_buffer_steps: self.writer.max_buffer_steps,
            max_buffer_episodes: self.writer.max_buffer_episodes,
            frame_media: Some(self.writer.frame_media.clone()),
            crf: Some(self.writer.frame_options.h264.crf),
            preset: Some(self.writer.frame_options.h264.preset.clone()),
            keyint: Some(self.writer.frame_options.h264.keyint),
            fps: Some(self.writer.frame_options.h264.fps),
            jpeg_quality: Some(self.writer.frame_options.jpeg_quality),
            x264_params: Some(self.writer.frame_options.h264.x264_params.clone()),
        }
    }
}

/// Resolves a stored config (from a dataset) as if it were a config file with no flags.
pub fn resolve_stored(json: &serde_json::Value) -> Result<Job> {
    let file: FileConfig = serde_json::from_value(json.clone()).context("the dataset's stored run config")?;
    RunArgs::default().resolve_with(file)
}

/// The job `--resume` continues: the dataset's stored config plus the flags that
/// cannot change which episodes the run produces (clap refuses every other flag
/// beside `--resume`): output files and a larger target of the same kind.
pub fn resume_job(stored: &serde_json::Value, a: &RunArgs) -> Result<Job> {
    let mut job = resolve_stored(stored)?;
    job.cfg.target = match (job.cfg.target, a.episodes, a.steps) {
        (t, None, None) => t,
        (Target::Episodes(n), Some(e), None) if e >= n => Target::Episodes(e),
        (Target::Steps(n), None, Some(s)) if s >= n => Target::Steps(s),
        (t, e, s) => {
            let given = e.map_or_else(|| format!("--steps {}", s.unwrap_or_default()), |e| format!("--episodes {e}"));
            let stored = match t {
                Target::Episodes(n) => format!("--episodes {n}"),
                Target::Steps(n) => format!("--steps {n}"),
            };
            bail!("{given}: the resumed run's target is {stored}; with --resume a target can only be raised, in the same unit");
        }
    };
    for (key, flag) in [("episodes", a.episodes), ("steps", a.steps)] {
        if flag.is_some() {
            job.origin.given.push(key);
        }
    }
    job.summary_json = a.summary_json.clone().or(job.summary_json);
    job.episodes_json = a.episodes_json.clone().or(job.episodes_json);
    Ok(job)
}

/// Which settings came from flags, so errors name `--max-wait` rather than the
/// config key `max_wait` when the user typed the flag.
#[derive(Default)]
struct Origin {
    given: Vec<&'static str>,
}

impl Origin {
    /// The flag's value if given (noting that it was), else the file's.
    fn pick<T>(&mut self, key: &'static str, flag: Option<T>, file: Option<T>) -> Option<T> {
        if flag.is_some() {
            self.given.push(key);
        }
        flag.or(file)
    }

    /// How an error names the setting `key`.
    fn name(&self, key: &str) -> String {
        if self.given.contains(&key) {
            format!("--{}", key.replace('_', "-"))
        } else {
            format!("config field `{key}`")
        }
    }
}

fn table_params(t: Option<toml::Table>) -> Params {
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
        let more = Params::parse(o).with_context(|| format!("{flag} `{o}`: expected KEY=VALUE[,KEY=VALUE…]"))?;
        p.0.extend(more.0);
    }
    Ok(p)
}

/// Parses `500us`, `2ms`, `1.5s` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().with_context(|| format!("`{s}` is not a duration (try 500us, 2ms, 1s)"))?;
    if !(v >= 0.0 && v.is_finite()) {
        bail!("`{s}`: a duration must be a non-negative number");
    }
    Duration::try_from_secs_f64(v * scale).map_err(|_| anyhow!("`{s}` is too long a duration"))
}

fn parse_batch(s: &str) -> Result<(usize, usize)> {
    let (a, b) = s.split_once(':').with_context(|| format!("`{s}`: expected MIN:MAX, e.g. 1:256 (MAX 0 = all envs)"))?;
    Ok((
        a.trim().parse().with_context(|| format!("`{a}` is not a count"))?,
        b.trim().parse().with_context(|| format!("`{b}` is not a count"))?,
    ))
}

impl RunArgs {
    /// Reads the config file (if any) and applies the flags on top.
    pub fn resolve(&self) -> Result<Job> {
        let file: FileConfig = match &self.config {
            None => FileConfig::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("reading config {}", path.display()))?;
                toml::from_str(&text).with_context(|| format!("config {}", path.display()))?
            }
        };
        self.resolve_with(file)
    }

    /// Applies the flags on top of an already parsed config.
    pub fn resolve_with(&self, mut file: FileConfig) -> Result<Job> {
        let is_default = self.config.is_none() && self.env.is_none() && self.agent.is_none() && file.env.is_none() && file.agent.is_none();
        let mut origin = Origin::default();
        let target_given = self.episodes.is_some() || self.steps.is_some() || file.episodes.is_some() || file.steps.is_some();
        let media_given = self.frame_media.is_some() || file.frame_media.is_some();
        // Outside the default job (a fixed first run), what the run did not say is
        // chosen for speed: a worker a core, async mode, envs per worker measured.
        let fast = !is_default;
        let workers_given = self.workers.is_some() || file.workers.is_some();
        let mode_given = self.mode.is_some() || file.mode.is_some();
        let calibrate = fast && self.envs_per_worker.is_none() && file.envs_per_worker.is_none();
        let mut writer = self.writer_config(&mut file, &mut origin)?;
        let mut cfg = self.run_config(&mut file, &mut origin)?;
        if is_default && !target_given {
            cfg.target = Target::Episodes(DEFAULT_JOB_EPISODES);
        }
        if is_default && !media_given {
            writer.frame_media = DEFAULT_JOB_MEDIA.into();
        }
        if fast && !workers_given {
            cfg.workers = std::thread::available_parallelism().map_or(cfg.workers, |n| n.get());
        }
        if fast && !mode_given {
            cfg.mode = rollway_runner::tune::DEFAULT_MODE;
        }
        let filters = if !self.filter.is_empty() {
            self.filter.clone()
        } else if let Some(f) = file.filters.take() {
            f
        } else if cfg.env == RunConfig::default().env {
            vec![DEFAULT_FILTER.to_string()]
        } else {
            vec![]
        };
        let job = Job {
            cfg,
            filters,
            summary_json: self.summary_json.clone().or(file.summary_json),
            episodes_json: self.episodes_json.clone().or(file.episodes_json),
            writer,
            is_default,
            calibrate,
            origin,
        };
        if let Err(e) = job.cfg.validate() {
            return Err(job.explain(e));
        }
        Ok(job)
    }

    /// The generator's settings; checked by `RunConfig::validate` afterwards.
    fn run_config(&self, file: &mut FileConfig, o: &mut Origin) -> Result<RunConfig> {
        let d = RunConfig::default();
        // A target flag replaces the file's target, whichever kind it is.
        let target = match (o.pick("episodes", self.episodes, None), o.pick("steps", self.steps, None), file.episodes, file.steps) {
            (Some(e), _, _, _) => Target::Episodes(e),
            (None, Some(s), _, _) => Target::Steps(s),
            (None, None, Some(_), Some(_)) => bail!("config fields `episodes` and `steps`: give one target, not both"),
            (None, None, Some(e), None) => Target::Episodes(e),
            (None, None, None, Some(s)) => Target::Steps(s),
            (None, None, None, None) => d.target,
        };
        let mode = match o.pick("mode", self.mode, file.mode) {
            Some(ModeArg::Async) => Mode::Async,
            _ => Mode::Sync,
        };
        let (min_batch, max_batch) = match o.pick("batch", self.batch.clone(), file.batch.take()) {
            Some(b) => parse_batch(&b).with_context(|| o.name("batch"))?,
            None => (d.min_batch, d.max_batch),
        };
        let max_wait = match o.pick("max_wait", self.max_wait.clone(), file.max_wait.take()) {
            Some(w) => parse_duration(&w).with_context(|| o.name("max_wait"))?,
            None => d.max_wait,
        };
        let step_timeout = match o.pick("step_timeout", self.step_timeout.clone(), file.step_timeout.take()) {
            Some(t) => Some(parse_duration(&t).with_context(|| o.name("step_timeout"))?),
            None => d.step_timeout,
        };
        Ok(RunConfig {
            step_timeout,
            env_params: opt_params(table_params(file.env_params.take()), &self.env_opt, "--env-opt")?,
            agent_params: opt_params(table_params(file.agent_params.take()), &self.agent_opt, "--agent-opt")?,
            env: o.pick("env", self.env.clone(), file.env.take()).unwrap_or(d.env.clone()),
            agent: o.pick("agent", self.agent.clone(), file.agent.take()).unwrap_or(d.agent.clone()),
            workers: o.pick("workers", self.workers, file.workers).unwrap_or(d.workers),
            envs_per_worker: o.pick("envs_per_worker", self.envs_per_worker, file.envs_per_worker).unwrap_or(d.envs_per_worker),
            target,
            max_steps: o.pick("max_steps", self.max_steps, file.max_steps),
            seed: o.pick("seed", self.seed, file.seed).unwrap_or(d.seed),
            mode,
            min_batch,
            max_batch,
            max_wait,
            max_restarts: o.pick("max_restarts", self.max_restarts, file.max_restarts).unwrap_or(d.max_restarts),
            max_attempts: o.pick("max_attempts", self.max_attempts, file.max_attempts).unwrap_or(d.max_attempts),
            ..d
        })
    }

    /// The dataset writer's settings, checked.
    fn writer_config(&self, file: &mut FileConfig, o: &mut Origin) -> Result<rollway_store::WriterConfig> {
        let wd = rollway_store::WriterConfig::default();
        let (d, h) = (&wd.frame_options, &wd.frame_options.h264);
        let h264 = rollway_store::frames::H264Options {
            crf: o.pick("crf", self.crf, file.crf).unwrap_or(h.crf),
            preset: o.pick("preset", self.preset.clone(), file.preset.take()).unwrap_or(h.preset.clone()),
            keyint: o.pick("keyint", self.keyint, file.keyint).unwrap_or(h.keyint),
            fps: o.pick("fps", self.fps, file.fps).unwrap_or(h.fps),
            x264_params: o.pick("x264_params", self.x264_params.clone(), file.x264_params.take()).unwrap_or(h.x264_params.clone()),
        };
        let jpeg_quality = o.pick("jpeg_quality", self.jpeg_quality, file.jpeg_quality).unwrap_or(d.jpeg_quality);
        let writer = rollway_store::WriterConfig {
            record_infos: o.pick("record_infos", self.record_infos.then_some(true), file.record_infos).unwrap_or(false),
            max_buffer_steps: o.pick("max_buffer_steps", self.max_buffer_steps, file.max_buffer_steps).or(wd.max_buffer_steps),
            max_buffer_episodes: o.pick("max_buffer_episodes", self.max_buffer_episodes, file.max_buffer_episodes),
            frame_media: o.pick("frame_media", self.frame_media.clone(), file.frame_media.take()).unwrap_or(wd.frame_media.clone()),
            frame_options: rollway_store::frames::FrameOptions { jpeg_quality, h264 },
            ..wd
        };
        check_writer(&writer, o)?;
        Ok(writer)
    }
}

/// Checks what the store would only reject once the first shard is encoded.
fn check_writer(w: &rollway_store::WriterConfig, o: &Origin) -> Result<()> {
    // Keys are checked against the env's frame keys when the dataset is created.
    let names: Vec<String> = w.frame_media.split(',').filter_map(|p| p.split_once('=').map(|(k, _)| k.trim().to_string())).collect();
    if let Err(m) = rollway_store::frames::check_setting(&w.frame_media, &names) {
        bail!("{}: {m}", o.name("frame_media"));
    }
    let h = &w.frame_options.h264;
    if !(0.0..=51.0).contains(&h.crf) {
        bail!("{}: {} is outside 0–51", o.name("crf"), h.crf);
    }
    if h.keyint == 0 {
        bail!("{}: must be at least 1", o.name("keyint"));
    }
    // x264 refuses frame rates far above this, and only after a shard is encoded.
    if !(1..=1000).contains(&h.fps) {
        bail!("{}: {} is outside 1–1000", o.name("fps"), h.fps);
    }
    const PRESETS: [&str; 10] = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"];
    if !PRESETS.contains(&h.preset.as_str()) {
        bail!("{}: `{}` is not one of {}", o.name("preset"), h.preset, PRESETS.join(", "));
    }
    if !(1..=100).contains(&w.frame_options.jpeg_quality) {
        bail!("{}: {} is outside 1–100", o.name("jpeg_quality"), w.frame_options.jpeg_quality);
    }
    Ok(())
}
