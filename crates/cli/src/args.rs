//! Command-line flags and subcommands; `job` merges `run`'s flags with its
//! config file.
// clap turns a doc comment into --help text: a derive struct's would be printed as its
// command's about, over the variant's. The variants and flags carry the docs.
#![allow(missing_docs)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rollway_engine::{Part, RunOptions, RunRequest};

#[derive(Parser)]
#[command(name = "rollway", version, about = "Generate, filter, record and load RL episodes, fast.", long_about = "rollway runs environments and agents in parallel to generate episodes, \
labels them with filters, records them crash-safely (Parquet + lz4/JPEG/H.264 frames), loads them back as training batches, \
and exports/imports Minari and LeRobot datasets.\n\nStart with `rollway run` (the pixel mining world, a scripted miner and a diamond filter), \
then try `rollway run --env CartPole-v1 --agent random --steps 10000000`. `rollway envs` and `rollway agents` list what is built in.\n\n\
Documentation: the docs site, built from a checkout's docs/ by `make docs` (getting started, concepts, a guide per task, \
every setting and flag).",
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
a directory that is not a dataset; nothing was run\n\
What each failure costs and what survives it: the docs' failure model (docs/concepts/failures.md).";

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
    /// The rollway dataset directory (or an `s3://bucket/prefix` URL: read from a local replica it is pulled into).
    #[arg(value_parser = readable_dataset)]
    pub dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    pub to: ExportFormat,
    /// Output directory (minari: the dataset's own directory, which gets `data/`; lerobot: the dataset root).
    #[arg(value_parser = dataset_dir)]
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
    /// Quiet: no progress bar and no summary; errors and warnings still go to stderr.
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
    #[arg(value_parser = dataset_dir)]
    pub path: PathBuf,
    /// The rollway dataset to create: a new directory, or an `s3://bucket/prefix` URL.
    #[arg(value_parser = readable_dataset)]
    pub outdir: PathBuf,
    /// Quiet: no progress bar and no summary; errors and warnings still go to stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args)]
#[command(
    after_help = "EXAMPLES:\n  rollway load data/cartpole --clip 16 --stride 4 --batch 256 --epochs 1\n  rollway load data/mine --clip 0 --batch 8 --label diamond --json\n  rollway load replay --clip 2 --batch 128 --follow --last-steps 50000 --round-windows 2048 --epochs 100"
)]
pub struct LoadArgs {
    /// The dataset directory (or an `s3://bucket/prefix` URL: read from a local replica it is pulled into).
    #[arg(value_parser = readable_dataset)]
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
    /// Also assemble each step's next observation (an episode's last step: its final
    /// observation), as a TD learner's batches need; costs the observations twice.
    #[arg(long)]
    pub next_observations: bool,
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
    pub replay: ReplayArgs,
    /// Print JSON: {"windows", "windows_per_sec", "mb_per_sec", ...}.
    #[arg(long)]
    pub json: bool,
}

/// `rollway load`'s replay-buffer flags: a capacity and a staleness bound (any
/// dataset), and follow mode (a dataset a rollout keeps filling).
#[derive(Args)]
pub struct ReplayArgs {
    /// Only the newest this many episodes (a replay buffer's capacity).
    #[arg(long)]
    pub last_episodes: Option<usize>,
    /// Only the newest episodes holding this many steps.
    #[arg(long)]
    pub last_steps: Option<u64>,
    /// Only episodes every action of which a policy of at least this version chose
    /// (the `policy_version` column of a training rollout's dataset).
    #[arg(long)]
    pub min_policy_version: Option<u64>,
    /// Follow a dataset that is still being written (`rollway.Rollout(out=...)`):
    /// `--epochs` counts rounds, each reading the commits again and shuffling what the
    /// selection keeps; waits while no window is eligible.
    #[arg(long)]
    pub follow: bool,
    /// Following: rounds a window may come in.
    #[arg(long, requires = "follow")]
    pub max_reuse: Option<u32>,
    /// Following: the most windows in a round, drawn uniformly each round from every
    /// eligible window, so that new commits are sampled sooner.
    #[arg(long, requires = "follow")]
    pub round_windows: Option<usize>,
}

#[derive(Args)]
pub struct DataArgs {
    /// The dataset directory (or an `s3://bucket/prefix` URL: read from a local replica it is pulled into).
    #[arg(value_parser = readable_dataset)]
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
    /// The dataset directory (or an `s3://bucket/prefix` URL: read from a local replica it is pulled into).
    #[arg(value_parser = readable_dataset)]
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
    /// The dataset directory, read only: nothing in it changes (or an `s3://bucket/prefix` URL, pulled into a local replica).
    #[arg(value_parser = readable_dataset)]
    pub dir: PathBuf,
    /// Where to write the page. [default: DIR.report.html, beside the dataset]
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Args)]
pub struct RelabelArgs {
    /// The dataset directory.
    #[arg(value_parser = dataset_dir)]
    pub dir: PathBuf,
    /// Filter spec as for `rollway run --filter` (repeatable; none clears all labels).
    #[arg(long, value_name = "SPEC")]
    pub filter: Vec<String>,
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
    /// Quiet: no progress and no summary (--summary-json still writes it); errors and
    /// warnings still go to stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Record the episodes into this new dataset directory (a DIR that already holds
    /// a dataset needs --append). The default job records into ./rollway-data/. DIR may
    /// be an `s3://bucket/prefix` URL: shards are pushed as they commit (credentials from
    /// the AWS_* variables; AWS_ENDPOINT_URL names an S3-compatible store).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// With --out DIR holding a dataset (of the same env): record a new run, with
    /// its own config and seed, after the runs already there.
    #[arg(long, requires = "out")]
    pub append: bool,
    /// Continue the last run recorded in DIR (a directory or an `s3://` URL; killed, or
    /// short of workers) to its target, with the config stored in the dataset: the run's own command with
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

impl RunArgs {
    /// The run these flags ask for.
    pub fn request(&self) -> RunRequest {
        RunRequest {
            config: self.config.clone(),
            file: None,
            settings: self.opts.clone(),
            out: self.out.clone(),
            append: self.append,
            resume: self.resume.clone(),
            no_record: self.no_record,
            report: self.report,
            quiet: self.quiet,
            prepare: self.prepare,
            join: self.join.clone().zip(self.part.clone()),
            python: false,
        }
    }
}

/// A dataset argument: a path, or a URL of a scheme this build reads (`file://`);
/// any other `scheme://` is a usage error naming the supported ones, never a local path.
fn dataset_dir(s: &str) -> Result<PathBuf, String> {
    rollway_engine::target::local(std::path::Path::new(s)).map_err(|e| e.to_string())
}

/// A dataset argument read from (or, for `import`, created): as [`dataset_dir`], or
/// an object store URL (`s3://…`), which the command reads through a local replica
/// (or writes through a work directory pushed to the store).
fn readable_dataset(s: &str) -> Result<PathBuf, String> {
    if rollway_engine::target::on_store(std::path::Path::new(s)) {
        return Ok(PathBuf::from(s));
    }
    dataset_dir(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How clap names option `key` on the command line.
    fn clap_flag(key: &str) -> Option<String> {
        let cmd = <RunOptions as Args>::augment_args(clap::Command::new("run"));
        let long = cmd.get_arguments().find(|a| a.get_id() == key)?.get_long()?.to_string();
        Some(format!("--{long}"))
    }

    /// Declared once: every config key is the flag of the same name (with `-`),
    /// but for the file's tables and the `filters` list; and messages name flags
    /// as clap does.
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
            assert_eq!(clap_flag(&key), want, "{key}");
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
