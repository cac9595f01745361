//! Worker threads: each owns `envs_per_worker` envs (built with the run's env
//! factory, on first use and after a failure) split into one or two blocks, steps
//! a block when its actions come back from the central stage, starts new episodes
//! in freed slots, and turns env panics and errors into failed attempts.
//!
//! A block (observation rows, action rows, first flags, agent memory and random
//! streams) moves between the worker and the central stage by ownership, so no
//! observation is copied on its way to the agent and nothing is shared mutably.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use rollway_core::{seed, AgentRng, Env, EnvFactory, Info, Layout, Memory, RowMut, RowRef, Rows};

use rollway_core::episode::{EpisodeResult, Fault, Status, Trajectory};
use crate::schedule::{Pending, Schedule};
use crate::RunConfig;

/// The agent-facing half of a block of env slots.
pub(crate) struct AgentBlock {
    pub worker: usize,
    pub local: usize,
    pub obs: Rows,
    pub act: Rows,
    pub first: Vec<bool>,
    pub memory: Vec<Memory>,
    pub rng: Vec<AgentRng>,
    /// Set by the central stage when the agent failed on this block.
    pub abort: Option<String>,
    /// Episodes that ended since the block last went to the central stage. They
    /// travel with the block so finishing an episode costs no message of its own.
    pub finished: Vec<EpisodeResult>,
    /// Failed attempts since then.
    pub faults: Vec<Fault>,
    /// Env rebuilds since then.
    pub restarts: u64,
}

impl AgentBlock {
    pub fn new(worker: usize, local: usize, n: usize, obs: &Layout, act: &Layout) -> Box<AgentBlock> {
        Box::new(AgentBlock {
            worker,
            local,
            obs: Rows::new(obs.row_bytes(), n),
            act: Rows::new(act.row_bytes(), n),
            first: vec![false; n],
            memory: vec![Vec::new(); n],
            rng: (0..n).map(|_| seed::agent_rng(0)).collect(),
            abort: None,
            finished: Vec::new(),
            faults: Vec::new(),
            restarts: 0,
        })
    }

    pub fn len(&self) -> usize {
        self.first.len()
    }
}

/// Worker → central.
pub(crate) enum Up {
    /// Observations ready for actions.
    Ready(Box<AgentBlock>),
    /// Nothing to run in this block now.
    Idle(Box<AgentBlock>),
    /// The worker used up its restarts; this block is out of the run.
    Retired(Box<AgentBlock>),
}

/// Central → worker.
pub(crate) enum Down {
    /// Actions filled in: step the block.
    Act(Box<AgentBlock>),
    /// Retries are waiting: an idle block should take them.
    Wake(Box<AgentBlock>),
}

pub(crate) struct WorkerCtx {
    pub worker: usize,
    pub cfg: Arc<RunConfig>,
    pub envs: Arc<dyn EnvFactory>,
    pub obs_layout: Arc<Layout>,
    pub act_layout: Arc<Layout>,
    pub sched: Arc<Schedule>,
    pub up: Sender<Up>,
    pub down: Receiver<Down>,
    // Boxed like every block in flight: blocks move through the channels by pointer.
    #[allow(clippy::vec_box)]
    pub blocks: Vec<Box<AgentBlock>>,
}

struct Running {
    p: Pending,
    seed: u64,
    length: u64,
    ret: f64,
    started: Instant,
    // Boxed: slots are scanned every step and most runs record nothing.
    traj: Option<Box<Trajectory>>,
}

struct Worker {
    ctx: WorkerCtx,
    envs: Vec<Vec<Option<Box<dyn Env>>>>,
    slots: Vec<Vec<Option<Running>>>,
    restarts: u32,
    retired: bool,
}

fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned()).unwrap_or_else(|| "panic".into())
}

/// Runs `f`, turning both errors and panics into a message.
fn guarded<T>(f: impl FnOnce() -> rollway_core::Result<T>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(format!("panicked: {}", panic_text(p))),
    }
}

pub(crate) fn run(mut ctx: WorkerCtx) {
    let blocks = std::mem::take(&mut ctx.blocks);
    let mut w = Worker { envs: Vec::new(), slots: Vec::new(), restarts: 0, retired: false, ctx };
    for b in &blocks {
        w.slots.push((0..b.len()).map(|_| None).collect());
        w.envs.push((0..b.len()).map(|_| None).collect());
    }
    for mut b in blocks {
        for j in 0..b.len() {
            w.begin(&mut b, j, None);
        }
        w.send(b);
    }
    while let Ok(msg) = w.ctx.down.recv() {
        match msg {
            Down::Act(b) => w.step_block(b),
            Down::Wake(mut b) => {
                for j in 0..b.len() {
                    if w.slots[b.local][j].is_none() {
                        w.begin(&mut b, j, None);
                    }
                }
                w.send(b);
            }
        }
    }
}

impl Worker {
    fn send(&mut self, mut b: Box<AgentBlock>) {
        let msg = if self.retired {
            for j in 0..b.len() {
                if let Some(r) = self.slots[b.local][j].take() {
                    // Interrupted mid-episode: that attempt is spent; another worker retries.
                    let msg = format!("worker {} retired after {} restarts", self.ctx.worker, self.restarts);
                    let next = self.after_failure(&mut b, r.p, msg, None);
                    if let Some(p) = next {
                        self.ctx.sched.requeue(p);
                    }
                }
            }
            Up::Retired(b)
        } else if self.slots[b.local].iter().any(Option::is_some) {
            Up::Ready(b)
        } else {
            Up::Idle(b)
        };
        // The central stage only hangs up after the run ended; nothing is left to report then.
        let _ = self.ctx.up.send(msg);
    }

    fn step_block(&mut self, mut b: Box<AgentBlock>) {
        let (ol, al) = (self.ctx.obs_layout.clone(), self.ctx.act_layout.clone());
        let cfg = self.ctx.cfg.clone();
        let l = b.local;
        for j in 0..b.len() {
            if self.retired {
                break;
            }
            if self.slots[l][j].is_none() {
                self.begin(&mut b, j, None);
                continue;
            }
            if let Some(msg) = b.abort.clone() {
                let r = self.slots[l][j].take().expect("slot is running");
                let next = self.after_failure(&mut b, r.p, format!("agent: {msg}"), None);
                self.begin(&mut b, j, next);
                continue;
            }
            let env = self.envs[l][j].as_mut().expect("running slot has an env");
            let (act, obs) = (b.act.row(j), b.obs.row_mut(j));
            let out = match guarded(|| env.step(RowRef::new(&al, act), RowMut::new(&ol, obs))) {
                Ok(out) => out,
                Err(msg) => {
                    let r = self.slots[l][j].take().expect("slot is running");
                    let next = self.after_failure(&mut b, r.p, msg, Some((l, j)));
                    self.begin(&mut b, j, next);
                    continue;
                }
            };
            let run = self.slots[l][j].as_mut().expect("slot is running");
            run.length += 1;
            run.ret += out.reward;
            let cut = cfg.max_steps.is_some_and(|m| run.length >= m);
            let truncated = out.truncated || (cut && !out.terminated);
            if let Some(t) = &mut run.traj {
                t.actions.extend_from_slice(b.act.row(j));
                t.obs.extend_from_slice(b.obs.row(j));
                t.rewards.push(out.reward);
                t.terminations.push(out.terminated);
                t.truncations.push(truncated);
                t.push_state(&b.memory[j]);
                if cfg.record_infos {
                    t.infos.push(self.envs[l][j].as_ref().map(|e| e.info()).unwrap_or_default());
                }
            }
            if out.terminated || truncated {
                self.finish(&mut b, j, if out.terminated { Status::Terminated } else { Status::Truncated });
                self.begin(&mut b, j, None);
            } else {
                b.first[j] = false;
            }
        }
        b.abort = None;
        self.send(b);
    }

    /// Starts `next` (or the schedule's next episode) in slot `j`, retrying resets that fail.
    fn begin(&mut self, b: &mut AgentBlock, j: usize, mut next: Option<Pending>) {
        let l = b.local;
        loop {
            if self.retired {
                if let Some(p) = next {
                    self.ctx.sched.requeue(p);
                }
                return;
            }
            let Some(p) = next.take().or_else(|| self.ctx.sched.take()) else { return };
            let episode_seed = seed::episode_seed(self.ctx.cfg.seed, p.index);
            let ol = self.ctx.obs_layout.clone();
            let res = self.env(l, j).and_then(|env| guarded(|| env.reset(Some(episode_seed), None, RowMut::new(&ol, b.obs.row_mut(j)))));
            match res {
                Ok(()) => {
                    b.first[j] = true;
                    b.memory[j].clear();
                    b.rng[j] = seed::agent_rng(episode_seed);
                    let traj = self.ctx.cfg.record_steps.then(|| {
                        // Sized for a typical episode up front, so recording does not grow by reallocation.
                        let cap = 64;
                        let (ob, ab) = (b.obs.row_bytes(), b.act.row_bytes());
                        let mut obs = Vec::with_capacity(ob * (cap + 1));
                        obs.extend_from_slice(b.obs.row(j));
                        let mut t = Box::new(Trajectory {
                            obs,
                            actions: Vec::with_capacity(ab * cap),
                            rewards: Vec::with_capacity(cap),
                            terminations: Vec::with_capacity(cap),
                            truncations: Vec::with_capacity(cap),
                            infos: Vec::new(),
                            ..Default::default()
                        });
                        if self.ctx.cfg.record_infos {
                            t.infos.push(self.envs[l][j].as_ref().map(|e| e.info()).unwrap_or_default());
                        }
                        t
                    });
                    self.slots[l][j] = Some(Running { p, seed: episode_seed, length: 0, ret: 0.0, started: Instant::now(), traj });
                    return;
                }
                Err(msg) => next = self.after_failure(b, p, msg, Some((l, j))),
            }
        }
    }

    /// The env of a slot, built on first use.
    fn env(&mut self, l: usize, j: usize) -> Result<&mut Box<dyn Env>, String> {
        if self.envs[l][j].is_none() {
            let factory = &self.ctx.envs;
            let env = guarded(|| factory.make())?;
            self.envs[l][j] = Some(env);
        }
        Ok(self.envs[l][j].as_mut().expect("just built"))
    }

    /// Records a failed attempt, drops the failed env (if any) so it is rebuilt,
    /// and says what to run next in its place: the retry, or nothing if given up.
    fn after_failure(&mut self, b: &mut AgentBlock, p: Pending, msg: String, env_slot: Option<(usize, usize)>) -> Option<Pending> {
        b.faults.push(Fault { episode: p.index, attempt: p.attempt, worker: Some(self.ctx.worker), error: msg.clone() });
        if let Some((l, j)) = env_slot {
            self.envs[l][j] = None;
            b.restarts += 1;
            self.restart();
        }
        if p.attempt >= self.ctx.cfg.max_attempts {
            b.finished.push(given_up(self.ctx.cfg.seed, p.index, p.attempt, self.ctx.worker, msg));
            return None;
        }
        Some(Pending { index: p.index, attempt: p.attempt + 1 })
    }

    fn restart(&mut self) {
        self.restarts += 1;
        if self.restarts > self.ctx.cfg.max_restarts {
            self.retired = true;
            return;
        }
        // Back off like an actor supervisor: a crashing simulator often needs a moment.
        let base = self.ctx.cfg.restart_backoff.as_secs_f64() * 2f64.powi(self.restarts as i32 - 1);
        std::thread::sleep(Duration::from_secs_f64(base.min(2.0)));
    }

    fn finish(&mut self, b: &mut AgentBlock, j: usize, status: Status) {
        let l = b.local;
        let r = self.slots[l][j].take().expect("slot is running");
        let info = self.envs[l][j].as_ref().map(|e| guarded(|| Ok(e.info())).unwrap_or_default()).unwrap_or_default();
        let ep = EpisodeResult {
            index: r.p.index,
            seed: r.seed,
            length: r.length,
            ret: r.ret,
            status,
            labels: Vec::new(),
            info,
            worker: self.ctx.worker,
            attempt: r.p.attempt,
            wall_ms: r.started.elapsed().as_secs_f64() * 1e3,
            error: None,
            trajectory: r.traj,
        };
        b.finished.push(ep);
    }
}

/// The record of an episode that will not be run again.
fn given_up(run_seed: u64, index: u64, attempts: u32, worker: usize, error: String) -> EpisodeResult {
    EpisodeResult {
        index,
        seed: seed::episode_seed(run_seed, index),
        length: 0,
        ret: 0.0,
        status: Status::GivenUp,
        labels: Vec::new(),
        info: Info::new(),
        worker,
        attempt: attempts,
        wall_ms: 0.0,
        error: Some(error),
        trajectory: None,
    }
}
