//! The central stage: owns the agent, forms batches from worker blocks, acts,
//! sends actions back, and keeps the books (episodes, faults, restarts).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, RecvTimeoutError, Sender};
use rollway_core::{ActBatch, Agent, EnvSpec, Layout, Segment};

use crate::collect::{Collector, Summary};
use crate::filter::EpisodeFilter;
use crate::schedule::Schedule;
use crate::worker::{self, AgentBlock, Down, Up, WorkerCtx};
use crate::{Error, Mode, Observer, Progress, Result, RunConfig, Target};

/// A configured run: env and agent checked, ready to go.
pub struct Generator {
    cfg: Arc<RunConfig>,
    spec: EnvSpec,
    filters: Vec<Box<dyn EpisodeFilter>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    Worker,
    Queued,
    Idle,
    Retired,
}

impl Generator {
    /// Validates `cfg` and builds one env and one agent to check ids, parameters and spaces.
    pub fn new(cfg: RunConfig, filters: Vec<Box<dyn EpisodeFilter>>) -> Result<Generator> {
        cfg.validate()?;
        let env = rollway_envs::make(&cfg.env, &cfg.env_params)?;
        let spec = env.spec().clone();
        drop(rollway_agents::make(&cfg.agent, &spec, &cfg.agent_params)?);
        Ok(Generator { cfg: Arc::new(cfg), spec, filters })
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The configuration.
    pub fn config(&self) -> &RunConfig {
        &self.cfg
    }

    /// Runs to the target, reporting episodes (in index order) and progress to `observer`.
    pub fn run(&self, observer: &mut dyn Observer) -> Result<Summary> {
        let started = Instant::now();
        let cfg = &self.cfg;
        let ol = Arc::new(Layout::of(&self.spec.observation_space));
        let al = Arc::new(Layout::of(&self.spec.action_space));
        let sched = Arc::new(Schedule::new(cfg.start_index, match cfg.target {
            Target::Episodes(n) => n,
            Target::Steps(_) => u64::MAX,
        }));
        if matches!(cfg.target, Target::Steps(n) if cfg.start_steps >= n) {
            sched.stop();
        }
        // Two blocks per worker in async mode so a worker steps one while the other waits.
        let per_worker = if cfg.mode == Mode::Async && cfg.envs_per_worker >= 2 { 2 } else { 1 };
        let (up_tx, up_rx) = unbounded::<Up>();
        let mut downs: Vec<Sender<Down>> = Vec::new();
        let mut handles: Vec<JoinHandle<()>> = Vec::new();
        for w in 0..cfg.workers {
            let (tx, rx) = unbounded();
            let sizes = split(cfg.envs_per_worker, per_worker);
            let blocks = sizes.iter().enumerate().map(|(i, &n)| AgentBlock::new(w, i, n, &ol, &al)).collect();
            let ctx = WorkerCtx { worker: w, cfg: cfg.clone(), obs_layout: ol.clone(), act_layout: al.clone(), sched: sched.clone(), up: up_tx.clone(), down: rx, blocks };
            let h = std::thread::Builder::new()
                .name(format!("rollway-worker-{w}"))
                .spawn(move || worker::run(ctx))
                .map_err(|e| Error::Worker { worker: w, message: e.to_string() })?;
            downs.push(tx);
            handles.push(h);
        }
        drop(up_tx);

        let mut agent = self.build_agent()?;
        let mut collector = Collector::new(cfg.target, cfg.start_index, cfg.start_steps, &self.filters, observer);
        let mut at = vec![Where::Worker; cfg.workers * per_worker];
        let id = |b: &AgentBlock| b.worker * per_worker + b.local;
        let (mut queued, mut idle): (Vec<Box<AgentBlock>>, Vec<Box<AgentBlock>>) = (Vec::new(), Vec::new());
        let (mut restarts, mut agent_restarts) = (0u64, 0u32);
        let max_batch = if cfg.max_batch == 0 { cfg.total_envs() } else { cfg.max_batch };
        let mut batch_since = Instant::now();
        let mut last_progress = Instant::now();
        let tick = Duration::from_millis(100);

        loop {
            if let Some(e) = collector.sink_error.take() {
                drop(downs);
                handles.into_iter().for_each(|h| drop(h.join()));
                return Err(Error::Sink(e));
            }
            let at_worker = at.iter().filter(|&&w| w == Where::Worker).count();
            if at_worker == 0 && queued.is_empty() {
                if sched.has_retries() && !idle.is_empty() {
                    for b in idle.drain(..) {
                        at[id(&b)] = Where::Worker;
                        let _ = downs[b.worker].send(Down::Wake(b));
                    }
                    continue;
                }
                break;
            }
            let rows: usize = queued.iter().map(|b| b.len()).sum();
            let waited = batch_since.elapsed();
            let go = !queued.is_empty()
                && (at_worker == 0
                    || (cfg.mode == Mode::Async && (rows >= max_batch || (rows >= cfg.min_batch && waited >= cfg.max_wait))));
            if go {
                let (failures, failed) = act(agent.as_mut(), &ol, &al, &mut queued, cfg.max_batch);
                if let Some(msg) = failed {
                    // One failed call is one failure, however many blocks it covered.
                    agent_restarts += 1;
                    restarts += 1;
                    if agent_restarts > cfg.max_restarts {
                        drop(downs);
                        handles.into_iter().for_each(|h| drop(h.join()));
                        return Err(Error::AgentGaveUp { restarts: agent_restarts, last: msg });
                    }
                    std::thread::sleep(cfg.restart_backoff);
                    agent = self.build_agent()?;
                }
                // Blocks after the failed call were not acted on: they wait for the rebuilt agent.
                for (mut b, fail) in queued.drain(..failures.len()).zip(failures) {
                    b.abort = fail;
                    at[id(&b)] = Where::Worker;
                    let _ = downs[b.worker].send(Down::Act(b));
                }
                continue;
            }
            let wait = if cfg.mode == Mode::Async && !queued.is_empty() && rows >= cfg.min_batch {
                cfg.max_wait.saturating_sub(waited).min(tick)
            } else {
                tick
            };
            let msg = up_rx.recv_timeout(wait);
            if let Ok(Up::Ready(b) | Up::Idle(b) | Up::Retired(b)) = &msg {
                // Books first: what the block carries happened before its state changed.
                restarts += b.restarts;
            }
            match msg {
                Ok(Up::Ready(mut b)) => {
                    if collector.take_from(&mut b) {
                        sched.stop();
                    }
                    if queued.is_empty() {
                        batch_since = Instant::now();
                    }
                    at[id(&b)] = Where::Queued;
                    queued.push(b);
                }
                Ok(Up::Idle(mut b)) => {
                    if collector.take_from(&mut b) {
                        sched.stop();
                    }
                    if sched.has_retries() {
                        let _ = downs[b.worker].send(Down::Wake(b));
                    } else {
                        at[id(&b)] = Where::Idle;
                        idle.push(b);
                    }
                }
                Ok(Up::Retired(mut b)) => {
                    if collector.take_from(&mut b) {
                        sched.stop();
                    }
                    at[id(&b)] = Where::Retired;
                    let w = b.worker;
                    idle.retain(|x| {
                        let mine = x.worker == w;
                        if mine {
                            at[x.worker * per_worker + x.local] = Where::Retired;
                        }
                        !mine
                    });
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(w) = handles.iter().position(|h| h.is_finished()) {
                        if at.iter().enumerate().any(|(i, &s)| s == Where::Worker && i / per_worker == w) {
                            drop(downs);
                            return Err(Error::Worker { worker: w, message: "thread ended unexpectedly".into() });
                        }
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if last_progress.elapsed() >= tick {
                last_progress = Instant::now();
                collector_progress(&mut collector, cfg, started, restarts);
            }
        }
        // Whatever is not folded yet had no live worker left to run it (or finished
        // after such an episode). It stays untried rather than given up, so a resumed
        // run picks it up where the committed prefix ends.
        let end = match cfg.target {
            Target::Episodes(n) => n,
            Target::Steps(_) => sched.issued_end(),
        };
        drop(downs);
        for h in handles {
            let _ = h.join();
        }
        if let Some(e) = collector.sink_error.take() {
            return Err(Error::Sink(e));
        }
        let mut s = collector.finish(started.elapsed().as_secs_f64(), end);
        s.restarts = restarts;
        s.env = self.spec.id.clone();
        s.agent = cfg.agent.clone();
        s.seed = cfg.seed;
        s.mode = match cfg.mode {
            Mode::Sync => "sync".into(),
            Mode::Async => "async".into(),
        };
        s.workers = cfg.workers;
        s.envs_per_worker = cfg.envs_per_worker;
        Ok(s)
    }

    fn build_agent(&self) -> Result<Box<dyn Agent>> {
        Ok(rollway_agents::make(&self.cfg.agent, &self.spec, &self.cfg.agent_params)?)
    }
}

fn collector_progress(c: &mut Collector<'_>, cfg: &RunConfig, started: Instant, restarts: u64) {
    let p = Progress {
        episodes: c.folded(),
        steps: c.steps_so_far(),
        target: cfg.target,
        elapsed: started.elapsed(),
        restarts,
        given_up: c.summary.given_up,
    };
    c.progress(&p);
}

/// Splits `n` envs into `k` near-equal blocks.
fn split(n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|i| n / k + usize::from(i < n % k)).collect()
}

/// Calls the agent on `blocks` in chunks of at most `max_batch` envs (0 = one
/// chunk), stopping at the first call that fails: an agent that failed is not
/// trusted with more rows. Returns, per block up to the failed call's last one,
/// the failure of the call it was in (if any), and that failure.
fn act(agent: &mut dyn Agent, ol: &Layout, al: &Layout, blocks: &mut [Box<AgentBlock>], max_batch: usize) -> (Vec<Option<String>>, Option<String>) {
    let max = if max_batch == 0 { usize::MAX } else { max_batch };
    let mut failed: Vec<Option<String>> = vec![None; blocks.len()];
    let (ob, ab) = (ol.row_bytes(), al.row_bytes());
    let mut segs: Vec<Segment<'_>> = Vec::new();
    let mut owners: Vec<usize> = Vec::new();
    let mut rows = 0;
    let mut call = |segs: &mut Vec<Segment<'_>>, owners: &mut Vec<usize>, failed: &mut Vec<Option<String>>| -> Option<String> {
        let mut batch = ActBatch { obs_layout: ol, act_layout: al, segments: std::mem::take(segs) };
        let res = catch_unwind(AssertUnwindSafe(|| agent.act(&mut batch)));
        let msg = match res {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(p) => Some(format!("panicked: {}", p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default())),
        };
        if let Some(m) = &msg {
            owners.iter().for_each(|&o| failed[o] = Some(m.clone()));
            failed.truncate(owners.last().map_or(0, |&o| o + 1));
        }
        owners.clear();
        msg
    };
    for (bi, b) in blocks.iter_mut().enumerate() {
        let AgentBlock { obs, act, first, memory, rng, .. } = &mut **b;
        let (mut o, mut a, mut f, mut m, mut r) = (obs.bytes(), act.bytes_mut(), &first[..], &mut memory[..], &mut rng[..]);
        while !f.is_empty() {
            let k = (max - rows).min(f.len());
            let (o1, o2) = o.split_at(k * ob);
            let (a1, a2) = std::mem::take(&mut a).split_at_mut(k * ab);
            let (f1, f2) = f.split_at(k);
            let (m1, m2) = std::mem::take(&mut m).split_at_mut(k);
            let (r1, r2) = std::mem::take(&mut r).split_at_mut(k);
            (o, a, f, m, r) = (o2, a2, f2, m2, r2);
            segs.push(Segment { obs: o1, actions: a1, first: f1, memory: m1, rng: r1 });
            owners.push(bi);
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
    (failed, msg)
}
