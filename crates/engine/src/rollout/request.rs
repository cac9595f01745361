//! What a rollout is asked for: [`RolloutRequest`], its settings declared once with
//! their defaults and docs (the Python keyword arguments' names), checked into the
//! runner's [`RolloutConfig`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rollway_runner::rollout::{EpisodeIds, RolloutConfig};
use serde::{Deserialize, Serialize};

use crate::error::{Error, InputContext, Result};
use crate::host::{Host, INLINE_CANNOT_TIME_OUT};
use crate::rollout::by_cost::by_cost;
use crate::settings::ModeArg;

/// A rollout, as asked for. Field names are the Python keyword arguments'.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RolloutRequest {
    /// A built-in env id, `gym:ID`, `module:callable`, or the name of a pickled callable.
    pub env: String,
    /// The env's parameters.
    pub env_params: BTreeMap<String, String>,
    /// An agent given by name (a built-in agent, `onnx:PATH`), as a run's `agent`; `None`
    /// when the front brings a policy of its own. (`policy` until 0.2: see [`RENAMED`].)
    #[serde(alias = "policy")]
    pub agent: Option<String>,
    /// The named agent's parameters, as a run's `agent_params`.
    #[serde(alias = "policy_params")]
    pub agent_params: BTreeMap<String, String>,
    /// Env seeds: same seed, same fragments, whatever the workers.
    pub seed: u64,
    /// N: envs acted on in each policy call.
    pub num_envs: usize,
    /// Threads (hosted envs: processes) the envs are split over; `None`: one, except
    /// for `atari:` envs, which get one process per core, and MuJoCo tasks rollway
    /// steps, one thread per core (see [`RolloutRequest::workers`]).
    pub workers: Option<usize>,
    /// `sync`: each step, one policy call on all N envs, then every worker's envs step;
    /// `async`: each worker's envs run ahead, acted on as soon as they are back (a
    /// policy call per worker per step). See [`RolloutConfig::mode`].
    pub mode: ModeArg,
    /// T: steps per fragment (a run's `steps` is its total target: another setting).
    #[serde(alias = "steps")]
    pub steps_per_fragment: usize,
    /// How many versions older than the learner's a delivered step may be.
    pub max_policy_lag: u64,
    /// Failures in a row one env may have.
    pub max_restarts: u32,
    /// Truncates episodes at this length.
    pub max_episode_steps: Option<u64>,
    /// Seconds a hosted env's step may take before its process is replaced.
    pub step_timeout: Option<f64>,
    /// Where Python envs step.
    pub host: Host,
    /// Check actions, observations and rewards.
    pub check: bool,
    /// Record every finished episode into this new dataset (or, with `join`, this existing one).
    pub out: Option<PathBuf>,
    /// The longest a finished episode waits to be committed, seconds.
    pub commit_every: f64,
    /// How `out` stores image leaves, as a run's `frame_media` (`h264` records them as
    /// video); `None`: the store's default (lz4).
    pub frame_media: Option<String>,
    /// Every episode reset with its own seed (needed with `out`); `None`: yes, except
    /// for `atari:` envs recording nothing (see [`RolloutRequest::seed_each_episode`]).
    pub seed_each_episode: Option<bool>,
    /// `(base, offset, slots)`: see [`EpisodeIds`].
    pub episode_ids: Option<(u64, u64, u64)>,
    /// `(run, writer id)`: write run `run` of the dataset at `out` as one of many writers.
    pub join: Option<(u32, String)>,
    /// With `out`: continue the rollout recorded there (a new run after its last,
    /// each env slot numbering and seeding its episodes past what was committed), or
    /// start it if there is none.
    pub resume: bool,
    /// Each slot's episodes already taken (see [`RolloutConfig::episode_starts`]): set
    /// by a distributed rollout's driver for its actors; a local resume finds its own.
    pub episode_starts: Vec<u64>,
    /// The version the rollout acts as until the learner publishes (its checkpoint's).
    pub version: u64,
}

/// Rollout settings renamed to a run's words (issue 58), as `(old, new)`: a rollout's
/// agent is named as a run's is, and its fragment length is not a run's `steps` (the
/// run's total target). The old names are taken, with a deprecation warning from the
/// Python package, until 0.2; serde's aliases on the fields read them (a test keeps
/// the two lists equal).
pub const RENAMED: &[(&str, &str)] = &[("policy", "agent"), ("policy_params", "agent_params"), ("steps", "steps_per_fragment")];

impl Default for RolloutRequest {
    fn default() -> Self {
        let d = RolloutConfig::default();
        RolloutRequest {
            env: "CartPole-v1".into(),
            env_params: BTreeMap::new(),
            agent: None,
            agent_params: BTreeMap::new(),
            seed: d.seed,
            num_envs: d.envs,
            workers: None,
            mode: ModeArg::Sync,
            steps_per_fragment: d.steps,
            max_policy_lag: d.max_policy_lag,
            max_restarts: d.max_restarts,
            max_episode_steps: d.max_steps,
            step_timeout: None,
            host: Host::Auto,
            check: d.check,
            out: None,
            commit_every: 1.0,
            frame_media: None,
            seed_each_episode: None,
            episode_ids: None,
            join: None,
            resume: false,
            episode_starts: Vec::new(),
            version: 0,
        }
    }
}

impl RolloutRequest {
    /// A request from a JSON mapping of its fields; an unknown key or a wrong type is an input error naming it.
    pub fn from_json(text: &str) -> Result<RolloutRequest> {
        serde_json::from_str(text).input(|| "rollout settings".into())
    }

    /// Whether Python envs step inline: `host`, where `auto` is one worker at lag 0
    /// without a `step_timeout` (only a process can be killed, as in a run).
    pub fn inline(&self) -> bool {
        match self.host {
            Host::Inline => true,
            Host::Process => false,
            Host::Auto => Host::auto_inline(&self.env, self.workers(), self.max_policy_lag) && self.step_timeout.is_none(),
        }
    }

    /// Whether `host="auto"` weighs a step's cost here: it would step the envs inline and
    /// the workers are the default (one asked for is kept).
    pub fn weighs_cost(&self) -> bool {
        self.host == Host::Auto && self.workers.is_none() && self.inline()
    }

    /// `host="auto"` settled by one env's measured step cost ([`by_cost`]): processes, one
    /// per core, become this request's host when they pay. Why, for the user.
    pub fn settle_by_cost(&mut self, step_s: f64) -> String {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let choice = by_cost(self.num_envs, cores, step_s);
        if !choice.inline {
            (self.host, self.workers) = (Host::Process, Some(choice.workers));
        }
        choice.why
    }

    /// Whether every episode is reset with its own seed: as asked, else yes, except for
    /// `atari:` envs that record nothing. A seeded reset of an ALE env is Gymnasium's,
    /// which reloads the ROM (~150 ms on a 2-core VM, half a random Pong episode's
    /// steps); seeded once each, as EnvPool and Gymnasium's vector envs seed, their
    /// fragments are as deterministic for a given seed, but an episode cannot be
    /// replayed from a seed of its own, which is what a recording needs.
    pub fn seed_each_episode(&self) -> bool {
        self.seed_each_episode.unwrap_or(self.out.is_some() || !self.env.starts_with("atari:"))
    }

    /// The workers asked for, else one, except for `atari:` envs away from `host="inline"`:
    /// one process per core. An Atari step is ~300 µs of emulation in ale-py, which holds
    /// the GIL, so a process's round trip (~50 µs a round) costs little beside it and only
    /// processes step the envs on every core. The MuJoCo tasks rollway steps
    /// (`gym:HalfCheetah-v5`, …) step without the GIL, so one thread per core does it
    /// in the rollout's own process (`"auto"` keeps them inline).
    pub fn workers(&self) -> usize {
        self.host.workers(&self.env, self.workers, self.num_envs)
    }

    /// The engine's configuration, checked.
    pub fn config(&self) -> Result<RolloutConfig> {
        if self.host == Host::Inline && self.step_timeout.is_some() {
            return Err(Error::input(INLINE_CANNOT_TIME_OUT.to_string()));
        }
        let step_timeout = self
            .step_timeout
            .map(|s| Duration::try_from_secs_f64(s).map_err(|e| Error::input(format!("step_timeout={s}: {e}"))))
            .transpose()?;
        let cfg = RolloutConfig {
            seed: self.seed,
            envs: self.num_envs,
            workers: self.workers(),
            mode: if self.mode == ModeArg::Async { rollway_runner::Mode::Async } else { rollway_runner::Mode::Sync },
            steps: self.steps_per_fragment,
            max_policy_lag: self.max_policy_lag,
            max_restarts: self.max_restarts,
            max_steps: self.max_episode_steps,
            step_timeout,
            check: self.check,
            seed_each_episode: self.seed_each_episode(),
            episode_ids: self.episode_ids.map(|(base, offset, slots)| EpisodeIds { base, offset, slots }),
            episode_starts: self.episode_starts.clone(),
            version: self.version,
        };
        cfg.validate().map_err(Error::input_from)?;
        if self.resume && (self.out.is_none() || self.join.is_some()) {
            bad!("resume=True continues the rollout recorded at out=, which this rollout records into alone (no join=)");
        }
        if let Some(dir) = &self.out {
            // Refused before any env starts: a URL of a scheme this build does not reach.
            if !crate::target::on_store(dir) {
                crate::target::local(dir)?;
            }
            cfg.validate_recording().map_err(Error::input_from)?;
        }
        if let Some(media) = &self.frame_media {
            crate::settings::check_frame_media(media, &format!("frame_media={media:?}"))?;
        }
        Ok(cfg)
    }

    /// How often the dataset commits.
    pub(crate) fn commit_age(&self) -> Result<Duration> {
        crate::settings::commit_age(self.commit_every, "commit_every")
    }
}

/// The request as the dataset stores it: what reproduces the rollout (not where it wrote).
pub(crate) fn stored(r: &RolloutRequest) -> serde_json::Value {
    let mut v = serde_json::to_value(r).expect("requests serialize");
    if let Some(m) = v.as_object_mut() {
        for own in ["out", "join", "commit_every", "resume", "episode_starts", "version"] {
            m.remove(own);
        }
    }
    v
}
