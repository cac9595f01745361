//! Command-line flags and the TOML config file, merged into a `RunConfig`
//! (flags win over the file, the file wins over defaults).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use rollway_core::Params;
use rollway_runner::{Mode, RunConfig, Target};
use serde::{Deserialize, Serialize};

/// The default job's filter: MineStudio's diamond filter.
pub const DEFAULT_FILTER: &str = "key=mine_block,val=diamond.*,num=1,label=diamond";

#[derive(Parser)]
#[command(name = "rollway", version, about = "Generate, filter, record and load RL episodes, fast.", long_about = "rollway runs environments and agents in parallel to generate episodes, \
labels them with filters, records them crash-safely (Parquet + lz4/JPEG/H.264 frames), loads them back as training batches, \
and exports/imports Minari and LeRobot datasets.\n\nStart with `rollway run` (the pixel mining world, a scripted miner and a diamond filter), \
then try `rollway run --env CartPole-v1 --agent random --steps 10000000`. `rollway envs` and `rollway agents` list what is built in.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Generate episodes and print a summary.
    Run(Box<RunArgs>),
    /// List built-in environments with their spaces.
    Envs,
    /// List built-in agents.
    Agents,
    /// Show a dataset: counts, spaces, sizes, label rates, shards.
    Inspect(DataArgs),
    /// Check every committed episode of a dataset against its index (exit 1 on damage; changes nothing).
    Verify(VerifyArgs),
    /// Re-run filters on a dataset's episodes, replacing their labels (index only).
    Relabel(RelabelArgs),
    /// Iterate training batches from a dataset and report loader throughput.
    Load(LoadArgs),
    /// Export a dataset to another tool's format (Minari HDF5, LeRobot v3.0).
    #[command(long_about = EXPORT_ABOUT)]
    Export(ExportArgs),
    /// Import another tool's dataset (Minari HDF5, LeRobot v3.0) as a new rollway dataset.
    #[command(long_about = IMPORT_ABOUT)]
    Import(ImportArgs),
}

const EXPORT_ABOUT: &str = "Export a rollway dataset to another tool's format.\n\n\
--to minari writes a Minari 0.5 dataset: OUT is the Minari dataset's own directory, \
$MINARI_DATASETS_PATH/<dataset id> (e.g. ~/.minari/datasets/cartpole/random-v0); OUT/data/main_data.hdf5 \
and OUT/data/metadata.json are written there, and `minari.load_dataset(\"cartpole/random-v0\")` reads them. \
The dataset id defaults to OUT's last two path components (OUT's path below $MINARI_DATASETS_PATH when it is \
inside). Episodes keep rollway's id order as episode_0, episode_1, …; given-up episodes have no data and are \
left out. Observations are T+1 rows per T steps in both formats; images are stored raw.\n\n\
--to lerobot writes a LeRobot v3.0 dataset rooted at OUT: meta/ (info.json, stats.json, tasks.parquet, \
episodes/), data/chunk-000/file-000.parquet (one row per frame, many episodes per file) and one H.264 mp4 per \
image observation under videos/observation.images.<key>/. The lone non-image observation becomes \
observation.state, the action `action`, rewards next.reward, terminations next.done and next.terminated, \
truncations next.truncated. Each episode gets T+1 frames: the last holds the final observation, with a zero \
action, reward 0 and rollway.final_observation = true, so `rollway import lerobot` restores the dataset exactly \
(images within H.264's loss). Timestamps are frame_index / --fps.";

const IMPORT_ABOUT: &str = "Import another tool's dataset as a new rollway dataset.\n\n\
minari PATH: PATH is a Minari dataset directory (the one holding data/, e.g. \
~/.minari/datasets/cartpole/random-v0) or its data/ directory. Spaces come from metadata.json; episodes are \
read in episode_0, episode_1, … order with their seeds. The env id is the env_spec's id (else the dataset \
id), the agent is algorithm_name (else `minari`). Numeric infos are imported; JPEG-encoded images are not \
(save with jpeg_encoding=False). OUTDIR must not exist (or be empty); on any error nothing is left there.\n\n\
lerobot PATH: PATH is a LeRobot v3.0 dataset root (holding meta/info.json). A rollway export comes back exactly \
(spaces, seeds, statuses and final observations from meta/rollway.json). Any other dataset maps its \
observation.* features (1-D numeric, and H.264 videos as uint8 frames) to a Dict observation space and \
action/action.* to the action space; each frame is a step, the last observation repeats, and flags come from \
next.done (or next.terminated/next.truncated). Other features are skipped and listed. v2.x datasets must be \
converted first; AV1 videos (LeRobot's default codec) must be re-encoded to H.264.";

/// Formats `rollway export --to` writes.
#[derive(Clone, Copy, ValueEnum, Debug, PartialEq)]
pub enum ExportFormat {
    /// Minari 0.5 HDF5: `minari.load_dataset` reads it, images raw (lossless).
    Minari,
    /// LeRobot v3.0: Parquet frames, H.264 mp4 videos and meta/ tables; `LeRobotDataset` loads it.
    Lerobot,
}

/// Formats `rollway import` reads.
#[derive(Clone, Copy, ValueEnum, Debug, PartialEq)]
pub enum ImportFormat {
    /// A Minari 0.5 HDF5 dataset, e.g. recorded with `minari.DataCollector`.
    Minari,
    /// A LeRobot v3.0 dataset directory (meta/info.json, data/, H.264 videos/).
    Lerobot,
}

#[derive(Args)]
#[command(
    after_help = "EXAMPLES:\n  rollway export data/cartpole --to minari ~/.minari/datasets/cartpole/random-v0\n  \
rollway export data/mine --to minari out/mine/miner-v0 --dataset-id mine/miner-v0 --force\n  \
rollway export data/mine --to lerobot out/mine-lerobot --fps 20 --task \"mine diamonds\""
)]
pub struct ExportArgs {
    /// The rollway dataset directory.
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub to: ExportFormat,
    /// Output directory (minari: the dataset's own directory, which gets `data/`; lerobot: the dataset root).
    pub out: PathBuf,
    /// Minari dataset id, `(namespace/)name-vN` [default: from OUT's path].
    #[arg(long, value_name = "ID")]
    pub dataset_id: Option<String>,
    /// Replace an existing export at OUT (atomically: the old one stays until the new one is complete).
    #[arg(long)]
    pub force: bool,
    /// Author recorded in the dataset's metadata.
    #[arg(long)]
    pub author: Option<String>,
    /// Description recorded in the dataset's metadata [default: names the source dataset].
    #[arg(long)]
    pub description: Option<String>,
    /// lerobot: frames per second; timestamps are frame_index / FPS. [default: 30]
    #[arg(long, value_name = "FPS")]
    pub fps: Option<u32>,
    /// lerobot: the task of every episode. [default: the env id]
    #[arg(long)]
    pub task: Option<String>,
    /// lerobot: `robot_type` in meta/info.json. [default: null]
    #[arg(long, value_name = "TYPE")]
    pub robot_type: Option<String>,
    /// lerobot: H.264 constant rate factor, 0–51, lower is better quality. [default: 23]
    #[arg(long, value_name = "CRF")]
    pub crf: Option<f32>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
#[command(
    after_help = "EXAMPLES:\n  rollway import minari ~/.minari/datasets/cartpole/random-v0 data/cartpole-minari\n  \
rollway import lerobot out/mine-lerobot data/mine-back\n  rollway inspect data/cartpole-minari"
)]
pub struct ImportArgs {
    /// Input format.
    #[arg(value_enum)]
    pub format: ImportFormat,
    /// The dataset to import (minari: its directory or its data/ directory; lerobot: its root).
    pub path: PathBuf,
    /// The rollway dataset directory to create.
    pub outdir: PathBuf,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
#[command(after_help = "EXAMPLES:\n  rollway load data/cartpole --clip 16 --stride 4 --batch 256 --epochs 1\n  rollway load data/mine --clip 0 --batch 8 --label diamond --json")]
pub struct LoadArgs {
    /// The dataset directory.
    pub dir: PathBuf,
    /// Leave out shards whose index is damaged (with a warning) instead of failing.
    #[arg(long)]
    pub skip_damaged: bool,
    /// Steps per window (0 = whole episodes, padded to the longest).
    #[arg(long, default_value_t = 16)]
    pub clip: usize,
    /// Steps between window starts.
    #[arg(long, default_value_t = 1)]
    pub stride: usize,
    /// Windows per batch.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Epochs to iterate.
    #[arg(long, default_value_t = 1)]
    pub epochs: u64,
    /// Take windows running past an episode end too, padded (with a mask).
    #[arg(long)]
    pub pad: bool,
    /// Keep dataset order instead of shuffling.
    #[arg(long)]
    pub no_shuffle: bool,
    /// Sample windows with replacement.
    #[arg(long)]
    pub replacement: bool,
    /// Shuffle seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Data-parallel rank of this process.
    #[arg(long, default_value_t = 0)]
    pub rank: usize,
    /// Number of data-parallel ranks.
    #[arg(long, default_value_t = 1)]
    pub world_size: usize,
    /// Background threads assembling batches; the consuming thread also assembles
    /// whenever the next batch is not ready [default: CPU cores - 1, at least 1]
    #[arg(long)]
    pub threads: Option<usize>,
    /// Batches prepared ahead.
    #[arg(long, default_value_t = 4)]
    pub prefetch: usize,
    /// Only episodes with this label (repeatable: any of them).
    #[arg(long)]
    pub label: Vec<String>,
    /// Only episodes whose return is at least this.
    #[arg(long, allow_negative_numbers = true)]
    pub min_return: Option<f64>,
    /// Only episodes whose return is at most this.
    #[arg(long, allow_negative_numbers = true)]
    pub max_return: Option<f64>,
    /// Only episodes of at least this many steps.
    #[arg(long)]
    pub min_length: Option<u64>,
    /// Only episodes of at most this many steps.
    #[arg(long)]
    pub max_length: Option<u64>,
    /// Print JSON: {"windows", "windows_per_sec", "mb_per_sec", ...}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct DataArgs {
    /// The dataset directory.
    pub dir: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Leave out shards whose index is damaged (with a warning) instead of failing.
    #[arg(long)]
    pub skip_damaged: bool,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// The dataset directory.
    pub dir: PathBuf,
    /// Print JSON instead of a report.
    #[arg(long)]
    pub json: bool,
    /// Then repair what can be repaired, under the writer lock: publish committed files,
    /// remove crash debris, and move files that do not belong (orphaned shards, files
    /// rollway does not write) to DIR/.quarantine/. Never deletes data.
    #[arg(long)]
    pub repair: bool,
}

#[derive(Args)]
pub struct RelabelArgs {
    /// The dataset directory.
    pub dir: PathBuf,
    /// Filter spec as for `rollway run --filter` (repeatable; none clears all labels).
    #[arg(long, value_name = "SPEC")]
    pub filter: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum, Deserialize, Serialize, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum ModeArg {
    /// Every step waits for all envs (Gymnasium SyncVectorEnv).
    Sync,
    /// Act on whichever envs are ready (EnvPool async).
    Async,
}

#[derive(Args, Default)]
#[command(after_help = "EXAMPLES:\n  rollway run\n  rollway run --env CartPole-v1 --agent random --workers 2 --envs-per-worker 256 --steps 50000000\n  \
rollway run --env PixelMine-v0 --env-opt size=64 --agent miner --episodes 200 --filter key=mine_block,val=diamond.*,num=1,label=diamond\n  \
rollway run job.toml --summary-json summary.json")]
pub struct RunArgs {
    /// TOML config file (keys as the long flags, with `_`; `env_params`/`agent_params` tables; `filters` list).
    pub config: Option<PathBuf>,
    /// Environment id (see `rollway envs`). [default: PixelMine-v0]
    #[arg(long)]
    pub env: Option<String>,
    /// Environment parameters, `key=value[,key=value…]` (repeatable, e.g. `--env-opt size=64`).
    #[arg(long = "env-opt", value_name = "K=V")]
    pub env_opt: Vec<String>,
    /// Agent name (see `rollway agents`). [default: miner]
    #[arg(long)]
    pub agent: Option<String>,
    /// Agent parameters, `key=value[,key=value…]` (repeatable).
    #[arg(long = "agent-opt", value_name = "K=V")]
    pub agent_opt: Vec<String>,
    /// Worker threads. [default: 2]
    #[arg(long)]
    pub workers: Option<usize>,
    /// Envs per worker. [default: 8]
    #[arg(long)]
    pub envs_per_worker: Option<usize>,
    /// Stop after this many episodes. [default: 64]
    #[arg(long, conflicts_with = "steps")]
    pub episodes: Option<u64>,
    /// Stop once the first episodes add up to this many steps.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Cut episodes at this many steps (recorded as truncated).
    #[arg(long)]
    pub max_steps: Option<u64>,
    /// Run seed: episode i always gets the same env seed and agent stream. [default: 0]
    #[arg(long)]
    pub seed: Option<u64>,
    /// Batching mode. [default: sync]
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Agent batch size bounds `MIN:MAX` in envs (`MAX` 0 = all envs). [default: 1:0]
    #[arg(long, value_name = "MIN:MAX")]
    pub batch: Option<String>,
    /// Async: longest wait for a batch to fill, e.g. `500us`, `2ms`. [default: 0]
    #[arg(long, value_name = "DURATION")]
    pub max_wait: Option<String>,
    /// Env rebuilds allowed per worker (agent rebuilds in total). [default: 3]
    #[arg(long)]
    pub max_restarts: Option<u32>,
    /// Attempts per episode before it is given up. [default: 3]
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Label filter, e.g. `key=mine_block,val=diamond.*,num=1,label=diamond`,
    /// `kind=return,min=100,label=good`, `kind=length,max=50,label=short` (repeatable).
    /// [default with the default env: the diamond filter]
    #[arg(long, value_name = "SPEC")]
    pub filter: Vec<String>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    /// Write one JSON line per episode to this file.
    #[arg(long, value_name = "FILE")]
    pub episodes_json: Option<PathBuf>,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Record the episodes into this dataset directory (created, or appended to when
    /// it holds the same env). The default job records into ./rollway-data/.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue a killed recording run in DIR to its target (its config comes from the dataset).
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Do not record (the default job otherwise records into ./rollway-data/).
    #[arg(long, conflicts_with_all = ["out", "resume"])]
    pub no_record: bool,
    /// Also record every step's info dict.
    #[arg(long)]
    pub record_infos: bool,
    /// Commit a shard once this many steps are buffered. [default: 262144]
    #[arg(long, value_name = "N")]
    pub max_buffer_steps: Option<usize>,
    /// Commit a shard once this many episodes are buffered.
    #[arg(long, value_name = "N")]
    pub max_buffer_episodes: Option<usize>,
    /// How image observations are stored: lz4 (lossless, fastest), raw, jpeg, or
    /// h264 (mp4 per shard, smallest; PyAV/FFmpeg open it); per image key with
    /// `KEY=MEDIA` items, e.g. `lz4,observations/rgb=h264`. [default: lz4]
    #[arg(long, visible_alias = "image-media", value_name = "MEDIA")]
    pub frame_media: Option<String>,
    /// h264: constant rate factor, 0–51, lower is better quality. [default: 23]
    #[arg(long, value_name = "CRF")]
    pub crf: Option<f32>,
    /// h264: x264 preset, ultrafast … veryslow. [default: fast]
    #[arg(long, value_name = "PRESET")]
    pub preset: Option<String>,
    /// h264: at most this many frames between keyframes; a loader decodes at most
    /// this many extra frames to reach any window. [default: 128]
    #[arg(long, value_name = "N")]
    pub keyint: Option<u32>,
    /// h264: frames per second in the mp4 (timestamps = frame / fps). [default: 30]
    #[arg(long, value_name = "FPS")]
    pub fps: Option<u32>,
    /// jpeg: quality, 1–100. [default: 95]
    #[arg(long, value_name = "Q")]
    pub jpeg_quality: Option<u8>,
    /// h264: extra x264 options, `key=value:key=value` (as ffmpeg's -x264-params).
    #[arg(long, value_name = "OPTS")]
    pub x264_params: Option<String>,
}

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
