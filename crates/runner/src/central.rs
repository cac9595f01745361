//! The central stage as a small state machine: it owns the agent, forms batches
//! from worker blocks, acts, sends actions back, and keeps the books (episodes,
//! faults, restarts).
//!
//! Each turn of [`Central::drive`] looks at where the blocks are and takes one
//! step: wake idle blocks for retries, act on the queued blocks, or wait for a
//! worker's message (then maybe report progress). Every way a run stops (done, an
//! observer error, the agent giving up, a worker dying) is a return from `drive`;
//! ending the workers is left to [`Central::finish`], which drops the [`Pool`]:
//! the one place that hangs up on the workers and joins them.
//!
//! A turn costs a scan of the block states (two per worker at most), next to an
//! agent call or a channel receive: nothing that shows.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use rollway_core::check::{Role, RowCheck};
use rollway_core::{ActBatch, Agent, Layout, Segment, StepColumn};

use crate::collect::{Delivery, Summary};
use crate::pool::Pool;
use crate::schedule::Schedule;
use crate::worker::{AgentBlock, Down, Up};
use crate::{Error, Generator, Mode, Observer, Progress, Result, Target};

/// How often progress is reported, and the longest wait between looks at the workers:
/// often enough that a calibration probe (`tune`) can be timed to a few tens of ms.
const TICK: Duration = Duration::from_millis(25);

/// Where a block is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    Worker,
    Queued,
    Idle,
    Retired,
}

/// What the central stage does next.
enum Turn {
    /// Retries are waiting and only idle blocks could run them.
    Wake,
    /// Call the agent on the queued blocks.
    Act,
    /// Wait this long for a worker's message.
    Wait(Duration),
    /// Nothing is out with a worker and nothing is left to run.
    Done,
}

/// A run in progress.
pub(crate) struct Central<'a> {
    g: &'a Generator,
    pool: Pool,
    sched: Arc<Schedule>,
    ol: Arc<Layout>,
    al: Arc<Layout>,
    /// Blocks per worker; block `local` of worker `w` is `at[w * per_worker + local]`.
    per_worker: usize,
    /// Largest batch an async turn waits for (`cfg.max_batch`, with 0 meaning every env).
    max_batch: usize,
    agent: Box<dyn Agent>,
    /// Agent rebuilds in a row: since its last call that went through.
    agent_restarts: u32,
    /// The agent's last failure, while `agent_restarts` counts.
    agent_error: String,
    act_check: Option<RowCheck>,
    /// Env and agent rebuilds.
    restarts: u64,
    /// Rows acted on (`Progress::acted`).
    acted: u64,
    /// Blocks not acted on yet, by slot: `Progress::warm` once none is left.
    cold: Vec<bool>,
    cold_left: usize,
    delivery: Delivery<'a>,
    at: Vec<Where>,
    // Boxed like every block in flight: blocks move through the channels by pointer.
    #[allow(clippy::vec_box)]
    queued: Vec<Box<AgentBlock>>,
    #[allow(clippy::vec_box)]
    idle: Vec<Box<AgentBlock>>,
    /// When the first block of the forming batch was queued.
    batch_since: Instant,
    last_progress: Instant,
    started: Instant,
}

fn slot(b: &AgentBlock, per_worker: usize) -> usize {
    b.worker * per_worker + b.local
}

impl<'a> Central<'a> {
    /// Starts the workers, then builds the agent while they start their envs.
    pub fn start(g: &'a Generator, observer: &'a mut dyn Observer) -> Result<Central<'a>> {
        let started = Instant::now();
        let cfg = &g.cfg;
        let ol = Arc::new(Layout::of(&g.spec.observation_space));
        let al = Arc::new(Layout::of(&g.spec.action_space));
        let sched = Arc::new(Schedule::new(
            cfg.start_index,
            match cfg.target {
                Target::Episodes(n) => n,
                Target::Steps(_) => u64::MAX,
            },
        ));
        if matches!(cfg.target, Target::Steps(n) if cfg.start_steps >= n) {
            sched.stop();
        }
        // Two blocks per worker in async mode so a worker steps one while the other waits.
        let per_worker = if cfg.mode == Mode::Async && cfg.envs_per_worker >= 2 { 2 } else { 1 };
        // Recorded episodes' observation buffers come back from the observer's writer for reuse.
        let recycle = observer.recycler().unwrap_or_default();
        let pool = Pool::spawn(cfg, &g.envs, (&ol, &al), (&sched, &recycle), per_worker)?;
        // On failure `pool` drops here, which joins the workers just started.
        let agent = g.agents.make(&g.spec)?;
        let act_check = Some(RowCheck::new(&al, Role::Action)).filter(|c| !c.is_empty());
        Ok(Central {
            g,
            pool,
            sched,
            ol,
            al,
            per_worker,
            max_batch: if cfg.max_batch == 0 { cfg.total_envs() } else { cfg.max_batch },
            agent,
            agent_restarts: 0,
            agent_error: String::new(),
            act_check,
            restarts: 0,
            acted: 0,
            cold: vec![true; cfg.workers * per_worker],
            cold_left: cfg.workers * per_worker,
            delivery: Delivery::new(cfg.target, cfg.start_index, cfg.start_steps, &g.filters, observer),
            at: vec![Where::Worker; cfg.workers * per_worker],
            queued: Vec::new(),
            idle: Vec::new(),
            batch_since: Instant::now(),
            last_progress: Instant::now(),
            started,
        })
    }

    /// Takes turns until the run stops; `Ok` when it ran out of work.
    pub fn drive(&mut self) -> Result<()> {
        loop {
            if let Some(e) = self.delivery.sink_error.take() {
                return Err(Error::Sink(e));
            }
            match self.turn() {
                Turn::Done => return Ok(()),
                Turn::Wake => self.wake_idle(),
                Turn::Act => self.act()?,
                Turn::Wait(wait) => {
                    if !self.receive(wait)? {
                        return Ok(());
                    }
                    self.tick();
                }
            }
        }
    }

    /// Ends the run: joins every worker, then closes the books unless `outcome` failed.
    pub fn finish(self, outcome: Result<()>) -> Result<Summary> {
        // Whatever is not folded yet had no live worker left to run it (or finished
        // after such an episode). It stays untried rather than given up, so a resumed
        // run picks it up where the committed prefix ends.
        let end = match self.g.cfg.target {
            Target::Episodes(n) => n,
            Target::Steps(_) => self.sched.issued_end(),
        };
        let Central { pool, mut delivery, restarts, started, agent, agent_restarts, agent_error, .. } = self;
        drop(pool);
        outcome?;
        if let Some(e) = delivery.sink_error.take() {
            return Err(Error::Sink(e));
        }
        let mut s = delivery.finish(started.elapsed().as_secs_f64(), end);
        // An agent failing when the run ran out of episodes (each given up after its
        // attempts) is the agent that fails a longer run once its restarts run out: the
        // same error at any run size, not a run that merely ended short.
        if agent_restarts > 0 && s.given_up > 0 {
            return Err(Error::AgentGaveUp { restarts: agent_restarts, last: agent_error });
        }
        s.restarts = restarts;
        s.inference = agent.about();
        Ok(s)
    }

    fn turn(&self) -> Turn {
        let cfg = &self.g.cfg;
        let at_worker = self.at.iter().filter(|&&w| w == Where::Worker).count();
        if at_worker == 0 && self.queued.is_empty() {
            // Retries put back by a retired worker need a block to run in.
            return if self.sched.has_retries() && !self.idle.is_empty() { Turn::Wake } else { Turn::Done };
        }
        let rows: usize = self.queued.iter().map(|b| b.len()).sum();
        let waited = self.batch_since.elapsed();
        let is_async = cfg.mode == Mode::Async;
        let ready = rows >= self.max_batch || (rows >= cfg.min_batch && waited >= cfg.max_wait);
        if !self.queued.is_empty() && (at_worker == 0 || (is_async && ready)) {
            return Turn::Act;
        }
        if is_async && !self.queued.is_empty() && rows >= cfg.min_batch {
            Turn::Wait(cfg.max_wait.saturating_sub(waited).min(TICK))
        } else {
            Turn::Wait(TICK)
        }
    }

    fn wake_idle(&mut self) {
        for b in self.idle.drain(..) {
            self.at[slot(&b, self.per_worker)] = Where::Worker;
            self.pool.send(b.worker, Down::Wake(b));
        }
    }

    fn act(&mut self) -> Result<()> {
        let cfg = &self.g.cfg;
        let check = self.act_check.as_ref().filter(|_| cfg.check);
        let how = Acting { ol: &self.ol, al: &self.al, max_batch: cfg.max_batch, check, agent: &cfg.agent, extras: cfg.record_steps };
        let sizes = crate::pool::split(cfg.envs_per_worker, self.per_worker);
        let slots: Vec<usize> =
            self.queued.iter().map(|b| b.worker * cfg.envs_per_worker + sizes[..b.local].iter().sum::<usize>()).collect();
        let (failures, failed) = call_agent(self.agent.as_mut(), &how, &mut self.queued, &slots);
        match failed {
            Some(msg) => self.rebuild_agent(msg)?,
            // A call went through: agent restarts count from zero again.
            None => self.agent_restarts = 0,
        }
        // Blocks after the failed call were not acted on: they wait for the rebuilt agent.
        for (mut b, fail) in self.queued.drain(..failures.len()).zip(failures) {
            self.acted += b.len() as u64;
            let s = slot(&b, self.per_worker);
            if std::mem::take(&mut self.cold[s]) {
                self.cold_left -= 1;
            }
            b.abort = fail;
            self.at[s] = Where::Worker;
            self.pool.send(b.worker, Down::Act(b));
        }
        Ok(())
    }

    fn rebuild_agent(&mut self, msg: String) -> Result<()> {
        // One failed call is one failure, however many blocks it covered.
        self.agent_restarts += 1;
        self.restarts += 1;
        if self.agent_restarts > self.g.cfg.max_restarts {
            return Err(Error::AgentGaveUp { restarts: self.agent_restarts, last: msg });
        }
        self.agent_error = msg;
        std::thread::sleep(self.g.cfg.restart_backoff);
        self.agent = self.g.agents.make(&self.g.spec)?;
        Ok(())
    }

    /// Waits up to `wait` for one message; false when every worker has hung up.
    fn receive(&mut self, wait: Duration) -> Result<bool> {
        self.pool.run_inline()?;
        match self.pool.wait.recv_timeout(&self.pool.up, wait) {
            Ok(Up::Ready(b)) => self.ready(b),
            Ok(Up::Idle(b)) => self.idled(b),
            Ok(Up::Retired(b)) => self.retired(b),
            Err(RecvTimeoutError::Timeout) => self.check_workers()?,
            Err(RecvTimeoutError::Disconnected) => return Ok(false),
        }
        Ok(true)
    }

    /// Books first: what a block carries happened before its state changed.
    fn books(&mut self, b: &mut AgentBlock) {
        self.restarts += b.restarts;
        if self.delivery.take_from(b) {
            self.sched.stop();
        }
    }

    fn ready(&mut self, mut b: Box<AgentBlock>) {
        self.books(&mut b);
        if self.queued.is_empty() {
            self.batch_since = Instant::now();
        }
        self.at[slot(&b, self.per_worker)] = Where::Queued;
        self.queued.push(b);
    }

    fn idled(&mut self, mut b: Box<AgentBlock>) {
        self.books(&mut b);
        if self.sched.has_retries() {
            self.pool.send(b.worker, Down::Wake(b));
        } else {
            self.at[slot(&b, self.per_worker)] = Where::Idle;
            self.idle.push(b);
        }
    }

    fn retired(&mut self, mut b: Box<AgentBlock>) {
        self.books(&mut b);
        let (w, per_worker) = (b.worker, self.per_worker);
        self.at[slot(&b, per_worker)] = Where::Retired;
        // Its worker's idle blocks go with it: nothing would step them.
        let at = &mut self.at;
        self.idle.retain(|x| {
            let mine = x.worker == w;
            if mine {
                at[slot(x, per_worker)] = Where::Retired;
            }
            !mine
        });
    }

    /// A worker thread ends only when hung up on, so one that ended while it still
    /// holds blocks panicked outside the fault handling: those blocks never come back.
    fn check_workers(&self) -> Result<()> {
        let holds = |w: usize| self.at[w * self.per_worker..(w + 1) * self.per_worker].contains(&Where::Worker);
        match (0..self.g.cfg.workers).find(|&w| self.pool.finished(w) && holds(w)) {
            Some(w) => Err(Error::Worker { worker: w, message: "thread ended unexpectedly".into() }),
            None => Ok(()),
        }
    }

    fn tick(&mut self) {
        if self.last_progress.elapsed() < TICK {
            return;
        }
        self.last_progress = Instant::now();
        let c = &mut self.delivery;
        let p = Progress {
            episodes: c.folded(),
            steps: c.steps_so_far(),
            target: self.g.cfg.target,
            elapsed: self.started.elapsed(),
            restarts: self.restarts,
            given_up: c.summary().given_up,
            acted: self.acted,
            warm: self.cold_left == 0,
        };
        c.progress(&p);
    }
}

/// What an agent call needs besides the blocks.
pub(crate) struct Acting<'c> {
    pub ol: &'c Layout,
    pub al: &'c Layout,
    /// Largest number of rows per call; 0 means all.
    pub max_batch: usize,
    /// The action check, unless the run does not check (or nothing could be wrong).
    pub check: Option<&'c RowCheck>,
    /// The agent's name, for messages.
    pub agent: &'c str,
    /// Whether the agent's extras are kept (in each block's `extras`), for recording.
    pub extras: bool,
}

/// One call's extras and where its rows go: (block, first row in it, rows) per segment.
type Destined = (Vec<StepColumn>, Vec<(usize, usize, usize)>);

/// Moves each call's extras rows into the blocks they belong to (`n` rows per block).
fn scatter_extras(calls: Vec<Destined>, blocks: &mut [Box<AgentBlock>]) {
    for (extras, parts) in calls {
        let mut r = 0;
        for (bi, start, k) in parts {
            let b = &mut blocks[bi];
            let n = b.first.len();
            b.extras.resize_with(extras.len(), StepColumn::default);
            for (col, e) in b.extras.iter_mut().zip(&extras) {
                let w = e.width();
                col.name.clone_from(&e.name);
                col.shape.clone_from(&e.shape);
                col.values.resize(n * w, 0.0);
                col.values[start * w..(start + k) * w].copy_from_slice(&e.values[r * w..(r + k) * w]);
            }
            r += k;
        }
    }
}

/// Calls the agent on `blocks` in chunks of at most `max_batch` envs (0 = one
/// chunk), stopping at the first call that fails: an agent that failed (or chose
/// an action outside the space) is not trusted with more rows. `slots[i]` is the
/// run's env slot of block `i`'s first row, for messages. Returns, per block up to
/// the failed call's last one, the failure of the call it was in (if any), and
/// that failure.
fn call_agent(
    agent: &mut dyn Agent,
    how: &Acting<'_>,
    blocks: &mut [Box<AgentBlock>],
    slots: &[usize],
) -> (Vec<Option<String>>, Option<String>) {
    let max = if how.max_batch == 0 { usize::MAX } else { how.max_batch };
    let mut failed: Vec<Option<String>> = vec![None; blocks.len()];
    let (ob, ab) = (how.ol.row_bytes(), how.al.row_bytes());
    let mut segs: Vec<Segment<'_>> = Vec::new();
    // Per segment: its block, and the env slot of its first row.
    let mut owners: Vec<(usize, usize)> = Vec::new();
    let mut rows = 0;
    // Per call with extras: them, and (block, first row in it, rows) per segment.
    let mut kept: Vec<Destined> = Vec::new();
    let mut call = |segs: &mut Vec<Segment<'_>>, owners: &mut Vec<(usize, usize)>, failed: &mut Vec<Option<String>>| {
        let mut batch = ActBatch { obs_layout: how.ol, act_layout: how.al, segments: std::mem::take(segs) };
        let mut extras = Vec::new();
        let res =
            catch_unwind(AssertUnwindSafe(
                || if how.extras { agent.act_with_extras(&mut batch, &mut extras) } else { agent.act(&mut batch) },
            ));
        let msg = call_failure(res, &batch, owners, how);
        if let Some(m) = &msg {
            owners.iter().for_each(|&(o, _)| failed[o] = Some(m.clone()));
            failed.truncate(owners.last().map_or(0, |&(o, _)| o + 1));
        } else if !extras.is_empty() {
            // A segment's first row sits `slot - slots[o]` rows into its block.
            let parts = owners.iter().zip(&batch.segments).map(|(&(o, slot), s)| (o, slot - slots[o], s.len()));
            kept.push((extras, parts.collect()));
        }
        owners.clear();
        msg
    };
    for (bi, b) in blocks.iter_mut().enumerate() {
        let AgentBlock { obs, act, first, memory, rng, .. } = &mut **b;
        let (mut o, mut a, mut f, mut m, mut r) = (obs.bytes(), act.bytes_mut(), &first[..], &mut memory[..], &mut rng[..]);
        let mut slot = slots[bi];
        while !f.is_empty() {
            let k = (max - rows).min(f.len());
            let (o1, o2) = o.split_at(k * ob);
            let (a1, a2) = std::mem::take(&mut a).split_at_mut(k * ab);
            let (f1, f2) = f.split_at(k);
            let (m1, m2) = std::mem::take(&mut m).split_at_mut(k);
            let (r1, r2) = std::mem::take(&mut r).split_at_mut(k);
            (o, a, f, m, r) = (o2, a2, f2, m2, r2);
            segs.push(Segment { obs: o1, actions: a1, first: f1, memory: m1, rng: r1 });
            owners.push((bi, slot));
            slot += k;
            rows += k;
            if rows == max {
                if let Some(msg) = call(&mut segs, &mut owners, &mut failed) {
                    return (failed, Some(msg));
                }
                rows = 0;
            }
        }
    }
    let msg = if segs.is_empty() { None } else { call(&mut segs, &mut owners, &mut failed) };
    scatter_extras(kept, blocks);
    (failed, msg)
}

/// Why a call failed, if it did: the agent's error or panic, or the first action
/// outside the space (`Error::Action` rows and checked rows named by env slot).
fn call_failure(
    res: std::thread::Result<rollway_core::Result<()>>,
    batch: &ActBatch<'_>,
    owners: &[(usize, usize)],
    how: &Acting<'_>,
) -> Option<String> {
    // The env slot of batch row `row`.
    let slot_of = |mut row: usize| {
        for (seg, &(_, slot)) in batch.segments.iter().zip(owners) {
            if row < seg.len() {
                return slot + row;
            }
            row -= seg.len();
        }
        row
    };
    match res {
        Ok(Ok(())) => {
            let check = how.check?;
            let ab = how.al.row_bytes();
            if batch.segments.iter().all(|s| check.all_pass(s.actions, ab)) {
                return None;
            }
            let rows = batch.segments.iter().flat_map(|s| s.actions.chunks_exact(ab));
            let (row, p) = rows.enumerate().find_map(|(i, a)| check.check(a).map(|p| (i, p)))?;
            Some(format!("agent {}: env slot {}: {}", how.agent, slot_of(row), p.describe("action")))
        }
        Ok(Err(rollway_core::Error::Action { agent, row, message })) => {
            Some(format!("agent {agent}: env slot {}: {message}", slot_of(row)))
        }
        Ok(Err(e)) => Some(e.to_string()),
        Err(p) => Some(format!("panicked: {}", crate::serial::panic_text(p))),
    }
}
