//! Parts that run ahead (`Mode::Async`): within a fragment, each part of the envs
//! goes round its own loop (act, step, reset what ended) and never waits for another.
//!
//! Why: in lockstep every step waits for the slowest part, and then for the policy,
//! while the other parts sit idle. With Python envs in env processes (a PettingZoo
//! env's step is ~300 µs) the processes sat idle 10–19% of the time that way
//! (bench/RESULTS.md, issue 68). Here the collecting thread acts on each part as soon
//! as it is back (env processes' parts in the order their rounds were started, read in
//! turn by this thread; threads' parts as they finish), while the others step: the
//! policy is called once per part per step, on that part's envs (a batch of
//! N / workers), as EnvPool's async mode calls it on each ready batch. Parts meet
//! only at the fragment's end.
//!
//! Every row still lands at its own `(t, slot)`, each slot's episodes are numbered and
//! seeded as in lockstep, and the ended episodes are sorted (`Fragment::sort_finished`,
//! the recording's flush), so a policy that acts on each env alone (the built-in
//! agents: each slot its own random stream) makes the same fragments and the same
//! dataset in either mode. A policy with one random stream for the whole batch (a
//! torch sampler) sees its calls in the order the parts come back, which varies.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::envs::Part;
use super::fragment::Fragment;
use super::sampler::Sampler;
use super::Versions;
use crate::{Error, Result};

/// What a part sent to its thread is doing.
#[derive(Clone, Copy)]
enum Phase {
    Step,
    Reset,
}

/// Where a fragment's parts are while it is made: every part is in exactly one place.
// Boxed: parts travel to their threads and back by pointer.
#[allow(clippy::vec_box)]
struct Flight {
    /// Back, waiting for the policy.
    ready: Vec<Box<Part>>,
    /// At the fragment's last step.
    done: Vec<Box<Part>>,
    /// On their threads.
    flying: usize,
    /// By part index: what the part on its thread is doing.
    phase: Vec<Phase>,
    /// By part index: the step it is at (the recording hands on what ended before the least).
    at: Vec<usize>,
}

impl Sampler {
    /// The fragment's steps with every part running ahead; all parts are back when it returns.
    pub(super) fn run_ahead(&mut self, f: &mut Fragment, versions: &Versions, stop: &AtomicBool) -> Result<()> {
        let ready = std::mem::take(&mut self.envs.parts);
        let (phase, at) = (vec![Phase::Step; ready.len()], vec![0; ready.len()]);
        let mut fl = Flight { phase, at, ready, done: Vec::new(), flying: 0 };
        let made = self.ahead_loop(f, versions, stop, &mut fl);
        // On an error too, so that the rollout closes (or goes on) with every env.
        for _ in 0..fl.flying {
            match self.envs.recv() {
                Ok(p) => fl.done.push(p),
                Err(_) => break,
            }
        }
        let mut parts = fl.done;
        parts.append(&mut fl.ready);
        parts.sort_unstable_by_key(|p| p.index);
        self.envs.parts = parts;
        made
    }

    fn ahead_loop(&mut self, f: &mut Fragment, versions: &Versions, stop: &AtomicBool, fl: &mut Flight) -> Result<()> {
        loop {
            while let Some(mut p) = fl.ready.pop() {
                if stop.load(Ordering::Acquire) {
                    fl.ready.push(p);
                    return Err(Error::Stopped);
                }
                if let Err(e) = self.act_step(f, versions, std::slice::from_mut(&mut p)) {
                    fl.ready.push(p);
                    return Err(e);
                }
                fl.phase[p.index] = Phase::Step;
                self.envs.send(p)?;
                fl.flying += 1;
            }
            if fl.flying == 0 {
                return Ok(());
            }
            let waiting = Instant::now();
            let mut p = self.envs.recv()?;
            f.stats.env_s += waiting.elapsed().as_secs_f64();
            fl.flying -= 1;
            // Slots to reset: those whose episode ended, or whose reset failed (tried again).
            let mut again = Vec::new();
            let read = match fl.phase[p.index] {
                Phase::Step => self.end_step(&mut p, f, &mut again),
                Phase::Reset => self.end_reset(&mut p, f, &mut again),
            };
            if let Err(e) = read {
                fl.done.push(p);
                return Err(e);
            }
            if !again.is_empty() {
                self.begin_reset(&mut p, &again);
                fl.phase[p.index] = Phase::Reset;
                self.envs.send(p)?;
                fl.flying += 1;
                continue;
            }
            p.t += 1;
            self.snapshot(&p, f);
            fl.at[p.index] = p.t;
            if let Some(r) = self.record.as_mut() {
                let least = fl.at.iter().copied().min().unwrap_or(0);
                if let Err(e) = r.flush_before(least) {
                    fl.done.push(p);
                    return Err(e);
                }
            }
            if p.t == self.cfg.steps {
                fl.done.push(p);
            } else {
                fl.ready.push(p);
            }
        }
    }
}
