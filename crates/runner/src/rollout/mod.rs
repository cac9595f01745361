//! The rollout engine of a training loop: envs and a batched policy that stay up
//! between a learner's updates and hand it [`Fragment`]s (T steps × N envs, with
//! the bootstrap observation, recurrent state, policy extras and versions).
//!
//! ```
//! use std::sync::Arc;
//! use rollway_core::{AgentFactory, EnvFactory};
//! use rollway_runner::rollout::{AgentPolicy, Rollout, RolloutConfig};
//!
//! let envs: Arc<dyn EnvFactory> = Arc::new(rollway_envs::Registered::new("CartPole-v1", Default::default()));
//! let spec = envs.spec().unwrap();
//! let agent = rollway_agents::Registered::new("random", Default::default()).make(&spec).unwrap();
//! let cfg = RolloutConfig { envs: 4, steps: 32, ..Default::default() };
//! let mut rollout = Rollout::start(cfg, envs, Box::new(AgentPolicy(agent))).unwrap();
//! let f = rollout.collect().unwrap();           // learner at version 0
//! assert_eq!((f.steps, f.envs, f.rewards.len()), (32, 4, 128));
//! assert!(f.version.iter().all(|&v| v == 0));
//! rollout.publish(None);                        // ... after an update: version 1
//! let f = rollout.collect().unwrap();
//! assert!(f.version.iter().all(|&v| v == 1));   // max_policy_lag 0: strictly on-policy
//! ```
//!
//! # Design
//! One collecting thread owns the envs (`envs`: part 0 stepped by this thread,
//! other parts by a thread each) and the policy, and makes fragments one step of
//! all N envs at a time (`sampler`). The learner talks to it through three
//! things only:
//! - **permits** ([`LagGate`], shared with `rollway.ray`'s rollout): the collecting
//!   thread starts a fragment only with a permit.
//!   `max_policy_lag = k` starts it with `k` permits and each [`Rollout::collect`]
//!   grants one more. With `k = 0` nothing is collected while the learner trains
//!   (CleanRL's loop); with `k ≥ 1` collection runs up to `k` fragments ahead,
//!   overlapping the learner's update (IMPALA, Sample Factory).
//! - **versions**: [`Rollout::publish`] makes the next version (or
//!   [`Rollout::publish_version`] the learner's own number), with an optional
//!   [`Update`] (new weights); the collecting thread applies updates before a batch,
//!   never during one, and tags each step with the version that acted.
//! - **delivery**: `collect` hands over the next fragment if none of its steps is
//!   older than the current version − k; an older one is dropped and counted
//!   ([`FragmentStats::dropped_steps`]), never mixed in silently. Publishing once
//!   per update keeps every fragment within the bound, so nothing is dropped.
//!
//! At `k = 0` nothing overlaps, and the thread that calls `collect` makes the
//! fragment itself: no collecting thread, no hand-off, and a policy that keeps
//! per-thread state (torch's thread pool) runs on the learner's own thread
//! (`engine` says what that saved). Permits and delivery are then trivially met.
//!
//! The cost per fragment is two channel hand-offs and a condition variable (none
//! at `k = 0`); per step, a policy call, an env round per part and a row copy into
//! the fragment.

mod ahead;
mod engine;
pub mod envs;
mod fragment;
mod lag;
mod policy;
mod record;
mod sampler;
pub mod scan;
mod totals;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub use engine::Rollout;
pub use fragment::{Finished, Fragment, FragmentStats, ObsBuffers};
pub use lag::LagGate;
pub use policy::{AgentPolicy, Extra, Policy, Update};
pub use totals::RolloutTotals;

use crate::{Error, Mode, Result};

/// How a rollout runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RolloutConfig {
    /// Seeds the envs: slot `i`'s `j`-th episode is reset with the generator's seed for
    /// episode index `j * envs + i`.
    pub seed: u64,
    /// N: env slots, all acted on in each policy call.
    pub envs: usize,
    /// Threads (or, for hosted envs, processes) the envs are split over.
    pub workers: usize,
    /// [`Mode::Sync`]: each step, one policy call on all N envs, then every part steps
    /// (the slowest part paces the others). [`Mode::Async`]: each part runs ahead on its
    /// own, the policy acting on one part's envs as soon as they are back (EnvPool's
    /// async mode with a batch per worker), so no part waits for another within a
    /// fragment; `workers` policy calls a step. The fragments are the same either way
    /// for a policy that acts on each env alone (see `ahead`).
    pub mode: Mode,
    /// T: steps per fragment.
    pub steps: usize,
    /// How many versions older than the learner's a delivered step may be.
    pub max_policy_lag: u64,
    /// Failures in a row that one slot's env may have before the rollout gives up.
    pub max_restarts: u32,
    /// Truncates episodes at this length (besides the env's own time limit).
    pub max_steps: Option<u64>,
    /// A hosted env's round that takes longer fails (its process is replaced).
    pub step_timeout: Option<Duration>,
    /// Check actions, observations and rewards (`rollway_core::check`): an action
    /// outside the space is the policy's error; a NaN observation or reward is the
    /// env's fault, costing its episode.
    pub check: bool,
    /// Every episode starts with `reset(seed)` of its own seed, so it can be replayed
    /// from that seed alone (a recorded rollout needs it). False: Gymnasium's vector-env
    /// convention, each env seeded at its first reset (and after a failure) and its
    /// later episodes continuing its random stream; as deterministic for a given seed,
    /// and cheaper for Python envs, whose `reset(seed=...)` builds a numpy Generator.
    pub seed_each_episode: bool,
    /// How episodes are numbered, and so seeded; `None` is `j × N + i` for slot `i`'s
    /// `j`-th episode.
    pub episode_ids: Option<EpisodeIds>,
    /// Episodes each slot has already taken, in a stream this rollout continues (a
    /// resumed training run: the episodes its last life committed): slot `i` numbers
    /// its episodes, and so seeds them, from `episode_starts[i]` on. Empty: from 0.
    pub episode_starts: Vec<u64>,
    /// The version the rollout acts as until the first publish: a resumed learner's,
    /// from its checkpoint (0 for a new one).
    pub version: u64,
}

/// Slot `i`'s `j`-th episode is episode `(base + j) × slots + offset + i`, seeded as
/// `rollway.run`'s episode of that index. Rollouts that share a run (the actors of
/// `rollway.ray.Rollout`) each take their own `offset` of `slots` = N × actors, and a
/// restarted one a new `base`, so no two of them number (or seed) an episode alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpisodeIds {
    /// Added to each slot's episode count: a restarted rollout's fresh numbers.
    pub base: u64,
    /// This rollout's first slot among all rollouts' slots.
    pub offset: u64,
    /// Slots of all the rollouts that share the numbering (at least `offset + envs`).
    pub slots: u64,
}

impl Default for RolloutConfig {
    fn default() -> Self {
        RolloutConfig {
            seed: 0,
            envs: 8,
            workers: 1,
            mode: Mode::Sync,
            steps: 128,
            max_policy_lag: 0,
            max_restarts: 3,
            max_steps: None,
            step_timeout: None,
            check: true,
            seed_each_episode: true,
            episode_ids: None,
            episode_starts: Vec::new(),
            version: 0,
        }
    }
}

impl RolloutConfig {
    /// Checks ranges, naming the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, message: String| Err(Error::Config { field, message });
        if self.envs == 0 {
            return bad("envs", "must be at least 1".into());
        }
        if self.workers == 0 || self.workers > self.envs {
            return bad("workers", format!("must be between 1 and envs ({}), got {}", self.envs, self.workers));
        }
        if self.steps == 0 {
            return bad("steps", "must be at least 1".into());
        }
        if self.max_steps == Some(0) {
            return bad("max_steps", "must be at least 1".into());
        }
        if let Some(ids) = self.episode_ids.filter(|ids| ids.offset.saturating_add(self.envs as u64) > ids.slots) {
            return bad("episode_ids", format!("offset {} + envs {} must be at most slots {}", ids.offset, self.envs, ids.slots));
        }
        if !self.episode_starts.is_empty() && self.episode_starts.len() != self.envs {
            return bad("episode_starts", format!("gives {} slots' starts for {} envs", self.episode_starts.len(), self.envs));
        }
        Ok(())
    }

    /// The id of slot `g`'s `j`-th episode (see [`RolloutConfig::episode_ids`]).
    pub(crate) fn episode_id(&self, g: usize, j: u64) -> u64 {
        let ids = self.episode_ids.unwrap_or(EpisodeIds { base: 0, offset: 0, slots: self.envs as u64 });
        (ids.base + j) * ids.slots + ids.offset + g as u64
    }

    /// Checks what recording the episodes needs: each episode's own seed, which the
    /// dataset keeps to reproduce it.
    pub fn validate_recording(&self) -> Result<()> {
        if !self.seed_each_episode {
            let message = "must be true when episodes are recorded (out=): a recorded episode's seed must reproduce it".into();
            return Err(Error::Config { field: "seed_each_episode", message });
        }
        Ok(())
    }
}

/// The learner's versions and the updates not yet applied, shared with the collecting thread.
pub(crate) struct Versions {
    published: AtomicU64,
    pending: AtomicBool,
    updates: Mutex<Vec<(u64, Option<Update>)>>,
}

impl Versions {
    /// Versions that start at `version` (a resumed learner's).
    fn at(version: u64) -> Versions {
        Versions { published: AtomicU64::new(version), pending: AtomicBool::new(false), updates: Mutex::default() }
    }

    /// Makes version `version` (the next one when `None`); returns it. A given version
    /// must be newer than the current one: it is the learner's own count, kept by a
    /// rollout that is not the only one acting for it (`rollway.ray`'s actors).
    fn publish(&self, version: Option<u64>, update: Option<Update>) -> Result<u64> {
        // Under the lock, so versions enter the queue in order.
        let mut q = self.updates.lock().unwrap_or_else(|p| p.into_inner());
        let current = self.published.load(Ordering::Acquire);
        let v = version.unwrap_or(current + 1);
        if v <= current {
            let message = format!("version {v} is not newer than the current version {current}");
            return Err(Error::Config { field: "version", message });
        }
        q.push((v, update));
        self.published.store(v, Ordering::Release);
        self.pending.store(true, Ordering::Release);
        Ok(v)
    }

    fn current(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }

    /// Applies what was published since; returns the version now acting.
    fn apply(&self, mut acting: u64, policy: &mut dyn Policy) -> Result<u64> {
        // The common case, nothing new, costs one load.
        if !self.pending.load(Ordering::Acquire) {
            return Ok(acting);
        }
        let updates = {
            let mut q = self.updates.lock().unwrap_or_else(|p| p.into_inner());
            self.pending.store(false, Ordering::Release);
            std::mem::take(&mut *q)
        };
        for (v, update) in updates {
            if let Some(u) = update {
                u(policy).map_err(|e| Error::Policy { message: format!("loading version {v}: {e}") })?;
            }
            acting = v;
        }
        Ok(acting)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ahead;
#[cfg(test)]
mod tests_record;
#[cfg(test)]
mod tests_scan;
