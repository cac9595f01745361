//! A rollout's envs: N slots split into one part per worker, each part an
//! [`EnvBlock`] with its own observation and action rows (envs in the thread, or a
//! host's process). Part 0 is stepped by the collecting thread itself and the
//! others by one thread each, so a 1-worker rollout hands nothing to another
//! thread, and W workers use W threads (as the generator's sync mode does).
//!
//! A part moves to its thread and back by ownership (a pointer through a channel),
//! so the policy reads each part's rows in place: no observation is copied on its
//! way to the policy. The cost of a worker thread is two channel hand-offs a round,
//! a few microseconds; it pays when a part's envs cost more than that to step.
//!
//! A rollout's sampler drives it, and so does `rollway.make_vec` for envs hosted in
//! Python (the binding fills each part's ops and calls [`Envs::round`]).
//!
//! A rollout that runs ahead (`Mode::Async`) steps part 0 on a thread too, so that
//! the collecting thread is free to act on whichever part comes back first
//! ([`Envs::send`], [`Envs::recv`]) while the others step.
//!
//! Parts whose envs step elsewhere (env processes: [`EnvBlock::steps_apart`]) skip
//! the threads: the calling thread starts their rounds, then reads each in the order
//! it started them. A thread in between cost two wake-ups a round (caller → thread →
//! process and back), each waiting for a core the env processes were using; measured
//! in bench/RESULTS.md (issue 68).

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{unbounded, Receiver, Sender};
use rollway_core::{BlockOptions, EnvBlock, EnvFactory, Layout, Op, Rows, SlotResult};

use crate::serial::Serial;
use crate::{Error, Result};

/// One worker's share of the slots.
pub struct Part {
    /// Index among the parts.
    pub index: usize,
    /// The first global slot of this part.
    pub offset: usize,
    /// Its envs.
    pub block: Box<dyn EnvBlock>,
    /// Its slots' observation rows.
    pub obs: Rows,
    /// Its slots' action rows.
    pub act: Rows,
    /// This round's ops, by local slot.
    pub ops: Vec<(usize, Op)>,
    /// Their results, in the same order.
    pub results: Vec<SlotResult>,
    /// The fragment step its envs are at (a rollout's sampler keeps it).
    pub t: usize,
}

impl Part {
    /// Runs this round's ops.
    fn run(&mut self) {
        // A round with nothing to do (no env of this part ended) costs a hosted block no round trip.
        if self.ops.is_empty() {
            self.results.clear();
            return;
        }
        self.block.run(&self.ops, &self.act, &mut self.obs, &mut self.results);
    }

    /// Whether this part is sent off to run (a thread's, or started apart), not run here.
    fn goes_away(&self, threaded: bool) -> bool {
        !self.ops.is_empty() && (threaded || self.block.steps_apart())
    }

    /// Slots in this part.
    pub fn len(&self) -> usize {
        self.obs.len()
    }

    /// Whether the part has no slots.
    pub fn is_empty(&self) -> bool {
        self.obs.len() == 0
    }
}

/// Every part, and the threads that step parts `1..`.
pub struct Envs {
    // Boxed: parts travel through the channels by pointer.
    #[allow(clippy::vec_box)]
    /// The parts, by index (between rounds).
    pub parts: Vec<Box<Part>>,
    /// By part index: the thread that steps it (`None`: the caller's thread does).
    down: Vec<Option<Sender<Box<Part>>>>,
    up: Option<Receiver<Box<Part>>>,
    threads: Vec<JoinHandle<()>>,
    /// Parts whose round was started apart, in the order they were started.
    started: VecDeque<Box<Part>>,
}

impl Envs {
    /// `n` slots over `workers` parts of near-equal size; part 0 stepped by the
    /// caller's thread, unless `all_threaded` (or there is one part).
    pub fn new(
        factory: &Arc<dyn EnvFactory>,
        n: usize,
        workers: usize,
        ol: &Arc<Layout>,
        al: &Arc<Layout>,
        options: BlockOptions,
        all_threaded: bool,
    ) -> Result<Envs> {
        let mut parts = Vec::new();
        let mut offset = 0;
        for (index, k) in (0..workers).map(|i| n / workers + usize::from(i < n % workers)).enumerate() {
            let block = factory.block(k, options).unwrap_or_else(|| Box::new(Serial::new(factory.clone(), k, ol.clone(), al.clone())));
            let (obs, act) = (Rows::new(ol.row_bytes(), k), Rows::new(al.row_bytes(), k));
            parts.push(Box::new(Part { index, offset, block, obs, act, ops: Vec::new(), results: Vec::new(), t: 0 }));
            offset += k;
        }
        let mut envs = Envs { parts, down: vec![None], up: None, threads: Vec::new(), started: VecDeque::new() };
        let first = if all_threaded && workers > 1 { 0 } else { 1 };
        if first < workers {
            let (up_tx, up) = unbounded();
            envs.down.resize_with(workers, || None);
            for w in first..workers {
                let (tx, rx) = unbounded::<Box<Part>>();
                let back = up_tx.clone();
                let h = std::thread::Builder::new()
                    .name(format!("rollway-rollout-{w}"))
                    .spawn(move || {
                        while let Ok(mut p) = rx.recv() {
                            p.run();
                            if back.send(p).is_err() {
                                break;
                            }
                        }
                    })
                    .map_err(|e| Error::Worker { worker: w, message: e.to_string() })?;
                envs.down[w] = Some(tx);
                envs.threads.push(h);
            }
            envs.up = Some(up);
        }
        Ok(envs)
    }

    /// Starts `p`'s `ops` apart, or hands it to its thread; [`Envs::recv`] gets it back.
    pub fn send(&mut self, mut p: Box<Part>) -> Result<()> {
        if p.block.steps_apart() {
            p.block.start(&p.ops, &p.act);
            self.started.push_back(p);
            return Ok(());
        }
        let i = p.index;
        let gone = || Error::Worker { worker: i, message: "thread ended unexpectedly".into() };
        self.down[i].as_ref().ok_or_else(gone)?.send(p).map_err(|_| gone())
    }

    /// A part sent off, its ops run: the first started apart, else the next a thread finished.
    pub fn recv(&mut self) -> Result<Box<Part>> {
        if let Some(mut p) = self.started.pop_front() {
            let Part { block, ops, obs, results, .. } = &mut *p;
            block.finish(ops, obs, results);
            return Ok(p);
        }
        let gone = || Error::Worker { worker: 0, message: "a rollout thread ended unexpectedly".into() };
        self.up.as_ref().ok_or_else(gone)?.recv().map_err(|_| gone())
    }

    /// Runs every part's `ops`: parts started apart or on a thread, those here meanwhile.
    /// Parts without ops are not sent anywhere.
    pub fn round(&mut self) -> Result<()> {
        let mut away = 0;
        for i in (0..self.parts.len()).rev() {
            if !self.parts[i].goes_away(self.down[self.parts[i].index].is_some()) {
                continue;
            }
            let p = self.parts.remove(i);
            self.send(p)?;
            away += 1;
        }
        for p in self.parts.iter_mut() {
            p.run();
        }
        for _ in 0..away {
            let p = self.recv()?;
            self.parts.push(p);
        }
        self.parts.sort_unstable_by_key(|p| p.index);
        Ok(())
    }
}

impl Drop for Envs {
    fn drop(&mut self) {
        // Without a sender each thread's `recv` fails and it ends after the part in hand.
        self.down.clear();
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}
