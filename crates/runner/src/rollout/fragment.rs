//! A fragment: T consecutive steps of N envs, laid out time-major (`[T, N]`), with
//! the bootstrap observation (`obs` has T + 1 rows per env) — what an actor-critic
//! learner (PPO, IMPALA) consumes per update.
//!
//! Conventions (those of Sample Factory and TorchRL's collectors): `obs[t]` is what
//! the action `actions[t]` was chosen on, by policy version `version[t]`;
//! `rewards[t]`, `terminated[t]` and `truncated[t]` are what that action led to.
//! When an episode ends at `t`, the env is reset in the same step: `obs[t + 1]` is
//! the next episode's first observation and `first[t + 1]` is true. A step whose
//! env failed ends its episode as truncated (reward 0) and is counted in
//! [`FragmentStats::env_faults`]. `state` is each env's recurrent state before
//! `obs[0]` was acted on (zeros where `first[0]`).
//!
//! The observation an ended episode's last step returned is not in `obs` (the reset
//! replaced it) but in `final_obs`: one row per [`Finished`] episode, in the same
//! order, at that episode's `(step, env)`. A learner bootstraps a truncated episode
//! with the value of that row, Gymnasium's `final_obs` and SB3's
//! `terminal_observation`. It is the row a recording rollout stores as the
//! episode's last observation, bit for bit. A step cut by an env fault has no
//! final observation (the env failed) and no `Finished` entry: it is truncated
//! with nothing to bootstrap from. Copying it costs one row per finished episode.
//! Each [`Finished`] also carries the env's final info (Gymnasium's `final_info`),
//! read from the env only at an episode's end.

use std::sync::{Arc, Mutex};

/// An episode that ended inside a fragment.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    /// The env slot (`0..N`).
    pub env: usize,
    /// The episode's id: slot `i`'s `j`-th episode is `j * N + i`, and its env seed
    /// is the generator's seed for that index, so episode `k` of a rollout is
    /// episode `k` of a run with the same seed.
    pub episode: u64,
    /// Sum of its rewards.
    pub ret: f64,
    /// Its steps.
    pub length: u64,
    /// Terminated (else truncated by a time limit).
    pub terminated: bool,
    /// The fragment step (`0..T`) whose action ended it; its final observation is
    /// this entry's row of [`Fragment::final_obs`].
    pub step: usize,
    /// The info the env returned with its last step (empty for an env that gives
    /// none): what a run's filters read and a recording stores as the episode's `info`.
    pub info: rollway_core::Info,
}

/// How a fragment was made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FragmentStats {
    /// Wall time from the fragment's first batch to its end.
    pub wall_s: f64,
    /// Env steps (T × N) per second of `wall_s`.
    pub steps_per_s: f64,
    /// Time inside the policy's calls.
    pub policy_s: f64,
    /// Time stepping and resetting envs.
    pub env_s: f64,
    /// Time the rollout waited for the learner before starting this fragment (asked
    /// for, or allowed by the lag bound): at lag 0, the time since the last one ended.
    pub waited_s: f64,
    /// The learner's version minus each step's version at delivery: smallest, mean, largest.
    pub lag_min: u64,
    /// See `lag_min`.
    pub lag_mean: f64,
    /// See `lag_min`.
    pub lag_max: u64,
    /// Steps of earlier fragments dropped for being older than `max_policy_lag`
    /// allows, since the rollout started.
    pub dropped_steps: u64,
    /// Env steps or resets that failed in this fragment (each cost its episode).
    pub env_faults: u64,
    /// Mean envs per policy call.
    pub mean_batch: f64,
    /// Policy calls.
    pub batches: u64,
}

/// T steps × N envs (see the module docs for the conventions).
#[derive(Clone, Debug, Default)]
pub struct Fragment {
    /// T.
    pub steps: usize,
    /// N.
    pub envs: usize,
    /// `(T + 1) * N` observation rows, in the env's row layout.
    pub obs: Vec<u8>,
    /// `T * N` action rows.
    pub actions: Vec<u8>,
    /// `T * N`.
    pub rewards: Vec<f32>,
    /// `T * N`.
    pub terminated: Vec<bool>,
    /// `T * N`.
    pub truncated: Vec<bool>,
    /// `(T + 1) * N`: the observation starts an episode.
    pub first: Vec<bool>,
    /// `(T + 1) * N`: the episode each observation belongs to.
    pub episode: Vec<u64>,
    /// `T * N`: the policy version that chose each action.
    pub version: Vec<u64>,
    /// `N * state_dim`: recurrent state before step 0.
    pub state: Vec<f32>,
    /// Width of `state` (0 for a policy without state).
    pub state_dim: usize,
    /// The policy's extras, each `T * N` rows.
    pub extras: Vec<super::Extra>,
    /// Episodes that ended inside the fragment, in the order they ended.
    pub finished: Vec<Finished>,
    /// One observation row per entry of `finished`: what the env returned at that
    /// episode's end, before the reset (see the module docs).
    pub final_obs: Vec<u8>,
    /// Warnings about the envs' values first seen in this fragment (each kind once
    /// per rollout), e.g. an observation outside the observation space.
    pub warnings: Vec<String>,
    /// How it was made.
    pub stats: FragmentStats,
    /// Where `obs` goes back to once its consumer is done with it, if anywhere.
    pub obs_buffers: Option<ObsBuffers>,
}

/// Observation buffers given back by a fragment's consumer, for the next fragments to fill.
///
/// Why: the observations are nearly all of a fragment's bytes (128 steps of 64 Atari envs:
/// 231 MB), and a fresh buffer that size is fresh pages, each faulted in and zeroed by the
/// kernel as the collecting thread first writes it. Profiled on `atari:Pong-v5` at N = 64,
/// that was half of the collecting thread's time, spent between rounds while every env
/// process waited. A buffer given back keeps its pages. The Python binding gives a
/// fragment's buffer back when the last numpy view of it dies; a consumer that keeps its
/// fragments simply keeps the buffers, and the rollout allocates others.
#[derive(Clone, Debug, Default)]
pub struct ObsBuffers(Arc<Mutex<Vec<Vec<u8>>>>);

impl ObsBuffers {
    /// Spares kept: one for the fragment being collected while the consumer holds the
    /// last, one more for a rollout collecting ahead (lag 1).
    const SPARES: usize = 2;

    /// A buffer of `bytes` whose contents are to be overwritten: a spare when one is
    /// that large (its stale bytes kept: zeroing them would be one more pass over
    /// its pages), else a fresh zeroed one (untouched pages until written).
    pub fn take(&self, bytes: usize) -> Vec<u8> {
        let spare = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match spare {
            Some(mut v) if v.capacity() >= bytes => {
                v.resize(bytes, 0);
                v
            }
            _ => vec![0; bytes],
        }
    }

    /// Keeps `v` for a later fragment, unless enough are kept already.
    pub fn give(&self, v: Vec<u8>) {
        let mut spares = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if spares.len() < Self::SPARES {
            spares.push(v);
        }
    }
}

impl Fragment {
    /// A fragment sized for `steps` × `envs` with these row widths, every row there to
    /// be overwritten (at its `(t, slot)`, in whatever order the parts fill them).
    pub(crate) fn with_capacity(steps: usize, envs: usize, obs_row: usize, act_row: usize, buffers: &ObsBuffers) -> Fragment {
        let (tn, t1n) = (steps * envs, (steps + 1) * envs);
        Fragment {
            steps,
            envs,
            obs: buffers.take(t1n * obs_row),
            obs_buffers: Some(buffers.clone()),
            actions: vec![0; tn * act_row],
            rewards: vec![0.0; tn],
            terminated: vec![false; tn],
            truncated: vec![false; tn],
            first: vec![false; t1n],
            episode: vec![0; t1n],
            version: vec![0; tn],
            ..Fragment::default()
        }
    }

    /// Puts `finished` (and their `final_obs` rows) in the order of their step, then
    /// env: the order they ended in when every env steps in lockstep, and so the
    /// same order whichever part ran ahead.
    pub(crate) fn sort_finished(&mut self) {
        let key = |e: &Finished| (e.step, e.env);
        if self.finished.is_sorted_by_key(key) {
            return;
        }
        let row = self.final_obs.len() / self.finished.len();
        let mut order: Vec<usize> = (0..self.finished.len()).collect();
        order.sort_unstable_by_key(|&i| key(&self.finished[i]));
        let obs = order.iter().flat_map(|&i| self.final_obs[i * row..(i + 1) * row].iter().copied()).collect();
        self.finished = order.iter().map(|&i| self.finished[i].clone()).collect();
        self.final_obs = obs;
    }

    /// The smallest version of any step (`u64::MAX` for an empty fragment).
    pub fn oldest_version(&self) -> u64 {
        self.version.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// Fills the lag figures for a learner at `current`.
    pub(crate) fn measure_lag(&mut self, current: u64) {
        let lags = self.version.iter().map(|&v| current.saturating_sub(v));
        let (mut min, mut max, mut sum) = (u64::MAX, 0, 0u64);
        for l in lags {
            (min, max, sum) = (min.min(l), max.max(l), sum + l);
        }
        let n = self.version.len().max(1) as f64;
        let s = &mut self.stats;
        (s.lag_min, s.lag_max, s.lag_mean) = (if self.version.is_empty() { 0 } else { min }, max, sum as f64 / n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_taken_again_at_the_size_asked_and_the_spares_are_bounded() {
        let buffers = ObsBuffers::default();
        let a = buffers.take(64);
        assert_eq!(a, vec![0; 64], "a fresh buffer is zeroed");
        let at = a.as_ptr();
        buffers.give(a);
        let again = buffers.take(48);
        assert_eq!((again.as_ptr(), again.len()), (at, 48), "the same pages, at the size asked");
        assert!(buffers.take(1 << 20).len() == 1 << 20, "a larger need gets a larger buffer");
        for _ in 0..5 {
            buffers.give(vec![0; 8]);
        }
        assert_eq!(buffers.0.lock().unwrap().len(), ObsBuffers::SPARES);
    }
}
