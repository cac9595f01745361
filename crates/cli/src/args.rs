//! Command-line flags and subcommands; `job` merges `run`'s flags with its
//! config file.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};

#[derive(Parser)]
#[command(name = "rollway", version, about = "Generate, filter, record and load RL episodes, fast.", long_about = "rollway runs environments and agents in parallel to generate episodes, \
labels them with filters, records them crash-safely (Parquet + lz4/JPEG/H.264 frames), loads them back as training batches, \
and exports/imports Minari and LeRobot datasets.\n\nStart with `rollway run` (the pixel mining world, a scripted miner and a diamond filter), \
then try `rollway run --env CartPole-v1 --agent random --steps 10000000`. `rollway envs` and `rollway agents` list what is built in.",
after_help = EXIT_STATUS)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

const EXIT_STATUS: &str = "EXIT STATUS:\n  \
0  success\n  \
1  the work failed: a run gave up or left untried episodes, or its agent, a worker or the disk failed; \
`verify` found damage\n  \
2  usage or input error: a bad flag, config key or value, an unknown env or agent, an unusable path, \
a directory that is not a dataset; nothing was run";

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
    /// Write one self-contained HTML page about a dataset: config, counts, labels, plots, throughput, faults, frames.
    Report(ReportArgs),
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
(or with --data-format arrow|parquet, a folder per episode) and OUT/data/metadata.json are written there, and `minari.load_dataset(\"cartpole/random-v0\")` reads them. \
The dataset id defaults to OUT's last two path components (OUT's path below $MINARI_DATASETS_PATH when it is \
inside). Episodes keep rollway's id order as episode_0, episode_1, …; given-up episodes have no data and are \
left out. Observations are T+1 rows per T steps in both formats; images are stored raw.\n\n\
--to lerobot writes a LeRobot v3.0 dataset rooted at OUT: meta/ (info.json, stats.json, tasks.parquet, \
episodes/), data/chunk-000/file-000.parquet (one row per frame, many episodes per file) and one mp4 (AV1 by default, as LeRobot \
writes; --video-codec h264) per image observation under videos/observation.images.<key>/. The lone non-image observation becomes \
observation.state, the action `action`, rewards next.reward, terminations next.done and next.terminated, \
truncations next.truncated. Each episode gets T+1 frames: the last holds the final observation, with a zero \
action, reward 0 and rollway.final_observation = true, so `rollway import lerobot` restores the dataset exactly \
(images within the video codec's loss). Timestamps are frame_index / --fps.";

const IMPORT_ABOUT: &str = "Import another tool's dataset as a new rollway dataset.\n\n\
minari PATH: PATH is a Minari dataset directory (the one holding data/, e.g. \
~/.minari/datasets/cartpole/random-v0) or its data/ directory, in any of Minari's data formats (hdf5, arrow, \
parquet; metadata.json says which). Spaces come from metadata.json, Text spaces included; episodes are read \
in order with their seeds. The env id is the env_spec's id (else the dataset id), the agent is \
algorithm_name (else `minari`). Infos are imported (numbers, nested dicts; strings from arrow and parquet); \
images Minari stored as JPEG (its default) are decoded. OUTDIR must not exist (or be empty); on any error \
nothing is left there.\n\n\
lerobot PATH: PATH is a LeRobot v3.0 or v2.x dataset root (holding meta/info.json). A rollway export comes \
back exactly (spaces, seeds, statuses and final observations from meta/rollway.json). Any other dataset maps \
its observation.* features (1-D numeric, and videos, AV1, H.264 or HEVC, as uint8 frames) to a Dict \
observation space and action/action.* to the action space; each frame is a step, the last observation \
repeats, and flags come from next.done (or next.terminated/next.truncated). Other features are skipped and \
listed.";

/// Formats `rollway export --to` writes.
#[derive(Clone, Copy, ValueEnum, Debug, PartialEq)]
pub enum ExportFormat {
    /// Minari 0.5 (hdf5, or arrow/parquet with --data-format): `minari.load_dataset` reads it, images raw (lossless).
    Minari,
    /// LeRobot v3.0: Parquet frames, mp4 videos (AV1 or H.264) and meta/ tables; `LeRobotDataset` loads it.
    Lerobot,
}

/// Formats `rollway import` reads.
#[derive(Clone, Copy, ValueEnum, Debug, PartialEq)]
pub enum ImportFormat {
    /// A Minari 0.5 dataset (hdf5, arrow or parquet), e.g. recorded with `minari.DataCollector`.
    Minari,
    /// A LeRobot v3.0 or v2.x dataset directory (meta/info.json, data/, videos/).
    Lerobot,
}

#[derive(Args)]
#[command(after_help = "EXAMPLES:\n  rollway export data/cartpole --to minari ~/.minari/datasets/cartpole/random-v0\n  \
rollway export data/mine --to minari out/mine/miner-v0 --dataset-id mine/miner-v0 --force\n  \
rollway export data/mine --to lerobot out/mine-lerobot --fps 20 --task \"mine diamonds\"")]
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
    /// minari: the storage format: hdf5 (Minari's default), or a folder per episode
    /// of arrow or parquet. [default: hdf5]
    #[arg(long, value_name = "FORMAT", value_parser = str::parse::<rollway_interop::minari::DataFormat>)]
    pub data_format: Option<rollway_interop::minari::DataFormat>,
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
    /// lerobot: the video codec, av1 (LeRobot's default: smallest files) or h264
    /// (encodes several times faster). [default: av1]
    #[arg(long, value_name = "CODEC", value_parser = rollway_interop::lerobot::export_codec)]
    pub video_codec: Option<rollway_interop::lerobot::Codec>,
    /// lerobot: constant rate factor, lower is better quality: 0–63 for av1, 0–51 for
    /// h264. [default: 30 for av1 (LeRobot's), 23 for h264]
    #[arg(long, value_name = "CRF")]
    pub crf: Option<f32>,
    /// lerobot: at most this many frames between keyframes. [default: 2 for av1
    /// (LeRobot's), 32 for h264]
    #[arg(long, value_name = "N")]
    pub keyint: Option<u32>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
#[command(after_help = "EXAMPLES:\n  rollway import minari ~/.minari/datasets/cartpole/random-v0 data/cartpole-minari\n  \
rollway import lerobot out/mine-lerobot data/mine-back\n  rollway inspect data/cartpole-minari")]
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
#[command(
    after_help = "EXAMPLES:\n  rollway load data/cartpole --clip 16 --stride 4 --batch 256 --epochs 1\n  rollway load data/mine --clip 0 --batch 8 --label diamond --json\n  rollway load replay --clip 2 --batch 128 --follow --last-steps 50000 --round-windows 2048 --epochs 100"
)]
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
    /// whenever the next batch is not ready; at most 1024 [default: CPU cores - 1, at least 1]
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(..=1024))]
    pub threads: Option<usize>,
    /// Batches prepared ahead (at most 1024).
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(..=1024))]
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
    #[command(flatten)]
    pub replay: crate::data::ReplayArgs,
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
#[command(after_help = "EXAMPLES:\n  rollway report rollway-data/PixelMine-v0-000\n  rollway report data/cartpole -o cartpole.html")]
pub struct ReportArgs {
    /// The dataset directory (read only: nothing in it changes).
    pub dir: PathBuf,
    /// Where to write the page. [default: DIR.report.html, beside the dataset]
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
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
    /// Every step waits for all envs (Gymnasium SyncVectorEnv); the central thread steps worker 0's envs
    /// between agent calls, so N workers take N threads.
    Sync,
    /// Act on whichever envs are ready (EnvPool async).
    Async,
}

#[derive(Args, Default)]
#[command(
    after_help = "EXAMPLES:\n  rollway run\n  rollway run --env CartPole-v1 --agent random --workers 2 --envs-per-worker 256 --steps 50000000\n  \
rollway run --env PixelMine-v0 --env-opt size=64 --agent miner --episodes 200 --filter key=mine_block,val=diamond.*,num=1,label=diamond\n  \
rollway run job.toml --summary-json summary.json"
)]
pub struct RunArgs {
    /// TOML config file (keys as the long flags, with `_`; `env_params`/`agent_params` tables; `filters` list).
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub opts: RunOptions,
    /// No progress output.
    #[arg(long, short)]
    pub quiet: bool,
    /// Record the episodes into this new dataset directory (a DIR that already holds
    /// a dataset needs --append). The default job records into ./rollway-data/.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --out DIR holding a dataset (of the same env): record a new run, with
    /// its own config and seed, after the runs already there.
    #[arg(long, requires = "out")]
    pub append: bool,
    /// Continue the last run recorded in DIR (killed, or short of workers) to its
    /// target, with the config stored in the dataset: the run's own command with
    /// --resume DIR added works. Output flags (--summary-json, --episodes-json, -q) and
    /// a larger target in the same unit (--episodes, --steps) may change; any other
    /// option given must equal the stored value (each one that differs is named).
    #[arg(long, value_name = "DIR", conflicts_with = "append")]
    pub resume: Option<PathBuf>,
    /// Do not record (the default job otherwise records into ./rollway-data/).
    #[arg(long, conflicts_with_all = ["out", "resume"])]
    pub no_record: bool,
    /// When the run ends, write the dataset's HTML report (as `rollway report`) beside it.
    #[arg(long, conflicts_with = "no_record")]
    pub report: bool,
    /// Where the run's workers run: `local` (this process) or `ray` (actors of a Ray
    /// cluster, each writing its share into the same --out DIR on storage every node
    /// sees; needs `ray` and the rollway package in $ROLLWAY_PYTHON). Same config keys,
    /// same episodes. A Ray run is resumed with `--resume DIR --backend ray`.
    #[arg(long, value_enum, default_value_t = Backend::Local)]
    pub backend: Backend,
    /// With --backend ray: the cluster to join (`auto`: the one `ray start` made on this
    /// machine; `HOST:PORT`; left out: a new local cluster for this run).
    #[arg(long, value_name = "ADDRESS")]
    pub ray_address: Option<String>,
    /// Ray actors (with --backend ray), each running --workers workers. [default: 2]
    #[arg(long, value_name = "N")]
    pub ray_actors: Option<usize>,
    /// (Distributed runs, as their driver does it) create the dataset and record the
    /// run's config, then stop: its episodes are run by members (--join).
    #[arg(long, hide = true, requires = "out", conflicts_with_all = ["resume", "no_record"])]
    pub prepare: bool,
    /// (Distributed runs) Run part of a prepared run as one of many writers of DIR;
    /// --part says which.
    #[arg(long, hide = true, value_name = "DIR", requires = "part", conflicts_with_all = ["out", "resume", "config", "prepare"])]
    pub join: Option<PathBuf>,
    /// (Distributed runs) `RUN:START:END:ID`: episodes START..END of run RUN, written as ID.
    #[arg(long, hide = true, value_name = "RUN:START:END:ID", requires = "join")]
    pub part: Option<Part>,
}

/// Where a run's workers run.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// Threads (and env processes) of this process.
    #[default]
    Local,
    /// Actors of a Ray cluster (`rollway.ray`).
    Ray,
}

/// Which episodes of which prepared run a member of a distributed run writes (`--part`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The run, by number in the dataset.
    pub run: u32,
    /// First run index.
    pub start: u64,
    /// One past the last run index.
    pub end: u64,
    /// The writer's id, unique among the run's writers (a file name).
    pub id: String,
}

impl std::str::FromStr for Part {
    type Err = String;
    fn from_str(s: &str) -> Result<Part, String> {
        let bad = || format!("--part {s}: expected RUN:START:END:ID, with START <= END");
        let mut it = s.splitn(4, ':');
        let mut num = || it.next().and_then(|x| x.parse::<u64>().ok());
        let (run, start, end) = (num().ok_or_else(bad)?, num().ok_or_else(bad)?, num().ok_or_else(bad)?);
        let id = it.next().filter(|i| !i.is_empty()).ok_or_else(bad)?.to_string();
        let run = u32::try_from(run).map_err(|_| bad())?;
        if start > end {
            return Err(bad());
        }
        Ok(Part { run, start, end, id })
    }
}

/// The settings of a run, declared once: each field is a `--flag` of `rollway
/// run`, a key of its TOML config file (the flag's name with `_`) and a keyword
/// of `rollway.run`, with one help text (`--env-opt`/`--agent-opt` are the flag
/// forms of the file's `env_params`/`agent_params` tables). Unset means "the file's, else the
/// default"; `crate::job` merges flags over the file by these names and stores
/// the resolved set in datasets for `--resume`. Unknown keys are errors, so
/// typos do not pass silently.
#[derive(Args, Deserialize, Serialize, Default, Clone)]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// Environment: a built-in id (see `rollway envs`), `gym:ID` (any Gymnasium id,
    /// `--env-opt` as `gymnasium.make` keyword arguments) or `module:callable` (a Python
    /// function making a Gymnasium env); Python envs run in worker processes using
    /// `$ROLLWAY_PYTHON` (default `python3`), which needs the rollway package. [default: PixelMine-v0]
    #[arg(long)]
    pub env: Option<String>,
    /// The env's parameters (config file: a table; flags: `--env-opt`).
    #[arg(skip)]
    pub env_params: Option<toml::Table>,
    /// Environment parameters, `key=value[,key=value…]` (repeatable, e.g. `--env-opt size=64`).
    #[arg(long = "env-opt", value_name = "K=V")]
    #[serde(skip)]
    pub env_opt: Vec<String>,
    /// Agent name (see `rollway agents`). [default: miner]
    #[arg(long)]
    pub agent: Option<String>,
    /// The agent's parameters (config file: a table; flags: `--agent-opt`).
    #[arg(skip)]
    pub agent_params: Option<toml::Table>,
    /// Agent parameters, `key=value[,key=value…]` (repeatable).
    #[arg(long = "agent-opt", value_name = "K=V")]
    #[serde(skip)]
    pub agent_opt: Vec<String>,
    /// Worker threads, at most 1024. [default: one per core; the default job: 2]
    #[arg(long)]
    pub workers: Option<usize>,
    /// Envs per worker, at most 65536 (and 2^20 in all). [default: measured at start, a second or so,
    /// reported as the summary's `calibration` (8 when the target is too small to choose); the default job: 8]
    #[arg(long)]
    pub envs_per_worker: Option<usize>,
    /// Stop after this many episodes. [default: 64; the default job (no --env, --agent or --config): 16]
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
    /// Batching mode. [default: async, or sync when calibrating measures it 5% faster (envs per worker
    /// not given, envs in rollway's threads); the default job: sync]
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Agent batch size bounds `MIN:MAX` in envs (`MAX` 0 = all envs). [default: 1:0]
    #[arg(long, value_name = "MIN:MAX")]
    pub batch: Option<String>,
    /// Async: longest wait for a batch to fill, e.g. `500us`, `2ms`; at most 1 hour. [default: 0]
    #[arg(long, value_name = "DURATION")]
    pub max_wait: Option<String>,
    /// Env rebuilds a worker may make in a row (agent rebuilds: the run); the count
    /// starts again when an episode finishes, so a flaky env does not use it up over
    /// a long run, while a broken one is retired. [default: 3]
    #[arg(long)]
    pub max_restarts: Option<u32>,
    /// Attempts per episode before it is given up. [default: 3]
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// Check actions against the action space, and observations and rewards (NaN,
    /// outside the space): a wrong value fails its episode's attempt with a message
    /// naming it (see the README's "Semantics worth knowing"); `false` skips the
    /// checks. [default: true]
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub check: Option<bool>,
    /// Python envs: a round of env steps slower than this (e.g. `30s`) kills the env
    /// process and fails its episodes' attempts. [default: none]
    #[arg(long, value_name = "DURATION")]
    pub step_timeout: Option<String>,
    /// Label filter, e.g. `key=mine_block,val=diamond.*,num=1,label=diamond`,
    /// `kind=return,min=100,label=good`, `kind=length,max=50,label=short` (repeatable;
    /// config file: the `filters` list). [default with the default env: the diamond filter]
    #[arg(long = "filter", value_name = "SPEC")]
    pub filters: Option<Vec<String>>,
    /// Write the summary as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub summary_json: Option<PathBuf>,
    /// Write one JSON line per episode to this file.
    #[arg(long, value_name = "FILE")]
    pub episodes_json: Option<PathBuf>,
    /// Also record every step's info dict.
    #[arg(long, num_args = 0, default_missing_value = "true")]
    pub record_infos: Option<bool>,
    /// Commit a shard once this many steps are buffered. [default: 262144]
    #[arg(long, value_name = "N")]
    pub max_buffer_steps: Option<usize>,
    /// Commit a shard once this many episodes are buffered.
    #[arg(long, value_name = "N")]
    pub max_buffer_episodes: Option<usize>,
    /// How image observations are stored: lz4 (lossless, fastest), raw, jpeg, or
    /// h264 (mp4 per shard, smallest; PyAV/FFmpeg open it); per image key with
    /// `KEY=MEDIA` items, e.g. `lz4,observations/rgb=h264`. [default: lz4; the default job: h264]
    #[arg(long, visible_alias = "image-media", value_name = "MEDIA")]
    #[serde(alias = "image_media")]
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
    /// h264: frames per second in the mp4 (timestamps = frame / fps), 1–1000. [default: 30]
    #[arg(long, value_name = "FPS")]
    pub fps: Option<u32>,
    /// jpeg: quality, 1–100. [default: 95]
    #[arg(long, value_name = "Q")]
    pub jpeg_quality: Option<u8>,
    /// h264: extra x264 options, `key=value:key=value` (as ffmpeg's -x264-params).
    #[arg(long, value_name = "OPTS")]
    pub x264_params: Option<String>,
}

impl RunOptions {
    /// The options set here, by key.
    pub fn given(&self) -> Vec<String> {
        let v = serde_json::to_value(self).expect("run options serialize");
        v.as_object().into_iter().flatten().filter(|(_, v)| !v.is_null()).map(|(k, _)| k.clone()).collect()
    }

    /// `self` over `base`: each option set here replaces `base`'s. A target
    /// (`episodes` or `steps`) replaces `base`'s target of either kind.
    pub fn over(&self, base: RunOptions) -> RunOptions {
        let mut base = base;
        if self.episodes.is_some() || self.steps.is_some() {
            (base.episodes, base.steps) = (None, None);
        }
        let mut merged = serde_json::to_value(base).expect("run options serialize");
        let top = serde_json::to_value(self).expect("run options serialize");
        for (k, v) in top.as_object().into_iter().flatten().filter(|(_, v)| !v.is_null()) {
            merged[k] = v.clone();
        }
        serde_json::from_value(merged).expect("merged run options deserialize")
    }

    /// How a message names option `key` on the command line (`filters` is `--filter`).
    pub fn flag(key: &str) -> Option<String> {
        let cmd = <Self as Args>::augment_args(clap::Command::new("run"));
        let long = cmd.get_arguments().find(|a| a.get_id() == key)?.get_long()?.to_string();
        Some(format!("--{long}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Declared once: every config key is the flag of the same name (with `-`),
    /// but for the file's tables and the `filters` list.
    #[test]
    fn every_config_key_is_a_flag_of_the_same_name() {
        let all = RunOptions {
            env_params: Some(toml::Table::new()),
            agent_params: Some(toml::Table::new()),
            ..serde_json::from_str(&all_keys_json()).unwrap()
        };
        let keys = all.given();
        assert!(keys.len() >= 28, "{keys:?}");
        for key in keys {
            let want = match key.as_str() {
                "env_params" | "agent_params" => None,
                "filters" => Some("--filter".to_string()),
                k => Some(format!("--{}", k.replace('_', "-"))),
            };
            assert_eq!(RunOptions::flag(&key), want, "{key}");
        }
    }

    /// A JSON object setting every key `RunOptions` serializes, each to a value of its type.
    fn all_keys_json() -> String {
        let v = serde_json::to_value(RunOptions::default()).unwrap();
        let mut set = serde_json::Map::new();
        for k in v.as_object().unwrap().keys() {
            let value = match k.as_str() {
                "env_params" | "agent_params" => continue,
                "filters" => serde_json::json!(["kind=length,max=9,label=short"]),
                "mode" => serde_json::json!("sync"),
                "record_infos" | "check" => serde_json::json!(true),
                "crf" => serde_json::json!(20.5),
                k if k.ends_with("json") => serde_json::json!("/tmp/x.json"),
                "env" | "agent" | "batch" | "max_wait" | "step_timeout" | "frame_media" | "preset" | "x264_params" => {
                    serde_json::json!("x")
                }
                _ => serde_json::json!(3),
            };
            set.insert(k.clone(), value);
        }
        serde_json::Value::Object(set).to_string()
    }

    #[test]
    fn flags_override_the_file_and_a_target_flag_replaces_either_target() {
        let file = RunOptions { workers: Some(4), seed: Some(7), episodes: Some(10), ..Default::default() };
        let flags = RunOptions { workers: Some(2), steps: Some(1000), ..Default::default() };
        let o = flags.over(file.clone());
        assert_eq!((o.workers, o.seed, o.episodes, o.steps), (Some(2), Some(7), None, Some(1000)));
        assert_eq!(flags.given(), ["steps", "workers"]);
        let o = RunOptions::default().over(file);
        assert_eq!((o.workers, o.episodes), (Some(4), Some(10)));
    }

    #[test]
    fn record_infos_is_a_plain_switch() {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            o: RunOptions,
        }
        assert_eq!(T::parse_from(["t", "--record-infos"]).o.record_infos, Some(true));
        assert_eq!(T::parse_from(["t"]).o.record_infos, None);
        assert_eq!(T::parse_from(["t", "--filter", "a", "--filter", "b"]).o.filters, Some(vec!["a".into(), "b".into()]));
    }
}
