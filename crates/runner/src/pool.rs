//! The worker threads of one run, and the one way they end.
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

use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{unbounded, Receiver, Sender};
use rollway_core::{EnvFactory, Layout};

use crate::schedule::Schedule;
use crate::spin::Wait;
use crate::worker::{self, AgentBlock, Down, Up, WorkerCtx};
use crate::{Error, Result, RunConfig};

/// Running worker threads and the channels to and from them.
pub(crate) struct Pool {
    down: Vec<Sender<Down>>,
    threads: Vec<JoinHandle<()>>,
    envs: Arc<dyn EnvFactory>,
    /// Every worker's messages to the central stage.
    pub up: Receiver<Up>,
    /// How the central stage and the workers wait for messages.
    pub wait: Wait,
}

impl Pool {
    /// Starts `cfg.workers` threads, each with its envs split into `per_worker` blocks.
    pub fn spawn(
        cfg: &Arc<RunConfig>,
        envs: &Arc<dyn EnvFactory>,
        layouts: (&Arc<Layout>, &Arc<Layout>),
        sched: &Arc<Schedule>,
        per_worker: usize,
    ) -> Result<Pool> {
        let (ol, al) = layouts;
        let (up_tx, up) = unbounded::<Up>();
        // Built up in place, so that a failed spawn drops (and so joins) the threads already started.
        let wait = Wait::for_run(cfg.workers, envs.steps_in_worker(), cfg.mode == crate::Mode::Sync);
        let mut pool = Pool { down: Vec::new(), threads: Vec::new(), envs: envs.clone(), up, wait };
        for w in 0..cfg.workers {
            let (tx, rx) = unbounded();
            let sizes = split(cfg.envs_per_worker, per_worker);
            let blocks = sizes.iter().enumerate().map(|(i, &n)| AgentBlock::new(w, i, n, ol, al)).collect();
            let ctx = WorkerCtx {
                worker: w,
                cfg: cfg.clone(),
                envs: envs.clone(),
                obs_layout: ol.clone(),
                act_layout: al.clone(),
                sched: sched.clone(),
                up: up_tx.clone(),
                down: rx,
                wait: pool.wait.clone(),
                blocks,
            };
            let h = std::thread::Builder::new()
                .name(format!("rollway-worker-{w}"))
                .spawn(move || worker::run(ctx))
                .map_err(|e| Error::Worker { worker: w, message: e.to_string() })?;
            pool.down.push(tx);
            pool.threads.push(h);
        }
        // Only the workers hold senders now: when every thread is gone, `up` says so.
        drop(up_tx);
        Ok(pool)
    }

    /// Sends `msg` to worker `w`.
    pub fn send(&self, w: usize, msg: Down) {
        // A worker only hangs up by ending, which the central stage notices by itself (see `finished`).
        let _ = self.down[w].send(msg);
    }

    /// True when worker `w`'s thread has ended.
    pub fn finished(&self, w: usize) -> bool {
        self.threads[w].is_finished()
    }
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
fn split(n: usize, k: usize) -> Vec<usize> {
    (0..k).map(|i| n / k + usize::from(i < n % k)).collect()
}
