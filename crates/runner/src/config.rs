//! Run configuration: what to run, how many, how to batch, how to recover.

use std::time::Duration;

use rollway_core::Params;

use crate::{Error, Result};

/// When a run stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Exactly this many episodes, indices `0..n`.
    Episodes(u64),
    /// The shortest prefix of episodes `0..k` whose lengths add up to at least this
    /// many steps. Defined on the prefix (not on "whatever finished first") so the
    /// set of episodes does not depend on scheduling.
    Steps(u64),
}

/// How the central inference stage forms batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every round waits for all envs, like Gymnasium's `SyncVectorEnv`.
    Sync,
    /// Acts on whichever worker blocks are ready (EnvPool's async mode); each worker
    /// keeps two blocks so it steps one while the other waits for actions.
    Async,
}

impl Mode {
    /// The mode's name, as summaries, configs and the CLI spell it (and serde writes it).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sync => "sync",
            Mode::Async => "async",
        }
    }
}

/// Everything a run needs. Defaults are the CLI's defaults.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The env, by name: the run's env factory must have this name (for the
    /// built-in registry, the env id). Summaries and datasets record it.
    pub env: String,
    /// Env parameters, for a factory made from this config (the registry's);
    /// other factories carry their own.
    pub env_params: Params,
    /// The agent, by name: the run's agent factory must have this name (for the
    /// built-in registry, the agent name). Summaries and datasets record it.
    pub agent: String,
    /// Agent parameters, as for `env_params`.
    pub agent_params: Params,
    /// Worker threads.
    pub workers: usize,
    /// Envs owned by each worker.
    pub envs_per_worker: usize,
    /// When to stop.
    pub target: Target,
    /// Cut episodes at this many steps (recorded as truncated), on top of the env's own limit.
    pub max_steps: Option<u64>,
    /// Run seed; episode `i` gets `seed::episode_seed(seed, i)`.
    pub seed: u64,
    /// Batching mode.
    pub mode: Mode,
    /// Async: do not act on fewer envs than this unless `max_wait` has passed.
    pub min_batch: usize,
    /// Largest number of envs per agent call; `0` means all envs.
    pub max_batch: usize,
    /// Async: how long to wait for a batch to fill up to `max_batch`.
    pub max_wait: Duration,
    /// Env rebuilds a worker may make in a row, and agent rebuilds the run may make
    /// in a row: the count starts again once an episode of the worker finishes (a
    /// call of the agent succeeds). A flaky env goes on; a broken one is retired.
    pub max_restarts: u32,
    /// Attempts per episode before it is given up.
    pub max_attempts: u32,
    /// First restart delay; doubles with each restart in a row of the same worker,
    /// capped at 2 s, and starts again as the count does.
    pub restart_backoff: Duration,
    /// A round of env steps slower than this fails its episodes' attempts, for
    /// envs hosted in other processes (which can be killed); `None`: no limit.
    pub step_timeout: Option<Duration>,
    /// Keep per-step data (observations, actions, rewards, flags) of each episode.
    pub record_steps: bool,
    /// Also keep the info dict of every step (costly for rich infos).
    pub record_infos: bool,
    /// Check actions against the action space, and observations and rewards
    /// (`rollway_core::check`): a wrong value fails the attempt, with a message
    /// naming it. Off, they go through unchecked.
    pub check: bool,
    /// Resume: episodes `0..start_index` are already done (e.g. committed to a dataset).
    pub start_index: u64,
    /// Resume: steps in those episodes, counted towards a step target.
    pub start_steps: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            env: "PixelMine-v0".into(),
            env_params: Params::new(),
            agent: "miner".into(),
            agent_params: Params::new(),
            workers: 2,
            envs_per_worker: 8,
            target: Target::Episodes(64),
            max_steps: None,
            seed: 0,
            mode: Mode::Sync,
            min_batch: 1,
            max_batch: 0,
            max_wait: Duration::ZERO,
            max_restarts: 3,
            max_attempts: 3,
            restart_backoff: Duration::from_millis(10),
            step_timeout: None,
            record_steps: false,
            record_infos: false,
            check: true,
            start_index: 0,
            start_steps: 0,
        }
    }
}

impl RunConfig {
    /// Most worker threads a run may have.
    pub const MAX_WORKERS: usize = 1024;
    /// Most envs one worker may own.
    pub const MAX_ENVS_PER_WORKER: usize = 65_536;
    /// Most env slots in all: each has its observation and action rows allocated up front.
    pub const MAX_ENVS: usize = 1 << 20;
    /// Longest `max_wait`: far more than any batch is worth waiting for.
    pub const MAX_WAIT: Duration = Duration::from_secs(3600);

    /// Total env slots.
    pub fn total_envs(&self) -> usize {
        self.workers * self.envs_per_worker
    }

    /// Checks ranges and consistency; errors name the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field, message: &str| Err(Error::Config { field, message: message.into() });
        if self.workers == 0 {
            return bad("workers", "must be at least 1");
        }
        if self.envs_per_worker == 0 {
            return bad("envs_per_worker", "must be at least 1");
        }
        if self.workers > Self::MAX_WORKERS {
            return bad("workers", &format!("more than {} worker threads is not supported", Self::MAX_WORKERS));
        }
        if self.envs_per_worker > Self::MAX_ENVS_PER_WORKER {
            return bad("envs_per_worker", &format!("more than {} envs per worker is not supported", Self::MAX_ENVS_PER_WORKER));
        }
        if self.total_envs() > Self::MAX_ENVS {
            return bad(
                "envs_per_worker",
                &format!("{} workers × {} envs is more than {} env slots", self.workers, self.envs_per_worker, Self::MAX_ENVS),
            );
        }
        if self.max_wait > Self::MAX_WAIT {
            return bad("max_wait", "must be at most 1 hour");
        }
        match self.target {
            Target::Episodes(0) => return bad("episodes", "must be at least 1"),
            Target::Steps(0) => return bad("steps", "must be at least 1"),
            _ => {}
        }
        if self.max_steps == Some(0) {
            return bad("max_steps", "must be at least 1");
        }
        if self.min_batch == 0 {
            return bad("batch", "min batch size must be at least 1");
        }
        if self.max_batch != 0 && self.min_batch > self.max_batch {
            return bad("batch", &format!("min {} > max {}", self.min_batch, self.max_batch));
        }
        if self.max_attempts == 0 {
            return bad("max_attempts", "must be at least 1");
        }
        if let Target::Episodes(n) = self.target {
            if self.start_index > n {
                return bad("episodes", &format!("{} episodes are already done, more than the target {n}", self.start_index));
            }
        }
        if self.record_infos && !self.record_steps {
            return bad("record_infos", "needs record_steps");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Mode;

    #[test]
    fn a_mode_serializes_as_its_name() {
        for m in [Mode::Sync, Mode::Async] {
            assert_eq!(serde_json::to_value(m).unwrap(), m.name());
        }
    }
}
