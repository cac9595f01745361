//! The `run` job: the TOML config file and the flags merged into a `RunConfig`
//! and writer settings (flags win over the file, the file wins over defaults).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rollway_core::Params;
use rollway_runner::{Mode, RunConfig, Target};
use serde::{Deserialize, Serialize};

use crate::args::{ModeArg, RunArgs};

/// The default job's filter: MineStudio's diamond filter.
pub const DEFAULT_FILTER: &str = "key=mine_block,val=diamond.*,num=1,label=diamond";

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
}

impl Job {
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
    Ok(Duration::from_secs_f64(v * scale))
}

fn parse_batch(s: &str) -> Result<(usize, usize)> {
    let (a, b) = s.split_once(':').with_context(|| format!("`{s}`: expected MIN:MAX, e.g. 1:256 (MAX 0 = all envs)"))?;
    Ok((a.trim().parse().with_context(|| format!("`{a}` is not a count"))?, b.trim().parse().with_context(|| format!("`{b}` is not a count"))?))
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

    fn resolve_with(&self, file: FileConfig) -> Result<Job> {
        let is_default = self.config.is_none() && self.env.is_none() && self.agent.is_none() && file.env.is_none() && file.agent.is_none();
        let d = RunConfig::default();
        let env = self.env.clone().or(file.env).unwrap_or(d.env.clone());
        let agent = self.agent.clone().or(file.agent).unwrap_or(d.agent.clone());
        // A target flag replaces the file's target, whichever kind it is.
        let target = match (self.episodes, self.steps, file.episodes, file.steps) {
            (Some(e), _, _, _) => Target::Episodes(e),
            (None, Some(s), _, _) => Target::Steps(s),
            (None, None, Some(_), Some(_)) => bail!("config fields `episodes` and `steps`: give one target, not both"),
            (None, None, Some(e), None) => Target::Episodes(e),
            (None, None, None, Some(s)) => Target::Steps(s),
            (None, None, None, None) => d.target,
        };
        let mode = match self.mode.or(file.mode) {
            Some(ModeArg::Async) => Mode::Async,
            _ => Mode::Sync,
        };
        let (min_batch, max_batch) = match self.batch.as_deref().or(file.batch.as_deref()) {
            Some(b) => parse_batch(b).context("config field `batch`")?,
            None => (d.min_batch, d.max_batch),
        };
        let max_wait = match self.max_wait.as_deref().or(file.max_wait.as_deref()) {
            Some(w) => parse_duration(w).context("config field `max_wait`")?,
            None => d.max_wait,
        };
        let filters = if !self.filter.is_empty() {
            self.filter.clone()
        } else if let Some(f) = file.filters {
            f
        } else if env == d.env {
            vec![DEFAULT_FILTER.to_string()]
        } else {
            vec![]
        };
        let cfg = RunConfig {
            env_params: opt_params(table_params(file.env_params), &self.env_opt, "--env-opt")?,
            agent_params: opt_params(table_params(file.agent_params), &self.agent_opt, "--agent-opt")?,
            env,
            agent,
            workers: self.workers.or(file.workers).unwrap_or(d.workers),
            envs_per_worker: self.envs_per_worker.or(file.envs_per_worker).unwrap_or(d.envs_per_worker),
            target,
            max_steps: self.max_steps.or(file.max_steps),
            seed: self.seed.or(file.seed).unwrap_or(d.seed),
            mode,
            min_batch,
            max_batch,
            max_wait,
            max_restarts: self.max_restarts.or(file.max_restarts).unwrap_or(d.max_restarts),
            max_attempts: self.max_attempts.or(file.max_attempts).unwrap_or(d.max_attempts),
            ..d
        };
        let wd = rollway_store::WriterConfig::default();
        let writer = rollway_store::WriterConfig {
            record_infos: self.record_infos || file.record_infos.unwrap_or(false),
            max_buffer_steps: self.max_buffer_steps.or(file.max_buffer_steps).or(wd.max_buffer_steps),
            max_buffer_episodes: self.max_buffer_episodes.or(file.max_buffer_episodes),
            frame_media: self.frame_media.clone().or(file.frame_media).unwrap_or(wd.frame_media.clone()),
            frame_options: {
                let (d, h) = (&wd.frame_options, &wd.frame_options.h264);
                let h264 = rollway_store::frames::H264Options {
                    crf: self.crf.or(file.crf).unwrap_or(h.crf),
                    preset: self.preset.clone().or(file.preset).unwrap_or(h.preset.clone()),
                    keyint: self.keyint.or(file.keyint).unwrap_or(h.keyint),
                    fps: self.fps.or(file.fps).unwrap_or(h.fps),
                    x264_params: self.x264_params.clone().or(file.x264_params).unwrap_or(h.x264_params.clone()),
                };
                rollway_store::frames::FrameOptions { jpeg_quality: self.jpeg_quality.or(file.jpeg_quality).unwrap_or(d.jpeg_quality), h264 }
            },
            ..wd
        };
        // Keys are checked against the env's frame keys when the dataset is created.
        let names: Vec<String> = writer.frame_media.split(',').filter_map(|p| p.split_once('=').map(|(k, _)| k.trim().to_string())).collect();
        if let Err(m) = rollway_store::frames::check_setting(&writer.frame_media, &names) {
            bail!("config field `frame_media`: {m}");
        }
        let h = &writer.frame_options.h264;
        if !(0.0..=51.0).contains(&h.crf) {
            bail!("config field `crf`: {} is outside 0–51", h.crf);
        }
        if h.keyint == 0 || h.fps == 0 {
            bail!("config fields `keyint` and `fps` must be at least 1");
        }
        const PRESETS: [&str; 10] = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"];
        if !PRESETS.contains(&h.preset.as_str()) {
            bail!("config field `preset`: `{}` is not one of {}", h.preset, PRESETS.join(", "));
        }
        if !(1..=100).contains(&writer.frame_options.jpeg_quality) {
            bail!("config field `jpeg_quality`: {} is outside 1–100", writer.frame_options.jpeg_quality);
        }
        Ok(Job { cfg, filters, summary_json: self.summary_json.clone().or(file.summary_json), episodes_json: self.episodes_json.clone().or(file.episodes_json), writer, is_default })
    }
}
