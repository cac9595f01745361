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

use super::envs::Envs;
use super::fragment::{Finished, Fragment, ObsBuffers};
use super::record::Recording;
use super::{EpisodeIds, Extra, Policy, RolloutConfig, Versions};
use crate::{Error, Result};

/// The episode a slot is running.
#[derive(Clone, Copy, Default)]
struct Track {
    id: u64,
    ret: f64,
    len: u64,
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
    cfg: Arc<RolloutConfig>,
    ol: Arc<Layout>,
    al: Arc<Layout>,
    envs: Envs,
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
    record: Option<Recording>,
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
        let envs = Envs::new(factory, cfg.envs, cfg.workers, &ol, &al, options)?;
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
        self.snapshot(&mut f);
        // The widest state seen so far: a slot that just started has none yet.
        self.state_dim = self.slots.memory.iter().map(Vec::len).fold(self.state_dim, usize::max);
        f.state_dim = self.state_dim;
        f.state = vec![0.0; n * f.state_dim];
        for (row, m) in f.state.chunks_exact_mut(f.state_dim.max(1)).zip(&self.slots.memory) {
            row[..m.len()].copy_from_slice(m);
        }
        for t in 0..t_len {
            if stop.load(Ordering::Acquire) {
                return Err(Error::Stopped);
            }
            self.version = versions.apply(self.version, self.policy.as_mut())?;
            let t0 = Instant::now();
            self.act()?;
            f.stats.policy_s += t0.elapsed().as_secs_f64();
            f.stats.batches += 1;
            self.record_actions(&mut f, t);
            let t1 = Instant::now();
            self.step(&mut f, t)?;
            f.stats.env_s += t1.elapsed().as_secs_f64();
            self.snapshot(&mut f);
        }
        self.policy.pause();
        let s = &mut f.stats;
        s.wall_s = clock.elapsed().as_secs_f64();
        s.steps_per_s = (t_len * n) as f64 / s.wall_s.max(1e-9);
        s.mean_batch = n as f64;
        Ok(f)
    }

    /// Calls the policy once on every slot.
    fn act(&mut self) -> Result<()> {
        let Slots { first, memory, rng, .. } = &mut self.slots;
        let (mut f, mut m, mut r) = (&first[..], &mut memory[..], &mut rng[..]);
        let mut segments = Vec::with_capacity(self.envs.parts.len());
        for p in self.envs.parts.iter_mut() {
            let k = p.len();
            let (f1, f2) = f.split_at(k);
            let (m1, m2) = std::mem::take(&mut m).split_at_mut(k);
            let (r1, r2) = std::mem::take(&mut r).split_at_mut(k);
            (f, m, r) = (f2, m2, r2);
            segments.push(Segment { obs: p.obs.bytes(), actions: p.act.bytes_mut(), first: f1, memory: m1, rng: r1 });
        }
        let mut batch = ActBatch { obs_layout: &self.ol, act_layout: &self.al, segments };
        let (policy, extras) = (&mut self.policy, &mut self.extras);
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| policy.act(&mut batch, extras)));
        drop(batch);
        let message = match res {
            Ok(Ok(())) => return self.check_actions().and_then(|()| self.check_extras()),
            // Batch rows are the rollout's slots, in order.
            Ok(Err(rollway_core::Error::Action { row, message, .. })) => {
                return Err(Error::BadAction { message: format!("env slot {row}: {message}") })
            }
            Ok(Err(e)) => e.to_string(),
            Err(p) => format!("panicked: {}", crate::serial::panic_text(p)),
        };
        Err(Error::Policy { message })
    }

    /// The first action outside the action space, as the policy's error.
    fn check_actions(&self) -> Result<()> {
        let Some(check) = &self.checks.act else { return Ok(()) };
        let ab = self.al.row_bytes();
        if self.envs.parts.iter().all(|p| check.all_pass(p.act.bytes(), ab)) {
            return Ok(());
        }
        for p in &self.envs.parts {
            for j in 0..p.len() {
                if let Some(bad) = check.check(p.act.row(j)) {
                    return Err(Error::BadAction { message: format!("env slot {}: {}", p.offset + j, bad.describe("action")) });
                }
            }
        }
        Ok(())
    }

    fn check_extras(&self) -> Result<()> {
        let n = self.cfg.envs;
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

    fn record_actions(&mut self, f: &mut Fragment, t: usize) {
        for p in &self.envs.parts {
            f.actions.extend_from_slice(p.act.bytes());
        }
        f.version.extend(std::iter::repeat_n(self.version, self.cfg.envs));
        if t == 0 {
            let rows = self.cfg.steps * self.cfg.envs;
            f.extras = self
                .extras
                .iter()
                .map(|e| Extra { name: e.name.clone(), shape: e.shape.clone(), values: Vec::with_capacity(rows * e.width()) })
                .collect();
        }
        for (col, e) in f.extras.iter_mut().zip(&self.extras) {
            col.values.extend_from_slice(&e.values);
        }
        if let Some(r) = self.record.as_mut() {
            for p in &self.envs.parts {
                for j in 0..p.len() {
                    let g = p.offset + j;
                    r.act(g, p.act.row(j), &self.slots.memory[g], self.version, &self.extras, g);
                }
            }
        }
    }

    /// Appends the slots' current observations, `first` flags and episode ids.
    fn snapshot(&self, f: &mut Fragment) {
        for p in &self.envs.parts {
            f.obs.extend_from_slice(p.obs.bytes());
        }
        f.first.extend_from_slice(&self.slots.first);
        f.episode.extend(self.slots.track.iter().map(|t| t.id));
    }

    /// Steps every slot with its action, then resets those whose episode ended.
    fn step(&mut self, f: &mut Fragment, t: usize) -> Result<()> {
        for p in self.envs.parts.iter_mut() {
            p.ops.clear();
            p.ops.extend((0..p.len()).map(|j| (j, Op::Step)));
        }
        self.envs.round()?;
        let n = self.cfg.envs;
        let mut ended = Vec::new();
        for p in self.envs.parts.iter_mut() {
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
                                r.end(g, tr.id, p.index, info.clone())?;
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
        }
        self.reset(&ended, f)
    }

    /// Starts each slot's next episode, retrying resets that fail (each a fault).
    fn reset(&mut self, slots: &[usize], f: &mut Fragment) -> Result<()> {
        let n = self.cfg.envs;
        let mut todo = slots.to_vec();
        while !todo.is_empty() {
            for p in self.envs.parts.iter_mut() {
                p.ops.clear();
            }
            for &g in &todo {
                let s = &mut self.slots;
                let ids = self.cfg.episode_ids.unwrap_or(EpisodeIds { base: 0, offset: 0, slots: n as u64 });
                let id = (ids.base + s.started[g]) * ids.slots + ids.offset + g as u64;
                s.started[g] += 1;
                s.track[g] = Track { id, ret: 0.0, len: 0 };
                let p = self.envs.parts.iter_mut().rfind(|p| p.offset <= g).expect("a part holds every slot");
                let continues = s.live[g] && !self.cfg.seed_each_episode;
                p.ops.push((g - p.offset, Op::Reset((!continues).then(|| seed::episode_seed(self.cfg.seed, id)))));
            }
            todo.clear();
            self.envs.round()?;
            for p in self.envs.parts.iter_mut() {
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
            }
        }
        Ok(())
    }
}

fn check_fails(fails: u32, max_restarts: u32, slot: usize, error: &str) -> Result<()> {
    if fails > max_restarts {
        return Err(Error::EnvGaveUp { slot, failures: fails, last: error.to_string() });
    }
    Ok(())
}
