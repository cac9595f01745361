//! A run's settings, declared once: the fields of [`RunOptions`] are `rollway run`'s
//! flags, the TOML config file's keys and `rollway.run`'s keywords, with one help
//! text. Typed where a value has a type (durations, the mode); the CLI derives its
//! flags from these declarations (feature `clap`), everything else reads them with
//! serde.

use std::path::PathBuf;
use std::time::Duration;

#[cfg(feature = "clap")]
use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};

use crate::error::{Error, InputContext, Result};

#[derive(Clone, Copy, Deserialize, Serialize, Debug, PartialEq)]
#[cfg_attr(feature = "clap", derive(ValueEnum))]
#[serde(rename_all = "lowercase")]
/// How a run's workers and its agent take turns (`--mode`).
pub enum ModeArg {
    /// Every step waits for all envs (Gymnasium SyncVectorEnv); the central thread steps worker 0's envs
    /// between agent calls, so N workers take N threads.
    Sync,
    /// Act on whichever envs are ready (EnvPool async).
    Async,
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
#[derive(Deserialize, Serialize, Default, Clone)]
#[cfg_attr(feature = "clap", derive(Args))]
#[serde(deny_unknown_fields)]
pub struct RunOptions {
    /// Environment: a built-in id (see `rollway envs`), `gym:ID` (any Gymnasium id,
    /// `--env-opt` as `gymnasium.make` keyword arguments), `pz:MODULE` (a PettingZoo env,
    /// `MODULE.parallel_env(...)`: one env whose rows are its agents), a batched simulator stepping
    /// a block of envs a call (`vec:ID`: `gymnasium.make_vec`; `gymnax:NAME`, `craftax:NAME`: JAX
    /// envs; `vmas:SCENARIO`: VMAS's torch envs, agents as rows) or `module:callable` (a Python
    /// function making a Gymnasium env or a JAX env of the gymnax interface, or taking `num_envs`
    /// and making a batched one); Python envs
    /// run in worker processes using
    /// `$ROLLWAY_PYTHON` (default `python3`), which needs the rollway package. [default: PixelMine-v0]
    #[cfg_attr(feature = "clap", arg(long))]
    pub env: Option<String>,
    /// The env's parameters (config file: a table; flags: `--env-opt`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub env_params: Option<toml::Table>,
    /// Environment parameters, `key=value[,key=value…]` (repeatable, e.g. `--env-opt size=64`).
    #[cfg_attr(feature = "clap", arg(long = "env-opt", value_name = "K=V"))]
    #[serde(skip)]
    pub env_opt: Vec<String>,
    /// Agent name (see `rollway agents`), or `onnx:PATH` for a network exported to ONNX. [default: miner]
    #[cfg_attr(feature = "clap", arg(long))]
    pub agent: Option<String>,
    /// The agent's parameters (config file: a table; flags: `--agent-opt`).
    #[cfg_attr(feature = "clap", arg(skip))]
    pub agent_params: Option<toml::Table>,
    /// Agent parameters, `key=value[,key=value…]` (repeatable).
    #[cfg_attr(feature = "clap", arg(long = "agent-opt", value_name = "K=V"))]
    #[serde(skip)]
    pub agent_opt: Vec<String>,
    /// Worker threads, at most 1024. [default: one per core; the default job: 2]
    #[cfg_attr(feature = "clap", arg(long))]
    pub workers: Option<usize>,
    /// Envs per worker, at most 65536 (and 2^20 in all). [default: measured at start, a second or so,
    /// reported as the summary's `calibration` (8 when the target is too small to choose); the default job: 8]
    #[cfg_attr(feature = "clap", arg(long))]
    pub envs_per_worker: Option<usize>,
    /// Stop after this many episodes. [default: 64; the default job (no --env, --agent or --config): 16]
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "steps"))]
    pub episodes: Option<u64>,
    /// Stop once the first episodes add up to this many steps.
    #[cfg_attr(feature = "clap", arg(long))]
    pub steps: Option<u64>,
    /// Cut episodes at this many steps (recorded as truncated, as Gymnasium's TimeLimit
    /// does; a rollout's `max_episode_steps`). Its old name `max_steps` (`--max-steps`) is
    /// taken with a warning until 0.2 (see [`RENAMED`]).
    #[cfg_attr(feature = "clap", arg(long, alias = "max-steps"))]
    #[serde(alias = "max_steps")]
    pub max_episode_steps: Option<u64>,
    /// Run seed: episode i always gets the same env seed and agent stream. [default: 0]
    #[cfg_attr(feature = "clap", arg(long))]
    pub seed: Option<u64>,
    /// Batching mode. [default: async, or sync when calibrating measures it 5% faster (envs per worker
    /// not given, envs in rollway's threads); the default job: sync]
    #[cfg_attr(feature = "clap", arg(long, value_enum))]
    pub mode: Option<ModeArg>,
    /// Agent batch size bounds `MIN:MAX` in envs (`MAX` 0 = all envs). [default: 1:0]
    #[cfg_attr(feature = "clap", arg(long, value_name = "MIN:MAX"))]
    pub batch: Option<String>,
    /// Async: longest wait for a batch to fill, e.g. `500us`, `2ms`; at most 1 hour. [default: 0]
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub max_wait: Option<DurationSetting>,
    /// Env rebuilds a worker may make in a row (agent rebuilds: the run); the count
    /// starts again when an episode finishes, so a flaky env does not use it up over
    /// a long run, while a broken one is retired. [default: 3]
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_restarts: Option<u32>,
    /// Attempts per episode before it is given up. [default: 3]
    #[cfg_attr(feature = "clap", arg(long))]
    pub max_attempts: Option<u32>,
    /// Check actions against the action space, and observations and rewards (NaN,
    /// outside the space): a wrong value fails its episode's attempt with a message
    /// naming it (see the README's "Semantics worth knowing"); `false` skips the
    /// checks. [default: true]
    #[cfg_attr(feature = "clap", arg(long, value_name = "BOOL", action = clap::ArgAction::Set))]
    pub check: Option<bool>,
    /// Python envs: a round of env steps slower than this (e.g. `30s`) kills the env
    /// process and fails its episodes' attempts. [default: none]
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub step_timeout: Option<DurationSetting>,
    /// Label filter, e.g. `key=mine_block,val=diamond.*,num=1,label=diamond`,
    /// `kind=return,min=100,label=good`, `kind=length,max=50,label=short` (repeatable;
    /// config file: the `filters` list). [default with the default env: the diamond filter]
    #[cfg_attr(feature = "clap", arg(long = "filter", value_name = "SPEC"))]
    pub filters: Option<Vec<String>>,
    /// Write the summary as JSON to this file.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub summary_json: Option<PathBuf>,
    /// Write one JSON line per episode to this file.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub episodes_json: Option<PathBuf>,
    /// Also record every step's info dict.
    #[cfg_attr(feature = "clap", arg(long, num_args = 0, default_missing_value = "true"))]
    pub record_infos: Option<bool>,
    /// Commit a shard once this many steps are buffered. [default: 262144]
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub max_buffer_steps: Option<usize>,
    /// Commit a shard once this many episodes are buffered.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub max_buffer_episodes: Option<usize>,
    /// Commit at least this often, in seconds, while episodes arrive, so that a
    /// killed run loses at most about this much (a rollout's `commit_every`). [default: 2]
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECONDS"))]
    pub commit_every: Option<f64>,
    /// How image observations are stored: lz4 (lossless, fastest), raw, jpeg, or
    /// h264 (mp4 per shard, smallest; PyAV/FFmpeg open it); per image key with
    /// `KEY=MEDIA` items, e.g. `lz4,observations/rgb=h264`. [default: lz4; the default job: h264]
    #[cfg_attr(feature = "clap", arg(long, visible_alias = "image-media", value_name = "MEDIA"))]
    #[serde(alias = "image_media")]
    pub frame_media: Option<String>,
    /// h264: constant rate factor, 0–51, lower is better quality. [default: 23]
    #[cfg_attr(feature = "clap", arg(long, value_name = "CRF"))]
    pub crf: Option<f32>,
    /// h264: x264 preset, ultrafast … veryslow. [default: fast]
    #[cfg_attr(feature = "clap", arg(long, value_name = "PRESET"))]
    pub preset: Option<String>,
    /// h264: at most this many frames between keyframes; a loader decodes at most
    /// this many extra frames to reach any window. [default: 128]
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub keyint: Option<u32>,
    /// h264: frames per second in the mp4 (timestamps = frame / fps), 1–1000. [default: 30]
    #[cfg_attr(feature = "clap", arg(long, value_name = "FPS"))]
    pub fps: Option<u32>,
    /// jpeg: quality, 1–100. [default: 95]
    #[cfg_attr(feature = "clap", arg(long, value_name = "Q"))]
    pub jpeg_quality: Option<u8>,
    /// h264: extra x264 options, `key=value:key=value` (as ffmpeg's -x264-params).
    #[cfg_attr(feature = "clap", arg(long, value_name = "OPTS"))]
    pub x264_params: Option<String>,
    /// The version of a training run's policy that acts in every step, recorded as
    /// each step's `policy_version`: an evaluation of a learner's checkpoint
    /// (`rollway.Rollout.evaluate`), drawn by version in `rollway report`.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub policy_version: Option<u64>,
}

/// Settings renamed so that a run and a rollout, the CLI, the config file and Python
/// say one thing one way (issue 58), as `(old, new)`: an old name is still taken,
/// with a deprecation warning, until 0.2. Stored configs of older datasets read the
/// old name silently (serde's alias on the new field; a test keeps the two lists equal).
pub const RENAMED: &[(&str, &str)] = &[("max_steps", "max_episode_steps")];

/// The warning for a setting given by its old name (`old`, as the caller spells it),
/// in the caller's spelling of the new one.
pub fn renamed_warning(old: &str, new: &str) -> String {
    format!("{old} is deprecated: it is {new} now, one name for run and rollout alike; the old name goes in rollway 0.2")
}

/// Renames the old keys of a config table ([`RENAMED`]), each with a warning on
/// stderr; both names with different values is an input error, as from Python.
pub fn rename_keys(table: &mut toml::Table, at: &str) -> Result<()> {
    for (old, new) in RENAMED {
        let Some(v) = table.remove(*old) else { continue };
        match table.get(*new) {
            Some(given) if *given != v => {
                bad!("{at}: `{old}` = {v} and `{new}` = {given}: `{old}` is `{new}`'s old name; give `{new}` only")
            }
            _ => {}
        }
        eprintln!("rollway: warning: {at}: {}", renamed_warning(&format!("`{old}`"), &format!("`{new}`")));
        table.insert(new.to_string(), v);
    }
    Ok(())
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

    /// How a message names option `key` on the command line: `--` and the key with
    /// `-` for `_`, but `filters` is `--filter`; `None` for the file's tables, which
    /// have no flag, and for keys that are not settings. (The CLI's tests check that
    /// its flags are these names.)
    pub fn flag(key: &str) -> Option<String> {
        if key == "filters" {
            return Some("--filter".into());
        }
        let known = RunOptions::keys().iter().any(|k| k == key);
        (known && key != "env_params" && key != "agent_params").then(|| format!("--{}", key.replace('_', "-")))
    }

    /// Every setting's name, as the config file and `rollway.run` spell it: the one
    /// list the fronts are checked against (the Python package's `run()` by a test).
    pub fn keys() -> Vec<String> {
        let keys = serde_json::to_value(RunOptions::default()).expect("run options serialize");
        keys.as_object().map(|k| k.keys().cloned().collect()).unwrap_or_default()
    }
}

/// A duration setting as given: text (`500us`, `2ms`, `1.5s`, a bare number of
/// seconds) from a flag or the config file, or a number of seconds (Python's
/// `max_wait=0.002`). It is checked when the job is resolved, where an error can
/// name the flag or config key it came from; datasets store it as whole
/// microseconds (`"500us"`), which read back exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DurationSetting {
    /// Seconds, as a number.
    Seconds(f64),
    /// Text with a unit.
    Text(String),
}

impl DurationSetting {
    /// The duration, or why the value is not one.
    pub fn duration(&self) -> Result<Duration> {
        match self {
            DurationSetting::Text(s) => parse_duration(s),
            DurationSetting::Seconds(v) => seconds(*v, &v.to_string()),
        }
    }

    /// How datasets store `d`.
    pub fn stored(d: Duration) -> DurationSetting {
        DurationSetting::Text(format!("{}us", d.as_micros()))
    }
}

impl std::str::FromStr for DurationSetting {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(DurationSetting::Text(s.to_string()))
    }
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
    let v: f64 = num.trim().parse().input(|| format!("`{s}` is not a duration (try 500us, 2ms, 1s)"))?;
    seconds(v * scale, s)
}

fn seconds(v: f64, text: &str) -> Result<Duration> {
    if !(v >= 0.0 && v.is_finite()) {
        return Err(Error::input(format!("`{text}`: a duration must be a non-negative number")));
    }
    Duration::try_from_secs_f64(v).map_err(|_| Error::input(format!("`{text}` is too long a duration")))
}

/// A run's `commit_every` when not given: a run killed a few seconds in keeps what
/// finished (a rollout's default is 1 s, for a learner that follows it).
pub const DEFAULT_COMMIT_EVERY: f64 = 2.0;

/// `commit_every` seconds as the writer's buffer age, for a run and a rollout alike:
/// positive and finite, else an input error naming the setting as `name`.
pub(crate) fn commit_age(seconds: f64, name: &str) -> Result<Duration> {
    let age = Duration::try_from_secs_f64(seconds).ok().filter(|d| !d.is_zero());
    age.ok_or_else(|| Error::input(format!("{name}: must be a positive number of seconds, got {seconds}")))
}

/// A `frame_media` setting, checked for a run and a rollout alike before any env
/// starts (the store would refuse it only at the first shard): an input error naming
/// the setting as `name`. Keys are checked against the env's frame keys later, when
/// the dataset is created.
pub(crate) fn check_frame_media(setting: &str, name: &str) -> Result<()> {
    let keys: Vec<String> = setting.split(',').filter_map(|p| p.split_once('=').map(|(k, _)| k.trim().to_string())).collect();
    rollway_store::frames::check_setting(setting, &keys).map_err(|m| Error::input(format!("{name}: {m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_renamed_setting_reads_its_old_name_as_its_new_one() {
        for (old, new) in RENAMED {
            let by = |k: &str| serde_json::from_value::<RunOptions>(serde_json::json!({ k: 7 })).unwrap().given();
            assert_eq!(by(old), vec![new.to_string()], "{old} is read as {new} (serde's alias)");
            assert!(RunOptions::keys().iter().any(|k| k == new) && !RunOptions::keys().iter().any(|k| k == old));
            let mut t = toml::Table::new();
            t.insert(old.to_string(), toml::Value::Integer(7));
            rename_keys(&mut t, "test").unwrap();
            assert_eq!(t.keys().collect::<Vec<_>>(), vec![new], "a config file's {old} is renamed");
            t.insert(old.to_string(), toml::Value::Integer(7));
            rename_keys(&mut t, "test").unwrap();
            assert_eq!(t.get(*new), Some(&toml::Value::Integer(7)), "both names, one value: taken");
            t.insert(old.to_string(), toml::Value::Integer(8));
            let e = rename_keys(&mut t, "test").unwrap_err();
            assert!(e.is_input() && crate::chain_text(&e).contains(&format!("`{old}` = 8 and `{new}` = 7")), "{}", crate::chain_text(&e));
        }
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
    fn durations_come_as_text_or_seconds_and_are_stored_in_microseconds() {
        let text: RunOptions = serde_json::from_str(r#"{"max_wait": "2ms", "step_timeout": 1.5}"#).unwrap();
        assert_eq!(text.max_wait.unwrap().duration().unwrap(), Duration::from_millis(2));
        assert_eq!(text.step_timeout.unwrap().duration().unwrap(), Duration::from_millis(1500));
        assert_eq!(DurationSetting::Seconds(0.0003).duration().unwrap(), Duration::from_micros(300));
        let stored = serde_json::to_value(DurationSetting::stored(Duration::from_micros(1500))).unwrap();
        assert_eq!(stored, serde_json::json!("1500us"));
        for bad in [DurationSetting::Seconds(-1.0), DurationSetting::Seconds(f64::NAN), DurationSetting::Text("soon".into())] {
            assert!(bad.duration().is_err(), "{bad:?}");
        }
        assert!(DurationSetting::Text("1e300".into()).duration().unwrap_err().to_string().contains("too long"));
    }

    #[test]
    fn flags_are_the_keys_with_dashes_and_the_tables_have_none() {
        assert_eq!(RunOptions::flag("max_wait").as_deref(), Some("--max-wait"));
        assert_eq!(RunOptions::flag("filters").as_deref(), Some("--filter"));
        assert_eq!(RunOptions::flag("env_params"), None);
        assert_eq!(RunOptions::flag("no_such_key"), None);
    }
}
