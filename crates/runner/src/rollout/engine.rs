//! [`Rollout`]: the learner's handle on the collecting thread (see the module docs
//! of [`super`] for permits, versions and delivery).
//!
//! At `max_policy_lag = 0` there is no such thread: nothing may be collected while
//! the learner trains, so the thread that calls `collect` makes the fragment itself.
//! Besides two hand-offs per fragment, that saves what a second thread costs a
//! policy with thread-local runtime state. torch's intra-op OpenMP pool is one team
//! per calling thread: a forward on the collecting thread and an update on the
//! learner's made two teams of spinning workers on the same cores, and the pixel
//! PPO's forward and update measured up to 20% slower than under a plain loop
//! (bench/RESULTS.md, issue 32).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use rollway_core::{EnvFactory, EnvSpec};

use super::sampler::Sampler;
use super::scan::{Scan, Scanner};
use super::{Fragment, LagGate, Policy, RolloutConfig, RolloutTotals, Update, Versions};
use crate::{Error, Result};

/// What the learner and the collecting thread share.
struct Shared {
    versions: Versions,
    /// Which fragments the collecting thread may start, and which the learner gets.
    gate: Mutex<LagGate>,
    wake: Condvar,
    stop: AtomicBool,
}

impl Shared {
    fn gate(&self) -> std::sync::MutexGuard<'_, LagGate> {
        self.gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn grant(&self) {
        self.gate().ask(1);
        self.wake.notify_one();
    }

    /// Waits for a permit and takes it; returns how long it waited, or `None` once stopped.
    fn take(&self) -> Option<f64> {
        let since = Instant::now();
        let mut g = self.gate();
        while !self.stop.load(Ordering::Acquire) {
            if g.take() {
                return Some(since.elapsed().as_secs_f64());
            }
            g = self.wake.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        None
    }
}

/// What makes a fragment: envs stepped a round at a time, or a scan that makes it whole.
enum Maker {
    Rounds(Box<Sampler>),
    Scan(Box<Scanner>),
}

impl Maker {
    fn fragment(&mut self, versions: &Versions, stop: &AtomicBool) -> Result<Fragment> {
        match self {
            Maker::Rounds(s) => s.fragment(versions, stop),
            Maker::Scan(s) => s.fragment(versions, stop),
        }
    }
}

/// Who makes the fragments.
enum Driver {
    /// `max_policy_lag = 0`: the thread calling `collect`; `since` the last fragment's end.
    Caller { sampler: Maker, since: Instant },
    /// `max_policy_lag ≥ 1`: a collecting thread, running ahead on permits.
    Thread { fragments: Receiver<Result<Fragment>>, thread: Option<JoinHandle<()>> },
}

/// A running rollout: envs and policy kept up between fragments, made on request
/// (ahead of it, in a collecting thread, when `max_policy_lag ≥ 1`). Dropping it
/// stops that thread (within one step) and closes every env, hosted processes included.
pub struct Rollout {
    cfg: Arc<RolloutConfig>,
    spec: EnvSpec,
    shared: Arc<Shared>,
    driver: Driver,
    /// A permit was granted for the fragment the learner is waiting for.
    asked: bool,
    ended: bool,
    totals: RolloutTotals,
}

impl Rollout {
    /// Checks `cfg`, reads the env spec, starts the envs (and, at lag ≥ 1, the collecting thread).
    /// With `max_policy_lag = k ≥ 1` the first `k` fragments start at once.
    pub fn start(cfg: RolloutConfig, envs: Arc<dyn EnvFactory>, policy: Box<dyn Policy>) -> Result<Rollout> {
        Rollout::recording(cfg, envs, policy, None)
    }

    /// [`Rollout::start`], handing every episode that ends to `record` (in the order
    /// they end, from the collecting thread) with its steps, the policy's extras and
    /// the acting versions: a dataset writer makes the rollout a replay buffer. An
    /// error from `record` ends the rollout. Episodes cut by env faults are not passed on.
    pub fn recording(
        cfg: RolloutConfig,
        envs: Arc<dyn EnvFactory>,
        policy: Box<dyn Policy>,
        record: Option<Box<dyn crate::Observer + Send>>,
    ) -> Result<Rollout> {
        cfg.validate()?;
        let spec = envs.spec()?;
        let cfg = Arc::new(cfg);
        let sampler = Maker::Rounds(Box::new(Sampler::new(cfg.clone(), &envs, &spec, policy, record)?));
        Rollout::driven(cfg, spec, sampler)
    }

    /// A rollout whose fragments `scan` makes whole (see [`super::scan`]), for an env of
    /// `spec`, recording into `record` as [`Rollout::recording`] does.
    pub fn scanning(
        cfg: RolloutConfig,
        spec: EnvSpec,
        scan: Box<dyn Scan>,
        record: Option<Box<dyn crate::Observer + Send>>,
    ) -> Result<Rollout> {
        cfg.validate()?;
        let cfg = Arc::new(cfg);
        let sampler = Maker::Scan(Box::new(Scanner::new(cfg.clone(), &spec, scan, record)?));
        Rollout::driven(cfg, spec, sampler)
    }

    fn driven(cfg: Arc<RolloutConfig>, spec: EnvSpec, mut sampler: Maker) -> Result<Rollout> {
        let shared = Arc::new(Shared {
            versions: Versions::at(cfg.version),
            gate: Mutex::new(LagGate::new(cfg.max_policy_lag)),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        if cfg.max_policy_lag == 0 {
            let driver = Driver::Caller { sampler, since: Instant::now() };
            return Ok(Rollout { cfg, spec, shared, driver, asked: false, ended: false, totals: RolloutTotals::default() });
        }
        let (tx, fragments) = unbounded();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("rollway-rollout".into())
            .spawn(move || {
                while let Some(waited) = sh.take() {
                    match sampler.fragment(&sh.versions, &sh.stop) {
                        Ok(mut f) => {
                            f.stats.waited_s = waited;
                            if tx.send(Ok(f)).is_err() {
                                return;
                            }
                        }
                        Err(Error::Stopped) => return,
                        Err(e) => {
                            let _ = tx.send(Err(e));
                            return;
                        }
                    }
                }
            })
            .map_err(|e| Error::Worker { worker: 0, message: e.to_string() })?;
        let driver = Driver::Thread { fragments, thread: Some(thread) };
        Ok(Rollout { cfg, spec, shared, driver, asked: false, ended: false, totals: RolloutTotals::default() })
    }

    /// The next fragment, waiting for it as long as it takes.
    pub fn collect(&mut self) -> Result<Fragment> {
        loop {
            if let Some(f) = self.collect_timeout(Duration::from_secs(3600))? {
                return Ok(f);
            }
        }
    }

    /// The next fragment, or `None` if it is not ready within `timeout` (a host can
    /// then look for signals and ask again: the request stands). An error ends the
    /// rollout: the policy failed, or an env failed more than `max_restarts` times in a row.
    /// At lag 0 the fragment is made here, in this thread, whatever `timeout` says.
    pub fn collect_timeout(&mut self, timeout: Duration) -> Result<Option<Fragment>> {
        if self.ended {
            return Err(Error::Worker { worker: 0, message: "the rollout has ended after an error".into() });
        }
        let fragments = match &mut self.driver {
            Driver::Caller { sampler, since } => {
                let waited = since.elapsed().as_secs_f64();
                let made = sampler.fragment(&self.shared.versions, &self.shared.stop);
                *since = Instant::now();
                let mut f = made.inspect_err(|_| self.ended = true)?;
                f.stats.waited_s = waited;
                return Ok(Some(self.deliver(f)));
            }
            Driver::Thread { fragments, .. } => fragments,
        };
        if !self.asked {
            self.shared.grant();
            self.asked = true;
        }
        let deadline = Instant::now() + timeout;
        loop {
            let f = match fragments.recv_deadline(deadline) {
                Ok(Ok(f)) => f,
                Ok(Err(e)) => {
                    self.ended = true;
                    return Err(e);
                }
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Err(Error::Worker { worker: 0, message: "the collecting thread ended unexpectedly".into() });
                }
            };
            let current = self.shared.versions.current();
            if self.shared.gate().admit(f.oldest_version(), f.version.len() as u64, current).is_none() {
                // Too old for the bound: dropped and counted, and the gate lets another start.
                self.shared.wake.notify_one();
                continue;
            }
            self.asked = false;
            return Ok(Some(self.deliver(f)));
        }
    }

    fn deliver(&mut self, mut f: Fragment) -> Fragment {
        f.measure_lag(self.shared.versions.current());
        f.stats.dropped_steps = self.dropped_steps();
        self.totals.add(&f);
        f
    }

    /// What the rollout delivered so far (the run summary a recording rollout stores).
    pub fn totals(&self) -> RolloutTotals {
        self.totals.at()
    }

    /// Makes the next policy version (returned): steps acted on from the next batch
    /// on carry it. `update`, if any, is applied to the policy first, between two
    /// batches of the collecting thread.
    pub fn publish(&self, update: Option<Update>) -> u64 {
        self.shared.versions.publish(None, update).expect("the next version is always newer")
    }

    /// [`Rollout::publish`] of the learner's own version number, which must be newer
    /// than the current one: a rollout that is one of several acting for a learner
    /// (`rollway.ray.Rollout`'s actors, each restarted afresh at version 0) acts,
    /// records and reports with the learner's count, not one of its own.
    pub fn publish_version(&self, version: u64, update: Option<Update>) -> Result<u64> {
        self.shared.versions.publish(Some(version), update)
    }

    /// The latest published version (0 before any).
    pub fn version(&self) -> u64 {
        self.shared.versions.current()
    }

    /// Steps dropped for staleness so far.
    pub fn dropped_steps(&self) -> u64 {
        self.shared.gate().dropped_steps()
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The configuration.
    pub fn config(&self) -> &RolloutConfig {
        &self.cfg
    }
}

impl Drop for Rollout {
    fn drop(&mut self) {
        {
            // Under the gate's lock, so a thread about to wait sees it.
            let _g = self.shared.gate();
            self.shared.stop.store(true, Ordering::Release);
        }
        self.shared.wake.notify_all();
        if let Driver::Thread { thread, .. } = &mut self.driver {
            if let Some(h) = thread.take() {
                let _ = h.join();
            }
        }
    }
}
