//! What a rollout has delivered since it started, kept as fragments are handed to
//! the learner: the run summary a recording rollout stores at close (as a run
//! stores its own), so a dataset's report tells a rollout that closed from one that
//! was killed, and says how fast it went and over which versions. Adding a fragment
//! is a few sums over its `[T, N]` versions; nothing is kept per fragment.

use std::time::Instant;

use serde::Serialize;

use super::Fragment;

/// Sums over the fragments a rollout delivered.
#[derive(Clone, Debug, Serialize)]
pub struct RolloutTotals {
    /// Fragments delivered.
    pub fragments: u64,
    /// Env steps in them (T × N each).
    pub steps: u64,
    /// Episodes that ended in them.
    pub episodes: u64,
    /// Sum of those episodes' returns (`mean_return` = this / `episodes`).
    pub return_sum: f64,
    /// Env steps or resets that failed.
    pub env_faults: u64,
    /// Steps dropped for being older than the lag bound allows.
    pub dropped_steps: u64,
    /// The oldest and newest policy version that acted, once a fragment was delivered.
    pub versions: Option<(u64, u64)>,
    /// The largest lag seen at delivery (learner's version − a step's version).
    pub lag_max: u64,
    /// Seconds inside the policy's calls, stepping envs, and waiting for the learner.
    pub policy_s: f64,
    /// See `policy_s`.
    pub env_s: f64,
    /// See `policy_s`.
    pub waited_s: f64,
    /// Seconds since the rollout started (set by [`RolloutTotals::at`]).
    pub seconds: f64,
    /// `steps` / `seconds`.
    pub steps_per_sec: f64,
    #[serde(skip)]
    started: Instant,
}

impl Default for RolloutTotals {
    fn default() -> RolloutTotals {
        RolloutTotals {
            fragments: 0,
            steps: 0,
            episodes: 0,
            return_sum: 0.0,
            env_faults: 0,
            dropped_steps: 0,
            versions: None,
            lag_max: 0,
            policy_s: 0.0,
            env_s: 0.0,
            waited_s: 0.0,
            seconds: 0.0,
            steps_per_sec: 0.0,
            started: Instant::now(),
        }
    }
}

impl RolloutTotals {
    /// Counts a delivered fragment (its lag measured, its dropped steps set).
    pub(crate) fn add(&mut self, f: &Fragment) {
        self.fragments += 1;
        self.steps += (f.steps * f.envs) as u64;
        self.episodes += f.finished.len() as u64;
        self.return_sum += f.finished.iter().map(|e| e.ret).sum::<f64>();
        self.env_faults += f.stats.env_faults;
        self.dropped_steps = f.stats.dropped_steps;
        self.lag_max = self.lag_max.max(f.stats.lag_max);
        if let (Some(&lo), Some(&hi)) = (f.version.iter().min(), f.version.iter().max()) {
            self.versions = Some(self.versions.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
        (self.policy_s, self.env_s, self.waited_s) =
            (self.policy_s + f.stats.policy_s, self.env_s + f.stats.env_s, self.waited_s + f.stats.waited_s);
    }

    /// The totals as of now: `seconds` and `steps_per_sec` filled in.
    pub fn at(&self) -> RolloutTotals {
        let seconds = self.started.elapsed().as_secs_f64();
        RolloutTotals { seconds, steps_per_sec: self.steps as f64 / seconds.max(1e-9), ..self.clone() }
    }
}
