//! The envs of `rollway.make_vec` for ids a Python process hosts (`gym:ID`,
//! `atari:GAME`, `module:callable`): env blocks, as a rollout steps them.
//!
//! Either one block in the caller's thread (the in-process host: no pipe round
//! trip, the GIL held while the envs step) or one env process per worker, each
//! with a contiguous share of the slots, stepped at once: the caller's thread
//! drives the first and a thread of its own each of the others, for the vector
//! env's life. Not a thread per round: an env process is started by the thread
//! that first steps its block and is killed when that thread ends (the host's
//! parent-death signal), as a rollout's worker threads keep theirs.
//!
//! Autoreset is the vector env's (`vec_env.rs`): an ended env's unseeded reset is
//! one more op, in the next round or a round of its own. A failed op is the
//! caller's error, naming the env.

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use pyo3::prelude::*;
use rollway_core::{BlockOptions, EnvBlock, EnvFactory, EnvSpec, Info, InfoNeed, Layout, Op, Params, Rows, SlotResult};

use crate::errors::input_error;
use crate::inline_host::InlineEnvs;

/// One block's share of the slots.
struct Part {
    offset: usize,
    block: Box<dyn EnvBlock>,
    obs: Rows,
    act: Rows,
    ops: Vec<(usize, Op)>,
    results: Vec<SlotResult>,
}

impl Part {
    /// A placeholder while a part is away in its thread.
    fn empty() -> Part {
        Part { offset: 0, block: Box::new(Away), obs: Rows::new(0, 0), act: Rows::new(0, 0), ops: Vec::new(), results: Vec::new() }
    }

    fn run(&mut self) {
        self.block.run(&self.ops, &self.act, &mut self.obs, &mut self.results);
    }
}

/// The thread that steps one part other than the first: the part goes down to it
/// and comes back up, by pointer, each round it has ops.
struct Worker {
    down: Option<Sender<Box<Part>>>,
    up: Receiver<Box<Part>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    fn start() -> Worker {
        let (down, todo) = channel::<Box<Part>>();
        let (done, up) = channel();
        let thread = std::thread::Builder::new()
            .name("rollway-vec-env".into())
            .spawn(move || {
                for mut part in todo {
                    part.run();
                    if done.send(part).is_err() {
                        break;
                    }
                }
            })
            .expect("a thread for a vector env's worker");
        Worker { down: Some(down), up, thread: Some(thread) }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.down.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// N hosted envs in blocks.
pub(crate) struct Blocks {
    // Boxed: parts travel to their threads by pointer.
    #[allow(clippy::vec_box)]
    parts: Vec<Box<Part>>,
    /// One per part after the first (none inline); declared after `parts` so that the
    /// parts' processes stop before their threads are joined.
    workers: Vec<Worker>,
    spec: EnvSpec,
    inline: bool,
    name: String,
}

/// Stands in for a block while its part is in its thread.
struct Away;

impl EnvBlock for Away {
    fn run(&mut self, _: &[(usize, Op)], _: &Rows, _: &mut Rows, _: &mut Vec<SlotResult>) {
        unreachable!("a part is only run by its own thread")
    }

    fn info(&mut self, _: usize) -> Info {
        Info::new()
    }
}

/// A worker thread that is gone (it panicked stepping its envs).
fn gone() -> PyErr {
    crate::errors::failed("a vector env's worker thread stopped")
}

/// What one env did in a round.
pub(crate) struct Done {
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
}

impl Blocks {
    /// `n` envs `name` with `params` over `workers` env processes (hosted by
    /// `python`), or in this thread when `inline`.
    pub fn new(
        py: Python<'_>,
        name: &str,
        params: &Params,
        n: usize,
        workers: usize,
        inline: bool,
        python: Option<PathBuf>,
    ) -> PyResult<Blocks> {
        let factory: Arc<dyn EnvFactory> = if inline {
            Arc::new(InlineEnvs::new(py, name, params, None)?)
        } else {
            Arc::new(rollway_host::PythonEnvs::new(name, params, python))
        };
        let spec = py.detach(|| factory.spec()).map_err(|e| input_error(format!("env {name}: {e}")))?;
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let workers = if inline { 1 } else { workers.clamp(1, n) };
        let options = BlockOptions { infos: InfoNeed::All, step_timeout: None, cut: None };
        let mut parts = Vec::with_capacity(workers);
        let mut offset = 0;
        for w in 0..workers {
            // Shares differ by at most one slot, the larger first.
            let len = n / workers + usize::from(w < n % workers);
            let block = factory.block(len, options).ok_or_else(|| input_error(format!("env {name} cannot be stepped in blocks")))?;
            parts.push(Box::new(Part {
                offset,
                block,
                obs: Rows::new(ol.row_bytes(), len),
                act: Rows::new(al.row_bytes(), len),
                ops: Vec::with_capacity(len),
                results: Vec::with_capacity(len),
            }));
            offset += len;
        }
        let workers = (1..workers).map(|_| Worker::start()).collect();
        Ok(Blocks { parts, workers, spec, inline, name: name.into() })
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// One round: env `i` runs `ops[i]` (none: it sits the round out), a step reading
    /// `act.row(i)`; observations into `obs`. What each env that ran did, by env.
    pub fn round(&mut self, py: Python<'_>, ops: &[Option<Op>], act: &Rows, obs: &mut Rows) -> PyResult<Vec<Option<Done>>> {
        for part in &mut self.parts {
            part.ops.clear();
            for local in 0..part.obs.len() {
                let i = part.offset + local;
                if let Some(op) = ops[i] {
                    part.ops.push((local, op));
                    part.act.row_mut(local).copy_from_slice(act.row(i));
                }
            }
        }
        let busy = |p: &Part| !p.ops.is_empty();
        if self.inline {
            self.parts.iter_mut().filter(|p| busy(p)).for_each(|p| p.run());
        } else {
            let (first, rest) = self.parts.split_first_mut().expect("at least one part");
            // Borrowed mutably: a channel's receiver may not be shared with the detached closure.
            let workers = &mut self.workers;
            py.detach(move || -> PyResult<()> {
                let mut sent = Vec::new();
                for (k, (slot, worker)) in rest.iter_mut().zip(workers.iter()).enumerate() {
                    if busy(slot) {
                        let part = std::mem::replace(slot, Box::new(Part::empty()));
                        worker.down.as_ref().expect("open").send(part).map_err(|_| gone())?;
                        sent.push(k);
                    }
                }
                if busy(first) {
                    first.run();
                }
                for k in sent {
                    rest[k] = workers[k].up.recv().map_err(|_| gone())?;
                }
                Ok(())
            })?;
        }
        let mut done: Vec<Option<Done>> = (0..ops.len()).map(|_| None).collect();
        for part in self.parts.iter_mut().filter(|p| busy(p)) {
            for (&(local, _), result) in part.ops.iter().zip(part.results.drain(..)) {
                let i = part.offset + local;
                let o = result.map_err(|f| crate::errors::failed(format!("env {} (vector env {i}): {}", self.name, f.error)))?;
                obs.row_mut(i).copy_from_slice(part.obs.row(local));
                done[i] = Some(Done { reward: o.reward, terminated: o.terminated, truncated: o.truncated });
            }
        }
        Ok(done)
    }

    /// Each env's info from the last round.
    pub fn infos(&mut self) -> Vec<Info> {
        self.parts.iter_mut().flat_map(|p| (0..p.obs.len()).map(|l| p.block.info(l)).collect::<Vec<_>>()).collect()
    }
}
