//! The collecting loop: one batch of every env per step, T steps a fragment.
//!
//! Each step: apply the updates the learner published (the only place weights
//! change, so a batch is acted on by one version), call the policy on all N
//! slots (the parts' rows in place, as segments of one batch), step every env,
//! reset those whose episode ended (same step: `obs[t + 1]` is the new episode's
//! first observation, the ended one's last kept in `final_obs` before the reset
//! overwrites its row), and append the step to the fragment. Copying rows into the
//! fragment is a memcpy per part per step, next to a policy call.
//!
//! A slot's env that fails (an error, a panic, its host process dying) costs that
//! slot's episode: the step ends it as truncated with reward 0, the slot is reset
//! with its next episode, and the fault is counted. Only a slot that fails more
//! than `max_restarts` times in a row (a broken env, not a flaky one) ends the
//! rollout with an error; any successful step clears its count.
//!
//! With `check` on, the values crossing from user code are checked as a run
//! checks them (`rollway_core::check`): an action outside the space is the
//! policy's error (the rollout ends, naming the slot); a NaN observation or a
//! non-finite reward is that slot's env fault; a value Gymnasium would only warn
//! about goes into the fragment's `warnings`, once per kind.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rollway_core::check::{check_reward, Role, RowCheck};
use rollway_core::{seed, ActBatch, AgentRng, BlockOptions, EnvFactory, EnvSpec, Failure, InfoNeed, Layout, Memory, Op, Segment};

use super::envs::{Envs, Part};
use super::fragment::{Finished, Fragment, ObsBuffers};
use super::record::Recording;
use super::{Extra, Policy, RolloutConfig, Versions};
use crate::{Error, Result};

/// The episode a slot is running (here and in a scanned rollout's `Scanner`).
#[derive(Clone, Copy, Default)]
pub(super) struct Track {
    pub id: u64,
    pub ret: f64,
    pub len: u64,
}

/// Per-slot agent state, indexed by global slot.
struct Slots {
    first: Vec<bool>,
    memory: Vec<Memory>,
    rng: Vec<AgentRng>,
    track: Vec<Track>,
    /// How many episodes each slot has started (its next episode number: `RolloutConfig::episode_ids`).
    started: Vec<u64>,
    /// Failures in a row.
    fails: Vec<u32>,
    /// The slot's env was seeded and has not failed since, so without
    /// `seed_each_episode` its next episode continues the env's random stream.
    live: Vec<bool>,
}

pub(crate) struct Sampler {
    pub(super) cfg: Arc<RolloutConfig>,
    ol: Arc<Layout>,
    al: Arc<Layout>,
    pub(super) envs: Envs,
    policy: Box<dyn Policy>,
    slots: Slots,
    version: u64,
    extras: Vec<Extra>,
    state_dim: usize,
    begun: bool,
    checks: Checks,
    /// Observation buffers that come back from the fragments' consumer.
    pub(crate) obs_buffers: ObsBuffers,
    /// The episodes under way, when the rollout records them.
    pub(super) record: Option<Recording>,
}

/// The checks of a rollout's values, when it checks them.
struct Checks {
    env: String,
    act: Option<RowCheck>,
    obs: Option<RowCheck>,
    /// Whether rewards are checked.
    reward: bool,
    /// Warnings given (by `Problem::key`).
    warned: HashSet<String>,
}

impl Checks {
    fn new(on: bool, spec: &EnvSpec, ol: &Layout, al: &Layout) -> Checks {
        let made = |l: &Layout, role| Some(RowCheck::new(l, role)).filter(|c| on && !c.is_empty());
        Checks { env: spec.id.clone(), act: made(al, Role::Action), obs: made(ol, Role::Observation), reward: on, warned: HashSet::new() }
    }

    /// True when every row of `obs` passes the quick tests (one pass over a part).
    fn obs_ok(&self, obs: &rollway_core::Rows) -> bool {
        self.obs.as_ref().is_none_or(|c| c.all_pass(obs.bytes(), obs.row_bytes()))
    }

    /// An env's answer for one slot: its observation row (unless its part's rows
    /// all passed: `obs_ok`) and (after a step) reward.
    fn env(&mut self, obs: &[u8], reward: Option<f64>, obs_ok: bool, warnings: &mut Vec<String>) -> Result<(), Failure> {
        let env = &self.env;
        let wrong = |what: String| Failure { error: format!("env {env}: {what}"), restarted: false };
        if let Some(what) = reward.filter(|_| self.reward).and_then(check_reward) {
            return Err(wrong(what));
        }
        let Some(p) = self.obs.as_ref().filter(|_| !obs_ok).and_then(|c| c.check(obs)) else { return Ok(()) };
        if !p.warning {
            return Err(wrong(p.describe("observation")));
        }
        if self.warned.insert(p.key()) {
            warnings.push(wrong(p.describe("observation")).error);
        }
        Ok(())
    }
}

impl Sampler {
    pub fn new(
        cfg: Arc<RolloutConfig>,
        factory: &Arc<dyn EnvFactory>,
        spec: &EnvSpec,
        policy: Box<dyn Policy>,
        record: Option<Box<dyn crate::Observer + Send>>,
    ) -> Result<Sampler> {
        if record.is_some() {
            cfg.validate_recording()?;
        }
        let (ol, al) = (Arc::new(Layout::of(&spec.observation_space)), Arc::new(Layout::of(&spec.action_space)));
        // Final infos only: one per episode end, for `Finished::info` and the recording.
        let options = BlockOptions { infos: InfoNeed::Final, step_timeout: cfg.step_timeout, cut: cfg.max_steps };
        let envs = Envs::new(factory, cfg.envs, cfg.workers, &ol, &al, options, cfg.mode == crate::Mode::Async)?;
        let n = cfg.envs;
        let slots = Slots {
            first: vec![true; n],
            memory: vec![Vec::new(); n],
            rng: (0..n).map(|_| seed::agent_rng(0)).collect(),
            track: vec![Track::default(); n],
            started: if cfg.episode_starts.is_empty() { vec![0; n] } else { cfg.episode_starts.clone() },
            fails: vec![0; n],
            live: vec![false; n],
        };
        let checks = Checks::new(cfg.check, spec, &ol, &al);
        let record = record.map(|o| Recording::new(o, n, ol.row_bytes(), al.row_bytes()));
        Ok(Sampler {
            version: cfg.version,
            cfg,
            ol,
            al,
            envs,
            policy,
            slots,
            extras: Vec::new(),
            state_dim: 0,
            begun: false,
            checks,
            obs_buffers: ObsBuffers::default(),
            record,
        })
    }

    /// Whether the parts run ahead of each other (`Mode::Async` with more than one).
    fn ahead(&self) -> bool {
        self.cfg.mode == crate::Mode::Async && self.envs.parts.len() > 1
    }

    /// Collects one fragment. `stop` ends it early with [`Error::Stopped`].
    pub fn fragment(&mut self, versions: &Versions, stop: &AtomicBool) -> Result<Fragment> {
        let (t_len, n) = (self.cfg.steps, self.cfg.envs);
        let mut f = Fragment::with_capacity(t_len, n, self.ol.row_bytes(), self.al.row_bytes(), &self.obs_buffers);
        let clock = Instant::now();
        if !self.begun {
            let all: Vec<usize> = (0..n).collect();
            self.reset(&all, &mut f)?;
            self.begun = true;
        }
        self.with_parts(|s, parts| {
            for p in parts.iter_mut() {
                p.t = 0;
                s.snapshot(p, &mut f);
            }
        });
        // The widest state seen so far: a slot that just started has none yet.
        self.state_dim = self.slots.memory.iter().map(Vec::len).fold(self.state_dim, usize::max);
        f.state_dim = self.state_dim;
        f.state = vec![0.0; n * f.state_dim];
        for (row, m) in f.state.chunks_exact_mut(f.state_dim.max(1)).zip(&self.slots.memory) {
            row[..m.len()].copy_from_slice(m);
        }
        let made = if self.ahead() { self.run_ahead(&mut f, versions, stop) } else { self.rounds(&mut f, versions, stop) };
        // Episodes that ended before an error are still the sink's.
        let flushed = self.record.as_mut().map_or(Ok(()), Recording::flush);
        made.and(flushed)?;
        f.sort_finished();
        self.policy.pause();
        let s = &mut f.stats;
        s.wall_s = clock.elapsed().as_secs_f64();
        s.steps_per_s = (t_len * n) as f64 / s.wall_s.max(1e-9);
        s.mean_batch = (t_len * n) as f64 / s.batches.max(1) as f64;
        Ok(f)
    }

    /// The fragment's steps in lockstep: each a policy call on all N, then a round of every part.
    fn rounds(&mut self, f: &mut Fragment, versions: &Versions, stop: &AtomicBool) -> Result<()> {
        for _ in 0..self.cfg.steps {
            if stop.load(Ordering::Acquire) {
                return Err(Error::Stopped);
            }
            self.with_parts(|s, parts| s.act_step(f, versions, parts))?;
            let t1 = Instant::now();
            self.envs.round()?;
            let ended = self.with_parts(|s, parts| {
                let mut ended = Vec::new();
                parts.iter_mut().try_for_each(|p| s.end_step(p, f, &mut ended)).map(|()| ended)
            })?;
            // Before the resets, so that a sink that hands an episode's buffer back
            // has it back for the slot's next episode.
            if let Some(r) = self.record.as_mut() {
                r.flush()?;
            }
            self.reset(&ended, f)?;
            f.stats.env_s += t1.elapsed().as_secs_f64();
            self.with_parts(|s, parts| {
                for p in parts.iter_mut() {
                    p.t += 1;
                    s.snapshot(p, f);
                }
            });
        }
        Ok(())
    }

    /// Runs `body` on the parts held here, taken out of `envs` meanwhile (so that
    /// `body` may borrow the sampler too) and put back after, whatever it returns.
    pub(super) fn with_parts<R>(&mut self, body: impl FnOnce(&mut Self, &mut Vec<Box<Part>>) -> R) -> R {
        let mut parts = std::mem::take(&mut self.envs.parts);
        let r = body(self, &mut parts);
        self.envs.parts = parts;
        r
    }

    /// Applies the learner's updates, calls the policy on `parts` (held, by offset),
    /// puts the actions into the fragment, and sets each part's ops to a step of every env.
    pub(super) fn act_step(&mut self, f: &mut Fragment, versions: &Versions, parts: &mut [Box<Part>]) -> Result<()> {
        self.version = versions.apply(self.version, self.policy.as_mut())?;
        let t0 = Instant::now();
        self.act(parts)?;
        f.stats.policy_s += t0.elapsed().as_secs_f64();
        f.stats.batches += 1;
        self.record_actions(f, parts);
        for p in parts.iter_mut() {
            p.ops.clear();
            p.ops.extend((0..p.len()).map(|j| (j, Op::Step)));
        }
        Ok(())
    }

    /// Calls the policy once on the slots of `parts` (held, by offset), as one batch.
    fn act(&mut self, parts: &mut [Box<Part>]) -> Result<()> {
        let Slots { first, memory, rng, .. } = &mut self.slots;
        let (mut f, mut m, mut r) = (&first[..], &mut memory[..], &mut rng[..]);
        let (mut at, mut segments) = (0, Vec::with_capacity(parts.len()));
        for p in parts.iter_mut() {
            // Skip the slots of the parts not in this batch, then take this part's.
            let (skip, k) = (p.offset - at, p.len());
            let (f1, f2) = f[skip..].split_at(k);
            f = f2;
            let (m1, r1) = (next_slots(&mut m, skip, k), next_slots(&mut r, skip, k));
            at = p.offset + k;
            segments.push(Segment { obs: p.obs.bytes(), actions: p.act.bytes_mut(), first: f1, memory: m1, rng: r1 });
        }
        let mut batch = ActBatch { obs_layout: &self.ol, act_layout: &self.al, segments };
        let (policy, extras) = (&mut self.policy, &mut self.extras);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| policy.act(&mut batch, extras)));
        drop(batch);
        let message = match res {
            Ok(Ok(())) => return self.check_actions(parts).and_then(|()| self.check_extras(parts)),
            Ok(Err(rollway_core::Error::Action { row, message, .. })) => {
                return Err(Error::BadAction { message: format!("env slot {}: {message}", slot_of(parts, row)) })
            }
            Ok(Err(e)) => e.to_string(),
            Err(p) => format!("panicked: {}", crate::serial::panic_text(p)),
        };
        Err(Error::Policy { message })
    }

    /// The first action outside the action space, as the policy's error.
    fn check_actions(&self, parts: &[Box<Part>]) -> Result<()> {
        let Some(check) = &self.checks.act else { return Ok(()) };
        let ab = self.al.row_bytes();
        if parts.iter().all(|p| check.all_pass(p.act.bytes(), ab)) {
            return Ok(());
        }
        for p in parts {
            for j in 0..p.len() {
                if let Some(bad) = check.check(p.act.row(j)) {
                    return Err(Error::BadAction { message: format!("env slot {}: {}", p.offset + j, bad.describe("action")) });
                }
            }
        }
        Ok(())
    }

    fn check_extras(&self, parts: &[Box<Part>]) -> Result<()> {
        let n: usize = parts.iter().map(|p| p.len()).sum();
        match self.extras.iter().find(|e| e.values.len() != n * e.width()) {
            Some(e) => Err(Error::Policy {
                message: format!(
                    "extra `{}` has {} values; {n} envs of shape {:?} take {}",
                    e.name,
                    e.values.len(),
                    e.shape,
                    n * e.width()
                ),
            }),
            None => Ok(()),
        }
    }

    /// Puts the batch's actions, version and extras at each part's `(t, slot)` rows.
    fn record_actions(&mut self, f: &mut Fragment, parts: &[Box<Part>]) {
        let (n, ab) = (self.cfg.envs, self.al.row_bytes());
        if f.extras.is_empty() {
            let rows = self.cfg.steps * n;
            let column = |e: &Extra| Extra { name: e.name.clone(), shape: e.shape.clone(), values: vec![0.0; rows * e.width()] };
            f.extras = self.extras.iter().map(column).collect();
        }
        let mut row = 0;
        for p in parts {
            let (at, k) = (p.t * n + p.offset, p.len());
            f.actions[at * ab..(at + k) * ab].copy_from_slice(p.act.bytes());
            f.version[at..at + k].fill(self.version);
            for (col, e) in f.extras.iter_mut().zip(&self.extras) {
                let w = e.width();
                col.values[at * w..(at + k) * w].copy_from_slice(&e.values[row * w..(row + k) * w]);
            }
            if let Some(r) = self.record.as_mut() {
                for j in 0..k {
                    let g = p.offset + j;
                    r.act(g, p.act.row(j), &self.slots.memory[g], self.version, &self.extras, row + j);
                }
            }
            row += k;
        }
    }

    /// Puts `p`'s current observations, `first` flags and episode ids at its step's rows.
    pub(super) fn snapshot(&self, p: &Part, f: &mut Fragment) {
        let (n, ob) = (self.cfg.envs, self.ol.row_bytes());
        let (at, k, s) = (p.t * n + p.offset, p.len(), p.offset);
        f.obs[at * ob..(at + k) * ob].copy_from_slice(p.obs.bytes());
        f.first[at..at + k].copy_from_slice(&self.slots.first[s..s + k]);
        for (e, tr) in f.episode[at..at + k].iter_mut().zip(&self.slots.track[s..s + k]) {
            *e = tr.id;
        }
    }

    /// Reads `p`'s step results into the fragment; the slots whose episode ended
    /// (or whose env failed) go into `ended`, to be reset.
    pub(super) fn end_step(&mut self, p: &mut Part, f: &mut Fragment, ended: &mut Vec<usize>) -> Result<()> {
        let (n, t) = (self.cfg.envs, p.t);
        let obs_ok = self.checks.obs_ok(&p.obs);
        for (&(j, _), res) in p.ops.iter().zip(p.results.drain(..)) {
            let (g, at) = (p.offset + j, t * n + p.offset + j);
            let s = &mut self.slots;
            let res = res.and_then(|out| self.checks.env(p.obs.row(j), Some(out.reward), obs_ok, &mut f.warnings).map(|()| out));
            match res {
                Ok(out) => {
                    let tr = &mut s.track[g];
                    (tr.ret, tr.len, s.fails[g]) = (tr.ret + out.reward, tr.len + 1, 0);
                    // As Gymnasium's TimeLimit: the limit truncates, even a step that also terminates.
                    let cut = self.cfg.max_steps.is_some_and(|m| tr.len >= m);
                    f.rewards[at] = out.reward as f32;
                    (f.terminated[at], f.truncated[at]) = (out.terminated, out.truncated || cut);
                    s.first[g] = false;
                    let done = out.terminated || out.truncated || cut;
                    let info = if done { p.block.info(j) } else { Default::default() };
                    if let Some(r) = self.record.as_mut() {
                        r.step(g, out.reward, out.terminated, out.truncated || cut, p.obs.row(j));
                        if done {
                            r.end(g, tr.id, p.index, info.clone(), t);
                        }
                    }
                    if done {
                        let (episode, ret, length, terminated) = (tr.id, tr.ret, tr.len, out.terminated);
                        f.finished.push(Finished { env: g, episode, ret, length, terminated, step: t, info });
                        f.final_obs.extend_from_slice(p.obs.row(j));
                        ended.push(g);
                    }
                }
                Err(fault) => {
                    if let Some(r) = self.record.as_mut() {
                        r.abandon(g);
                    }
                    f.truncated[at] = true;
                    f.stats.env_faults += 1;
                    (s.fails[g], s.live[g]) = (s.fails[g] + 1, false);
                    check_fails(s.fails[g], self.cfg.max_restarts, g, &fault.error)?;
                    ended.push(g);
                }
            }
        }
        Ok(())
    }

    /// Starts each slot's next episode, retrying resets that fail (each a fault).
    fn reset(&mut self, slots: &[usize], f: &mut Fragment) -> Result<()> {
        let mut todo = slots.to_vec();
        while !todo.is_empty() {
            self.with_parts(|s, parts| parts.iter_mut().for_each(|p| s.begin_reset(p, &todo)));
            todo.clear();
            self.envs.round()?;
            self.with_parts(|s, parts| parts.iter_mut().try_for_each(|p| s.end_reset(p, f, &mut todo)))?;
        }
        Ok(())
    }

    /// Sets `p`'s ops to reset those of `slots` (global) it holds, each starting its next episode.
    pub(super) fn begin_reset(&mut self, p: &mut Part, slots: &[usize]) {
        p.ops.clear();
        let mine = p.offset..p.offset + p.len();
        for &g in slots.iter().filter(|&&g| mine.contains(&g)) {
            let s = &mut self.slots;
            let id = self.cfg.episode_id(g, s.started[g]);
            s.started[g] += 1;
            s.track[g] = Track { id, ret: 0.0, len: 0 };
            let continues = s.live[g] && !self.cfg.seed_each_episode;
            p.ops.push((g - p.offset, Op::Reset((!continues).then(|| seed::episode_seed(self.cfg.seed, id)))));
        }
    }

    /// Reads `p`'s reset results; the slots whose reset failed go into `todo`, to be tried again.
    pub(super) fn end_reset(&mut self, p: &mut Part, f: &mut Fragment, todo: &mut Vec<usize>) -> Result<()> {
        let obs_ok = self.checks.obs_ok(&p.obs);
        for (&(j, op), res) in p.ops.iter().zip(p.results.drain(..)) {
            let (g, s) = (p.offset + j, &mut self.slots);
            debug_assert!(matches!(op, Op::Reset(_)), "only resets here");
            // The agent's stream is the episode's either way; the env's is its own when it continues.
            let episode_seed = seed::episode_seed(self.cfg.seed, s.track[g].id);
            match res.and_then(|_| self.checks.env(p.obs.row(j), None, obs_ok, &mut f.warnings)) {
                Ok(_) => {
                    (s.first[g], s.rng[g], s.live[g]) = (true, seed::agent_rng(episode_seed), true);
                    s.memory[g].clear();
                    if let Some(r) = self.record.as_mut() {
                        r.begin(g, episode_seed, p.obs.row(j));
                    }
                }
                Err(fault) => {
                    f.stats.env_faults += 1;
                    (s.fails[g], s.live[g]) = (s.fails[g] + 1, false);
                    check_fails(s.fails[g], self.cfg.max_restarts, g, &fault.error)?;
                    todo.push(g);
                }
            }
        }
        Ok(())
    }
}

/// Takes `k` slots after skipping `skip` off the front of `rest`, which keeps what follows.
fn next_slots<'a, T>(rest: &mut &'a mut [T], skip: usize, k: usize) -> &'a mut [T] {
    let (mine, after) = std::mem::take(rest).split_at_mut(skip).1.split_at_mut(k);
    *rest = after;
    mine
}

/// The slot of row `row` of a batch of `parts`.
fn slot_of(parts: &[Box<Part>], row: usize) -> usize {
    let mut left = row;
    for p in parts {
        if left < p.len() {
            return p.offset + left;
        }
        left -= p.len();
    }
    row
}

fn check_fails(fails: u32, max_restarts: u32, slot: usize, error: &str) -> Result<()> {
    if fails > max_restarts {
        return Err(Error::EnvGaveUp { slot, failures: fails, last: error.to_string() });
    }
    Ok(())
}
