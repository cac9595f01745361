//! Fragments made whole: a [`Scan`] steps every slot T times in one call, its policy
//! acting inside the same call (a JAX env and a JAX policy in one jitted
//! `lax.scan`, as PureJaxRL collects), and the rollout turns its arrays into the
//! [`Fragment`] the step-at-a-time sampler would have made: episode ids and seeds,
//! `first`, returns, finished episodes with their final observations and infos,
//! versions, and the recording.
//!
//! Why: a cheap env stepped a round at a time pays a call a step (state in, outputs
//! out, the trip between Rust and Python, per-slot bookkeeping), which on gymnax's
//! Breakout-MinAtar is three times the step itself (bench/RESULTS.md, issue 69).
//! Here that is paid once a fragment. The cost: no per-slot faults (an error in the
//! call ends the rollout: one jitted call either runs or fails as a whole) and no
//! rollway-side time limit (the env's own params carry it).
//!
//! Seeds: slot `i`'s episodes are numbered as the sampler numbers them, and the scan
//! is handed, for each slot, the seeds of the next T episodes it may start (at most
//! one a step); it resets with the next of them at each end, or, without
//! `seed_each_episode`, goes on with the env's own stream after the first.
//! The cost per fragment: one copy of the observations into the fragment, a pass
//! over T × N flags, and, when recording, a row copy per slot per step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rollway_core::{seed, ActBatch, EnvSpec, Info, Layout};

use super::fragment::{Finished, Fragment, ObsBuffers};
use super::record::Recording;
use super::sampler::Track;
use super::{Extra, Policy, RolloutConfig, Versions};
use crate::{Error, Result};

/// T steps of N slots from one [`Scan::steps`] call, time-major (`t * N + i`).
#[derive(Clone, Debug, Default)]
pub struct Scanned {
    /// One observation row per step that ended an episode, in `(t, i)` order: what
    /// that step itself returned (the final observation).
    pub final_obs: Vec<u8>,
    /// `T * N` action rows.
    pub actions: Vec<u8>,
    /// `T * N`.
    pub rewards: Vec<f32>,
    /// `T * N`.
    pub terminated: Vec<bool>,
    /// `T * N`.
    pub truncated: Vec<bool>,
    /// The policy's extras, each `T * N` rows.
    pub extras: Vec<Extra>,
    /// The final info of each step that ended an episode, in `(t, i)` order.
    pub infos: Vec<Info>,
}

/// An env and its policy that make T steps of every slot in one call.
pub trait Scan: Send {
    /// Starts every slot's first episode: slot `i` with `seeds[i]`. Returns the `N`
    /// first observation rows.
    fn begin(&mut self, seeds: &[u64]) -> rollway_core::Result<Vec<u8>>;

    /// Steps every slot `steps` times. `seeds` (`steps * N`, row `j` for slot `i` at
    /// `j * N + i`) are the seeds of the episodes each slot starts in this call, in
    /// order; `seeded` false: only the first episode of a slot is seeded, and later
    /// ones go on with the env's own random stream (`seeds` unused). `obs` holds
    /// `(steps + 1) * N` observation rows of stale bytes: the scan writes rows `N..`,
    /// what each step left (the next episode's first observation where the step
    /// ended one); the first `N` are the fragment's first row, the scanner's. It is
    /// a buffer the fragments' consumer gave back (`ObsBuffers`): a fresh one of
    /// that size is fresh pages, each faulted in as it is first written.
    fn steps(&mut self, steps: usize, seeds: &[u64], seeded: bool, obs: &mut [u8]) -> rollway_core::Result<Scanned>;

    /// The fragment is made and the collecting thread may wait a while: let go of
    /// what ties the scan to that thread meanwhile.
    fn pause(&mut self) {}
}

/// What a published update is applied to in a scanned rollout: the scan holds the
/// policy, so an update reaches it through the host's own handle (a Python
/// rollout's `load`), never through this.
struct InScan;

impl Policy for InScan {
    fn act(&mut self, _batch: &mut ActBatch<'_>, _extras: &mut Vec<Extra>) -> rollway_core::Result<()> {
        Err(rollway_core::Error::Agent { agent: "scan".into(), message: "a scanned rollout's policy acts inside its scan".into() })
    }
}

/// Makes fragments from a [`Scan`] (see the module docs).
pub(crate) struct Scanner {
    cfg: Arc<RolloutConfig>,
    scan: Box<dyn Scan>,
    obs_row: usize,
    act_row: usize,
    /// Each slot's episode.
    track: Vec<Track>,
    /// Episodes each slot has started.
    started: Vec<u64>,
    /// The observations of the next fragment's first row, and whether each starts an episode.
    last: Vec<u8>,
    first: Vec<bool>,
    version: u64,
    record: Option<Recording>,
    obs_buffers: ObsBuffers,
}

impl Scanner {
    pub fn new(
        cfg: Arc<RolloutConfig>,
        spec: &EnvSpec,
        scan: Box<dyn Scan>,
        record: Option<Box<dyn crate::Observer + Send>>,
    ) -> Result<Scanner> {
        if record.is_some() {
            cfg.validate_recording()?;
        }
        if cfg.max_steps.is_some() {
            let message = "a scanned rollout's episodes end where the env's own params say (its time limit field)".into();
            return Err(Error::Config { field: "max_episode_steps", message });
        }
        let (obs_row, act_row) = (Layout::of(&spec.observation_space).row_bytes(), Layout::of(&spec.action_space).row_bytes());
        let n = cfg.envs;
        let started = if cfg.episode_starts.is_empty() { vec![0; n] } else { cfg.episode_starts.clone() };
        let record = record.map(|o| Recording::new(o, n, obs_row, act_row));
        let (track, first) = (vec![Track::default(); n], vec![true; n]);
        let version = cfg.version;
        Ok(Scanner {
            cfg,
            scan,
            obs_row,
            act_row,
            track,
            started,
            last: Vec::new(),
            first,
            version,
            record,
            obs_buffers: ObsBuffers::default(),
        })
    }

    /// Slot `g`'s next episode: its id (now its track's) and its seed.
    fn next_episode(&mut self, g: usize) -> (u64, u64) {
        let id = self.cfg.episode_id(g, self.started[g]);
        self.started[g] += 1;
        self.track[g] = Track { id, ret: 0.0, len: 0 };
        (id, seed::episode_seed(self.cfg.seed, id))
    }

    /// The seeds of the `k` episodes each slot would start next (`k * N`, by `j * N + i`), not taken.
    fn upcoming(&self, k: usize) -> Vec<u64> {
        let n = self.cfg.envs;
        (0..k * n)
            .map(|at| seed::episode_seed(self.cfg.seed, self.cfg.episode_id(at % n, self.started[at % n] + (at / n) as u64)))
            .collect()
    }

    fn begin(&mut self) -> Result<()> {
        let seeds: Vec<u64> = (0..self.cfg.envs).map(|g| self.next_episode(g).1).collect();
        self.last = self.scan.begin(&seeds).map_err(scan_error)?;
        self.check_rows("begin's observations", self.last.len(), self.cfg.envs, self.obs_row)?;
        if let Some(r) = self.record.as_mut() {
            for (g, &s) in seeds.iter().enumerate() {
                r.begin(g, s, &self.last[g * self.obs_row..(g + 1) * self.obs_row]);
            }
        }
        Ok(())
    }

    fn check_rows(&self, what: &str, bytes: usize, rows: usize, row: usize) -> Result<()> {
        match bytes == rows * row {
            true => Ok(()),
            false => Err(Error::Policy { message: format!("the scan's {what}: {bytes} bytes for {rows} rows of {row}") }),
        }
    }

    /// Collects one fragment. `stop` ends it early with [`Error::Stopped`].
    pub fn fragment(&mut self, versions: &Versions, stop: &AtomicBool) -> Result<Fragment> {
        if stop.load(Ordering::Acquire) {
            return Err(Error::Stopped);
        }
        let clock = Instant::now();
        if self.last.is_empty() {
            self.begin()?;
        }
        self.version = versions.apply(self.version, &mut InScan)?;
        let (t_len, n) = (self.cfg.steps, self.cfg.envs);
        let seeds = if self.cfg.seed_each_episode { self.upcoming(t_len) } else { Vec::new() };
        let mut f = Fragment::with_capacity(t_len, n, self.obs_row, self.act_row, &self.obs_buffers);
        let s = self.scan.steps(t_len, &seeds, self.cfg.seed_each_episode, &mut f.obs).map_err(scan_error)?;
        self.scan.pause();
        let env_s = clock.elapsed().as_secs_f64();
        self.check(&s)?;
        let ob = self.obs_row;
        f.version.fill(self.version);
        f.obs[..n * ob].copy_from_slice(&self.last);
        self.ledger(&mut f, &s)?;
        self.last.copy_from_slice(&f.obs[t_len * n * ob..]);
        let Scanned { final_obs, actions, rewards, terminated, truncated, extras, .. } = s;
        (f.final_obs, f.actions, f.rewards, f.extras) = (final_obs, actions, rewards, extras);
        (f.terminated, f.truncated) = (terminated, truncated);
        let st = &mut f.stats;
        (st.env_s, st.batches) = (env_s, t_len as u64);
        st.wall_s = clock.elapsed().as_secs_f64();
        st.steps_per_s = (t_len * n) as f64 / st.wall_s.max(1e-9);
        st.mean_batch = n as f64;
        Ok(f)
    }

    /// Every array has the fragment's size; as many infos as ends.
    fn check(&self, s: &Scanned) -> Result<()> {
        let tn = self.cfg.steps * self.cfg.envs;
        self.check_rows("actions", s.actions.len(), tn, self.act_row)?;
        let lens = [s.rewards.len(), s.terminated.len(), s.truncated.len()];
        if lens.iter().any(|&l| l != tn) {
            return Err(Error::Policy { message: format!("the scan's rewards, terminated, truncated: {lens:?} values for {tn} steps") });
        }
        let ends = s.terminated.iter().zip(&s.truncated).filter(|(a, b)| **a || **b).count();
        if ends != s.infos.len() || ends * self.obs_row != s.final_obs.len() {
            let (infos, rows) = (s.infos.len(), s.final_obs.len() / self.obs_row.max(1));
            return Err(Error::Policy {
                message: format!("the scan gave {infos} final infos and {rows} final observations for {ends} episode ends"),
            });
        }
        if let Some(e) = s.extras.iter().find(|e| e.values.len() != tn * e.width()) {
            return Err(Error::Policy {
                message: format!("extra `{}`: {} values for {tn} steps of shape {:?}", e.name, e.values.len(), e.shape),
            });
        }
        Ok(())
    }

    /// Episode ids, `first`, returns, ends and the recording, step by step.
    fn ledger(&mut self, f: &mut Fragment, s: &Scanned) -> Result<()> {
        let obs = std::mem::take(&mut f.obs);
        let made = self.ledger_over(f, s, &obs);
        f.obs = obs;
        made
    }

    fn ledger_over(&mut self, f: &mut Fragment, s: &Scanned, obs: &[u8]) -> Result<()> {
        let (t_len, n, ob, ab) = (self.cfg.steps, self.cfg.envs, self.obs_row, self.act_row);
        let mut ends = s.infos.iter().zip(s.final_obs.chunks_exact(ob.max(1)));
        for t in 0..=t_len {
            for g in 0..n {
                let at = t * n + g;
                (f.first[at], f.episode[at]) = (self.first[g], self.track[g].id);
                if t == t_len {
                    continue;
                }
                if let Some(r) = self.record.as_mut() {
                    r.act(g, &s.actions[at * ab..(at + 1) * ab], &Vec::new(), self.version, &s.extras, at);
                }
                let (reward, term, trunc) = (s.rewards[at] as f64, s.terminated[at], s.truncated[at]);
                let tr = &mut self.track[g];
                (tr.ret, tr.len) = (tr.ret + reward, tr.len + 1);
                let Track { id: episode, ret, len: length } = *tr;
                let next_row = &obs[(at + n) * ob..(at + n + 1) * ob];
                self.first[g] = term || trunc;
                // Where the step ended an episode, what it returned is that end's final row.
                let end = (term || trunc).then(|| ends.next().expect("checked: a final info and row per end"));
                if let Some(r) = self.record.as_mut() {
                    r.step(g, reward, term, trunc, end.map_or(next_row, |(_, row)| row));
                    if let Some((info, _)) = end {
                        r.end(g, episode, 0, info.clone(), t);
                    }
                }
                let Some((info, _)) = end else { continue };
                f.finished.push(Finished { env: g, episode, ret, length, terminated: term, step: t, info: info.clone() });
                let (_, seed) = self.next_episode(g);
                if let Some(r) = self.record.as_mut() {
                    r.begin(g, seed, next_row);
                }
            }
            if let Some(r) = self.record.as_mut() {
                r.flush()?;
            }
        }
        Ok(())
    }
}

fn scan_error(e: rollway_core::Error) -> Error {
    Error::Policy { message: e.to_string() }
}
