//! Recording a rollout's episodes while it trains (the replay buffer of seed 002):
//! each slot's episode is built step by step beside the fragment, and handed to an
//! [`Observer`] (a dataset writer, as a run's) when it ends, in the order episodes
//! end (by fragment step, then slot: parts that run ahead hand theirs over once
//! every part is past that step, in that order, so that the same rollout records
//! the same dataset whichever part was quicker), with the policy's extras and the version that chose each action as columns
//! of their own.
//!
//! An episode is exactly what the learner saw of it: the same observations, actions,
//! rewards and flags as the fragments that held its steps, whichever fragment they
//! fell in. An episode cut by an env fault is dropped here (it is counted as the
//! fragment's fault; a half episode is not a dataset's episode). The cost, paid only
//! when recording, is one row copy per slot per step and one `Vec` per episode, whose
//! observations' buffer the sink hands back once it is done with it (see
//! [`rollway_core::Recycler`]).

use rollway_core::{EpisodeResult, Info, Memory, Recycler, Trajectory};

use super::Extra;
use crate::{Error, Observer, Result};

/// The episodes under way, one per slot.
pub(crate) struct Recording {
    sink: Box<dyn Observer + Send>,
    open: Vec<Option<(u64, Trajectory)>>,
    obs_row: usize,
    act_row: usize,
    /// The sink's buffers of committed episodes, which new episodes' observations reuse.
    recycle: Recycler,
    /// Episodes ended and not yet handed over, with their fragment step and slot.
    ended: Vec<(usize, usize, EpisodeResult)>,
}

impl Recording {
    pub fn new(sink: Box<dyn Observer + Send>, slots: usize, obs_row: usize, act_row: usize) -> Recording {
        let recycle = sink.recycler().unwrap_or_default();
        Recording { sink, open: (0..slots).map(|_| None).collect(), obs_row, act_row, recycle, ended: Vec::new() }
    }

    /// Slot `g` started an episode (seeded with `seed`) at observation `obs`.
    pub fn begin(&mut self, g: usize, seed: u64, obs: &[u8]) {
        let mut t = Trajectory { obs: self.recycle.take(64 * self.obs_row), ..Default::default() };
        t.obs.extend_from_slice(obs);
        self.open[g] = Some((seed, t));
    }

    /// The policy acted on slot `g` (row `row` of the batch's `extras`) with version `version`.
    pub fn act(&mut self, g: usize, action: &[u8], memory: &Memory, version: u64, extras: &[Extra], row: usize) {
        let Some((_, t)) = self.open[g].as_mut() else { return };
        debug_assert_eq!(action.len(), self.act_row);
        t.actions.extend_from_slice(action);
        t.versions.push(version);
        t.push_extras(extras, row);
        // Rewards do not hold this step yet: `push_state` counts the steps before it.
        t.rewards.push(0.0);
        t.push_state(memory);
        t.rewards.pop();
    }

    /// The env answered slot `g`'s step with `obs` (the final observation if it ended).
    pub fn step(&mut self, g: usize, reward: f64, terminated: bool, truncated: bool, obs: &[u8]) {
        let Some((_, t)) = self.open[g].as_mut() else { return };
        t.rewards.push(reward);
        t.terminations.push(terminated);
        t.truncations.push(truncated);
        t.obs.extend_from_slice(obs);
    }

    /// Slot `g`'s episode `id` ended at fragment step `step` with the env's final
    /// `info`: [`Recording::flush`] hands it to the observer.
    pub fn end(&mut self, g: usize, id: u64, worker: usize, info: Info, step: usize) {
        let Some((seed, t)) = self.open[g].take() else { return };
        let mut e = EpisodeResult::from_trajectory(id, seed, t);
        (e.worker, e.info) = (worker, info);
        self.ended.push((step, g, e));
    }

    /// Hands the ended episodes to the observer, by step and then slot; its error ends the rollout.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_before(usize::MAX)
    }

    /// [`Recording::flush`] of the episodes that ended before fragment step `step`:
    /// once every part is past it, no other can end there.
    pub fn flush_before(&mut self, step: usize) -> Result<()> {
        self.ended.sort_unstable_by_key(|&(s, g, _)| (s, g));
        let k = self.ended.partition_point(|&(s, _, _)| s < step);
        for (_, _, e) in self.ended.drain(..k) {
            self.sink.on_episode(e).map_err(Error::Sink)?;
        }
        Ok(())
    }

    /// Slot `g`'s episode was cut by a fault: it is not recorded.
    pub fn abandon(&mut self, g: usize) {
        if let Some((_, t)) = self.open[g].take() {
            self.recycle.give(t.obs);
        }
    }
}
