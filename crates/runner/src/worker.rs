//! Worker threads: each owns `envs_per_worker` env slots split into one or two
//! blocks, steps a block when its actions come back from the central stage (one
//! [`EnvBlock`] round for all its running slots), starts new episodes in freed
//! slots (one round of resets), and turns failed ops into failed attempts. The envs
//! themselves sit behind the run's env factory: in this thread ([`Serial`]) or in a
//! host of the factory's own, such as a Python process.
//!
//! A block (observation rows, action rows, first flags, agent memory and random
//! streams) moves between the worker and the central stage by ownership, so no
//! observation is copied on its way to the agent and nothing is shared mutably.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use rollway_core::check::{check_reward, Role, RowCheck};
use rollway_core::{
    seed, AgentRng, BlockOptions, EnvBlock, EnvFactory, Info, InfoNeed, Layout, Memory, Op, Recycler, Rows, SlotResult, StepOutcome,
};

use crate::schedule::{Pending, Schedule};
use crate::serial::Serial;
use crate::RunConfig;
use rollway_core::episode::{EpisodeResult, Fault, Status, StepColumn, Trajectory};

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
    /// Warnings about the envs' values since then (each kind once per worker).
    pub warnings: Vec<String>,
    /// The agent's extras for this block's rows, from its last call (recorded runs only).
    pub extras: Vec<StepColumn>,
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
            extras: Vec::new(),
            warnings: Vec::new(),
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
    /// Where recorded episodes' observation buffers come back for reuse.
    pub recycle: Recycler,
    pub up: Sender<Up>,
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

/// A slot to start an episode in: the retry it owes, or the schedule's next.
type Start = (usize, Option<Pending>);

/// One worker's envs and books: run by its own thread ([`run`]), or by the central
/// stage itself ([`crate::pool::Pool`] in sync runs).
pub(crate) struct Worker {
    ctx: WorkerCtx,
    envs: Vec<Box<dyn EnvBlock>>,
    slots: Vec<Vec<Option<Running>>>,
    /// Restarts in a row: since the worker's last finished episode.
    restarts: u32,
    retired: bool,
    /// The failure that cost the last restart: what a retired worker's message names as the cause.
    last_failure: String,
    /// The observation check, when the run checks and the space has anything to check.
    obs_check: Option<RowCheck>,
    /// Warnings given (by `Problem::key`): each kind once.
    warned: HashSet<String>,
    // Reused between rounds so a step allocates nothing.
    ops: Vec<(usize, Op)>,
    results: Vec<SlotResult>,
}

/// A worker thread: starts its blocks, then steps what the central stage sends
/// until it hangs up.
pub(crate) fn run(ctx: WorkerCtx, down: Receiver<Down>, wait: crate::spin::Wait) {
    let mut w = Worker::new(ctx);
    w.start();
    while let Ok(msg) = wait.recv(&down) {
        w.handle(msg);
    }
}

impl Worker {
    /// Builds the env blocks (none is reset yet: see [`Worker::start`]).
    pub fn new(ctx: WorkerCtx) -> Worker {
        let cfg = &ctx.cfg;
        let infos = if cfg.record_infos { InfoNeed::All } else { InfoNeed::Final };
        let options = BlockOptions { infos, step_timeout: cfg.step_timeout, cut: cfg.max_steps };
        let serial = |n| Box::new(Serial::new(ctx.envs.clone(), n, ctx.obs_layout.clone(), ctx.act_layout.clone())) as Box<dyn EnvBlock>;
        let envs = ctx.blocks.iter().map(|b| ctx.envs.block(b.len(), options).unwrap_or_else(|| serial(b.len()))).collect();
        let slots = ctx.blocks.iter().map(|b| (0..b.len()).map(|_| None).collect()).collect();
        let obs_check = Some(RowCheck::new(&ctx.obs_layout, Role::Observation)).filter(|c| cfg.check && !c.is_empty());
        let warned = HashSet::new();
        Worker {
            envs,
            slots,
            restarts: 0,
            retired: false,
            last_failure: String::new(),
            obs_check,
            warned,
            ops: Vec::new(),
            results: Vec::new(),
            ctx,
        }
    }

    /// Starts an episode in every slot and sends the blocks up; once (the blocks
    /// are then out, and a later call has none to start).
    pub fn start(&mut self) {
        for mut b in std::mem::take(&mut self.ctx.blocks) {
            let all = (0..b.len()).map(|j| (j, None)).collect();
            self.begin(&mut b, all);
            self.send(b);
        }
    }

    /// Does what the central stage asked; the block goes back up.
    pub fn handle(&mut self, msg: Down) {
        match msg {
            Down::Act(b) => self.step_block(b),
            Down::Wake(mut b) => {
                let free = (0..b.len()).filter(|&j| self.slots[b.local][j].is_none()).map(|j| (j, None)).collect();
                self.begin(&mut b, free);
                self.send(b);
            }
        }
    }

    fn send(&mut self, mut b: Box<AgentBlock>) {
        let msg = if self.retired {
            for j in 0..b.len() {
                if let Some(r) = self.slots[b.local][j].take() {
                    // Interrupted mid-episode: that attempt is spent; another worker retries.
                    let msg = format!(
                        "worker {} retired after {} restarts in a row; the last: {}",
                        self.ctx.worker, self.restarts, self.last_failure
                    );
                    let next = self.after_failure(&mut b, r.p, msg, false);
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

    /// Steps every running slot of `b` in one round, books the outcomes, and starts
    /// episodes in the slots that ended or were free.
    fn step_block(&mut self, mut b: Box<AgentBlock>) {
        let l = b.local;
        let mut starts: Vec<Start> = Vec::new();
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        let abort = b.abort.take();
        for j in 0..b.len() {
            match (&self.slots[l][j], &abort) {
                (None, _) => starts.push((j, None)),
                (Some(_), Some(msg)) => {
                    let r = self.slots[l][j].take().expect("slot is running");
                    let next = self.after_failure(&mut b, r.p, format!("agent: {msg}"), false);
                    starts.push((j, next));
                }
                (Some(_), None) => ops.push((j, Op::Step)),
            }
        }
        let mut results = std::mem::take(&mut self.results);
        if !ops.is_empty() && !self.retired {
            self.envs[l].run(&ops, &b.act, &mut b.obs, &mut results);
        }
        let obs_ok = self.obs_ok(&b);
        for (&(j, _), res) in ops.iter().zip(results.drain(..)) {
            if self.retired {
                // `send` fails what is still running.
                break;
            }
            let res = res.and_then(|out| self.check_env(&mut b, j, Some(out.reward), obs_ok).map(|()| out));
            match res {
                Ok(out) if self.book_step(&mut b, j, out) => starts.push((j, None)),
                Ok(_) => {}
                Err(f) => {
                    let r = self.slots[l][j].take().expect("slot is running");
                    let next = self.after_failure(&mut b, r.p, f.error, f.restarted);
                    starts.push((j, next));
                }
            }
        }
        (self.ops, self.results) = (ops, results);
        starts.sort_unstable_by_key(|s| s.0);
        self.begin(&mut b, starts);
        self.send(b);
    }

    /// Books a successful step of slot `j`; true when its episode ended.
    fn book_step(&mut self, b: &mut AgentBlock, j: usize, out: StepOutcome) -> bool {
        let (l, cfg) = (b.local, &self.ctx.cfg);
        let run = self.slots[l][j].as_mut().expect("slot is running");
        run.length += 1;
        run.ret += out.reward;
        let cut = cfg.max_steps.is_some_and(|m| run.length >= m);
        // As Gymnasium's TimeLimit: the limit truncates, even a step that also terminates.
        let truncated = out.truncated || cut;
        if let Some(t) = &mut run.traj {
            t.actions.extend_from_slice(b.act.row(j));
            t.obs.extend_from_slice(b.obs.row(j));
            t.rewards.push(out.reward);
            t.terminations.push(out.terminated);
            t.truncations.push(truncated);
            t.push_state(&b.memory[j]);
            if !b.extras.is_empty() {
                t.push_extras(&b.extras, j);
            }
            if cfg.record_infos {
                t.infos.push(self.envs[l].info(j));
            }
        }
        if out.terminated || truncated {
            self.finish(b, j, if out.terminated { Status::Terminated } else { Status::Truncated });
            return true;
        }
        b.first[j] = false;
        false
    }

    /// Starts an episode in each slot of `starts` (its retry, or the schedule's
    /// next), resetting them a round at a time and retrying resets that fail.
    fn begin(&mut self, b: &mut AgentBlock, mut starts: Vec<Start>) {
        let l = b.local;
        let mut pending = Vec::new();
        while !starts.is_empty() {
            let mut ops = std::mem::take(&mut self.ops);
            ops.clear();
            pending.clear();
            for (j, next) in starts.drain(..) {
                if self.retired {
                    if let Some(p) = next {
                        self.ctx.sched.requeue(p);
                    }
                    continue;
                }
                let Some(p) = next.or_else(|| self.ctx.sched.take()) else { continue };
                ops.push((j, Op::Reset(Some(seed::episode_seed(self.ctx.cfg.seed, p.index)))));
                pending.push(p);
            }
            let mut results = std::mem::take(&mut self.results);
            if !ops.is_empty() {
                self.envs[l].run(&ops, &b.act, &mut b.obs, &mut results);
            }
            let obs_ok = self.obs_ok(b);
            for ((&(j, op), res), p) in ops.iter().zip(results.drain(..)).zip(pending.drain(..)) {
                let Op::Reset(Some(episode_seed)) = op else { unreachable!("only seeded resets here") };
                match res.and_then(|_| self.check_env(b, j, None, obs_ok)) {
                    Ok(_) => self.started(b, j, p, episode_seed),
                    Err(f) => {
                        let next = self.after_failure(b, p, f.error, f.restarted);
                        starts.push((j, next));
                    }
                }
            }
            (self.ops, self.results) = (ops, results);
        }
    }

    /// True when every observation row of `b` passes the check's quick tests (or
    /// nothing is checked): one pass over the block, so a round of good rows costs
    /// no call per row.
    fn obs_ok(&self, b: &AgentBlock) -> bool {
        self.obs_check.as_ref().is_none_or(|c| c.all_pass(b.obs.bytes(), b.obs.row_bytes()))
    }

    /// Checks what slot `j`'s env just returned (`rollway_core::check`): its
    /// observation (unless the block's rows all passed: `obs_ok`), and its reward
    /// after a step. An error fails the attempt (the env is not rebuilt: it did
    /// not fail, it answered wrong); a warning goes up once per worker and kind.
    #[inline]
    fn check_env(&mut self, b: &mut AgentBlock, j: usize, reward: Option<f64>, obs_ok: bool) -> Result<(), rollway_core::Failure> {
        let env = &self.ctx.cfg.env;
        let wrong = |what: String| rollway_core::Failure { error: format!("env {env}: {what}"), restarted: false };
        if let Some(what) = reward.filter(|_| self.ctx.cfg.check).and_then(check_reward) {
            return Err(wrong(what));
        }
        let Some(p) = self.obs_check.as_ref().filter(|_| !obs_ok).and_then(|c| c.check(b.obs.row(j))) else { return Ok(()) };
        if !p.warning {
            return Err(wrong(p.describe("observation")));
        }
        if self.warned.insert(p.key()) {
            b.warnings.push(wrong(p.describe("observation")).error);
        }
        Ok(())
    }

    /// Slot `j` was reset for episode `p`: set up its agent state and recording.
    fn started(&mut self, b: &mut AgentBlock, j: usize, p: Pending, episode_seed: u64) {
        let l = b.local;
        b.first[j] = true;
        b.memory[j].clear();
        b.rng[j] = seed::agent_rng(episode_seed);
        let traj = self.ctx.cfg.record_steps.then(|| {
            // Sized for a typical episode up front, so recording does not grow by reallocation.
            let cap = 64;
            let (ob, ab) = (b.obs.row_bytes(), b.act.row_bytes());
            let mut obs = self.ctx.recycle.take(ob * (cap + 1));
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
                t.infos.push(self.envs[l].info(j));
            }
            t
        });
        self.slots[l][j] = Some(Running { p, seed: episode_seed, length: 0, ret: 0.0, started: Instant::now(), traj });
    }

    /// Records a failed attempt (and the restart it cost, if any) and says what to
    /// run next in its place: the retry, or nothing if given up.
    fn after_failure(&mut self, b: &mut AgentBlock, p: Pending, msg: String, restarted: bool) -> Option<Pending> {
        b.faults.push(Fault { episode: p.index, attempt: p.attempt, worker: Some(self.ctx.worker), error: msg.clone() });
        if restarted {
            b.restarts += 1;
            self.last_failure.clone_from(&msg);
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
        // An episode finished: the envs work, so restarts count (and back off) from zero again.
        self.restarts = 0;
        let r = self.slots[l][j].take().expect("slot is running");
        let info = self.envs[l].info(j);
        let ep = EpisodeResult {
            run_index: r.p.index,
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
        run_index: index,
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
