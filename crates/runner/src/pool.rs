//! The workers of one run, and the one way they end.
//!
//! In a sync run whose envs step in the run's own threads, worker 0 has no
//! thread: the central stage steps its block itself, after handing the other
//! workers their actions and before waiting for their blocks. The round is a
//! barrier anyway, so the central thread would only wait meanwhile; this way a
//! 1-worker run needs no hand-off at all, and an N-worker run has N threads, not
//! N + 1, so on N cores each has a core and they can poll for each other instead
//! of parking (`spin.rs`). Measured with a torch MLP policy on 256 CartPole envs:
//! see bench/RESULTS.md, issue 12.
//!
//! Dropping a [`Pool`] hangs up on every worker and joins every thread, so it is
//! the run's single shutdown path whichever way the run ends: done, failed with an
//! error, or unwinding from a panic on the central stage. No worker outlives its
//! run, still stepping envs, holding simulators or printing after
//! `Generator::run` returned. The cost is that an error returns only once each
//! worker has finished what it had in hand: one step of its current block, or a
//! restart backoff of at most 2 s. A worker still busy after 3 s is waiting on an
//! env that hangs; the env factory is then asked to interrupt it
//! (`EnvFactory::interrupt`: a host in other processes kills them).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{unbounded, Receiver, Sender};
use rollway_core::{EnvFactory, Layout, Recycler};

use crate::schedule::Schedule;
use crate::spin::Wait;
use crate::worker::{self, AgentBlock, Down, Up, Worker, WorkerCtx};
use crate::{Error, Result, RunConfig};

/// Running worker threads and the channels to and from them.
pub(crate) struct Pool {
    /// Worker 0 when the central stage runs it itself (see the module docs).
    inline: Option<Inline>,
    /// Senders and threads of workers `first..`, where `first` is 1 with an inline worker.
    first: usize,
    down: Vec<Sender<Down>>,
    threads: Vec<JoinHandle<()>>,
    envs: Arc<dyn EnvFactory>,
    /// Every worker's messages to the central stage.
    pub up: Receiver<Up>,
    /// How the central stage and the workers wait for messages.
    pub wait: Wait,
}

impl Pool {
    /// Starts `cfg.workers` workers, each with its envs split into `per_worker` blocks.
    pub fn spawn(
        cfg: &Arc<RunConfig>,
        envs: &Arc<dyn EnvFactory>,
        layouts: (&Arc<Layout>, &Arc<Layout>),
        (sched, recycle): (&Arc<Schedule>, &Recycler),
        per_worker: usize,
    ) -> Result<Pool> {
        let (ol, al) = layouts;
        let (up_tx, up) = unbounded::<Up>();
        let in_thread_sync = cfg.mode == crate::Mode::Sync && envs.steps_in_worker();
        let first = usize::from(in_thread_sync);
        // The threads that step and wait: the central stage's and a worker's each, less the inline worker's.
        let wait = Wait::for_run(cfg.workers + 1 - first, in_thread_sync);
        let ctx = |w: usize| WorkerCtx {
            worker: w,
            cfg: cfg.clone(),
            envs: envs.clone(),
            obs_layout: ol.clone(),
            act_layout: al.clone(),
            sched: sched.clone(),
            recycle: recycle.clone(),
            up: up_tx.clone(),
            blocks: split(cfg.envs_per_worker, per_worker).iter().enumerate().map(|(i, &n)| AgentBlock::new(w, i, n, ol, al)).collect(),
        };
        // Built before the threads, so it is the first to ask the factory for blocks.
        let inline = (first == 1).then(|| Inline { worker: Worker::new(ctx(0)), inbox: Vec::new() });
        // Built up in place, so that a failed spawn drops (and so joins) the threads already started.
        let mut pool = Pool { inline, first, down: Vec::new(), threads: Vec::new(), envs: envs.clone(), up, wait };
        for w in first..cfg.workers {
            let (tx, rx) = unbounded();
            let (ctx, wait) = (ctx(w), pool.wait.clone());
            let h = std::thread::Builder::new()
                .name(format!("rollway-worker-{w}"))
                .spawn(move || worker::run(ctx, rx, wait))
                .map_err(|e| Error::Worker { worker: w, message: e.to_string() })?;
            pool.down.push(tx);
            pool.threads.push(h);
        }
        // Only the workers hold senders now: when every thread is gone (and there is
        // no inline worker), `up` says so.
        drop(up_tx);
        Ok(pool)
    }

    /// Sends `msg` to worker `w` (the inline worker does it at the next [`Pool::run_inline`]).
    pub fn send(&mut self, w: usize, msg: Down) {
        if w < self.first {
            self.inline.as_mut().expect("an inline worker").inbox.push(msg);
            return;
        }
        // A worker only hangs up by ending, which the central stage notices by itself (see `finished`).
        let _ = self.down[w - self.first].send(msg);
    }

    /// Lets the inline worker start its blocks, or do what was sent to it since:
    /// called before the central stage waits, so the other workers have their
    /// actions already. What it sends up is then waiting in `up`.
    pub fn run_inline(&mut self) -> Result<()> {
        let Some(i) = &mut self.inline else { return Ok(()) };
        let res = catch_unwind(AssertUnwindSafe(|| {
            // Starts the blocks the first time; a no-op after (the worker has handed them out).
            i.worker.start();
            for msg in i.inbox.drain(..) {
                i.worker.handle(msg);
            }
        }));
        res.map_err(|p| {
            // Like a worker thread that died outside the fault handling: its blocks never come back.
            self.inline = None;
            Error::Worker { worker: 0, message: format!("panicked: {}", crate::serial::panic_text(p)) }
        })
    }

    /// True when worker `w`'s thread has ended (an inline worker has none).
    pub fn finished(&self, w: usize) -> bool {
        w >= self.first && self.threads[w - self.first].is_finished()
    }
}

/// Worker 0, run by the central stage.
struct Inline {
    worker: Worker,
    /// What the central stage sent it since it last ran.
    inbox: Vec<Down>,
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Without a sender its `recv` fails, so each worker leaves its loop after the block in hand.
        self.down.clear();
        // A worker still in a round after a while waits on an env that hangs: have its host fail the round.
        let deadline = std::time::Instant::now() + INTERRUPT_AFTER;
        while self.threads.iter().any(|h| !h.is_finished()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if self.threads.iter().any(|h| !h.is_finished()) {
            self.envs.interrupt();
        }
        for h in self.threads.drain(..) {
            // A worker that panicked has printed why; what it lost is in the outcome already
            // (an `Error::Worker`, or episodes left untried).
            let _ = h.join();
        }
    }
}

/// How long workers get to finish their round before the env factory is asked to interrupt them.
const INTERRUPT_AFTER: std::time::Duration = std::time::Duration::from_secs(3);

/// Splits `n` envs into `k` near-equal blocks.
pub(crate) fn split(n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|i| n / k + usize::from(i < n % k)).collect()
}
