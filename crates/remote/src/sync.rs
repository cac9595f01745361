//! A run writing to the store: the thread that pushes each shard soon after the
//! local writer commits it, and, for the dataset's one writer, renews its lease
//! (`crate::lease`) meanwhile.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::LocalContext;
use crate::health::StoreHealth;
use crate::host::hostname;
use crate::lease::{lease_body, now, take_lease, LEASE, RENEW};
use crate::members::Numbering;
use crate::push::{self, Pusher, Settled};
use crate::replica::{self, Moved};
use crate::store::Remote;
use crate::{Error, Result};

/// How often the pusher looks for newly committed local shards.
const POLL: Duration = Duration::from_millis(50);

/// `verify --repair` on a store: under the dataset's lease (so with no writer
/// running), settles what killed writers left (`push::settle`).
pub fn repair(remote: &Remote) -> Result<Settled> {
    if !remote.holds_dataset()? {
        return Err(Error::NotADataset { url: remote.url().to_string(), message: "it has no rollway.json".into() });
    }
    take_lease(remote, &format!("{}-{}-{}-repair", hostname(), std::process::id(), now()))?;
    let settled = push::settle(remote);
    remote.delete(LEASE)?;
    settled
}

/// A local work directory being pushed to the store while a writer fills it: the
/// dataset's one writer (the lease holder: a run, a rollout, a distributed run's
/// driver) or a member of a distributed run.
pub struct Writing {
    work: PathBuf,
    pusher: Arc<Mutex<Pusher>>,
    /// The lease this writer holds and renews; `None` for a member.
    holder: Option<String>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<(Moved, Option<Error>)>>,
    health: StoreHealth,
}

impl Writing {
    /// Takes `remote`'s lease, finishes what a killed writer left on the store,
    /// brings a fresh local work directory up to the store (`pull_existing`: the
    /// dataset's shards, for a resume or an append) and starts pushing from it.
    pub fn open(remote: Remote, pull_existing: bool) -> Result<Writing> {
        let holder = format!("{}-{}-{}", hostname(), std::process::id(), now());
        take_lease(&remote, &holder)?;
        push::settle(&remote)?;
        let work = crate::cache::work_dir(&remote)?;
        if pull_existing {
            replica::pull(&remote, &work)?;
        }
        let pusher = Pusher::new(remote, &work)?;
        Self::start(work, pusher, Some(holder))
    }

    /// Member `id` of the distributed run whose driver holds `remote`'s lease: a
    /// fresh work directory holding the dataset's metadata (the driver's run in it),
    /// for the local writer to join, pushed under claimed shard numbers
    /// (`crate::members`).
    pub fn join(remote: Remote, id: &str) -> Result<Writing> {
        let numbering = Numbering::start(&remote, id)?;
        let work = crate::cache::work_dir(&remote)?;
        replica::pull_metadata(&remote, &work)?;
        // The folders a prepared dataset has, which a joining writer expects.
        for d in ["index", "steps"].map(|d| work.join(d)) {
            std::fs::create_dir_all(&d).local("creating", &d)?;
        }
        Self::start(work.clone(), Pusher::member(remote, &work, numbering), None)
    }

    fn start(work: PathBuf, pusher: Pusher, holder: Option<String>) -> Result<Writing> {
        let health = StoreHealth::new(pusher.remote().url());
        let pusher = Arc::new(Mutex::new(pusher));
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, p, h, told) = (stop.clone(), pusher.clone(), holder.clone(), health.clone());
        let handle = std::thread::Builder::new()
            .name("rollway-push".into())
            .spawn(move || push_loop(&p, &flag, h.as_deref(), &told))
            .map_err(|source| Error::Local { op: "starting the push thread", path: work.clone(), source })?;
        Ok(Writing { work, pusher, holder, stop, handle: Some(handle), health })
    }

    /// Whether the store answers the push thread, for a run's progress line ([`StoreHealth::trouble`]).
    pub fn health(&self) -> StoreHealth {
        self.health.clone()
    }

    /// The local directory the run writes (a dataset, pushed as it grows).
    pub fn work_dir(&self) -> &Path {
        &self.work
    }

    /// Pushes what is committed locally now, without waiting for the push thread:
    /// a driver's new run must be on the store before its members start.
    pub fn flush(&self) -> Result<Moved> {
        lock(&self.pusher).push()
    }

    /// Brings the index objects that others (a distributed run's members) committed
    /// into the work directory, without their data: what a driver counts and sums
    /// up. How many were new.
    pub fn pull_index(&self) -> Result<u64> {
        lock(&self.pusher).pull_index()
    }

    /// Pushes what is left and, for the lease holder, settles what members left on
    /// the store and releases the lease; when all is on the store, removes the work
    /// directory. What was pushed over the writer's life.
    pub fn finish(mut self) -> Result<Moved> {
        self.stop.store(true, Ordering::Relaxed);
        let (mut moved, earlier) = self.handle.take().expect("joined once").join().expect("the push thread does not panic");
        let mut pusher = lock(&self.pusher);
        // The last push gets a few tries more, each with the client's own retries.
        let mut last = pusher.push();
        for pause in [1, 5, 15] {
            // Another writer's commit does not go away by waiting.
            if matches!(last, Ok(_) | Err(Error::Conflict { .. })) {
                break;
            }
            std::thread::sleep(Duration::from_secs(pause));
            last = pusher.push();
        }
        let last = last.map_err(|e| first_conflict(earlier, e))?;
        if self.holder.is_some() {
            push::settle(pusher.remote())?;
            pusher.remote().delete(LEASE)?;
        }
        let _ = std::fs::remove_dir_all(&self.work);
        moved.shards += last.shards;
        moved.bytes += last.bytes;
        Ok(moved)
    }
}

fn lock(p: &Mutex<Pusher>) -> std::sync::MutexGuard<'_, Pusher> {
    // A push that panicked left nothing half-done that the next push does not redo.
    p.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for Writing {
    /// A writer dropped unfinished (its run failed to start) stops pushing and, if
    /// it holds the lease, gives it back; its work directory is left for `cache` to
    /// clear.
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.stop.store(true, Ordering::Relaxed);
            if h.join().is_ok() && self.holder.is_some() {
                let _ = lock(&self.pusher).remote().delete(LEASE);
            }
        }
    }
}

/// The error to report of a push that failed after an `earlier` one: a conflict met
/// first says why (a fenced commit, say), better than the lease checks that refuse
/// every push after it; otherwise the latest.
fn first_conflict(earlier: Option<Error>, latest: Error) -> Error {
    match earlier {
        Some(first @ Error::Conflict { .. }) if matches!(latest, Error::Conflict { .. }) => first,
        _ => latest,
    }
}

/// Pushes every [`POLL`] until stopped, renewing the lease it holds. A failed push
/// (the store unreachable for longer than the client's retries) is tried again
/// after a pause that doubles up to [`RENEW`]; the run goes on recording locally
/// meanwhile.
fn push_loop(pusher: &Mutex<Pusher>, stop: &AtomicBool, holder: Option<&str>, health: &StoreHealth) -> (Moved, Option<Error>) {
    let mut total = Moved::default();
    let (mut renewed, mut pause, mut last_error) = (Instant::now(), POLL, None);
    while !stop.load(Ordering::Relaxed) {
        let slept = Instant::now();
        while slept.elapsed() < pause && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(POLL.min(pause));
        }
        let mut p = lock(pusher);
        health.pushing();
        let step = p.push().and_then(|m| {
            if let Some(holder) = holder.filter(|_| renewed.elapsed() >= RENEW) {
                p.remote().put(LEASE, lease_body(holder), false)?;
                renewed = Instant::now();
            }
            Ok(m)
        });
        drop(p);
        health.pushed(step.as_ref().err().map(ToString::to_string));
        match step {
            Ok(m) => {
                total.shards += m.shards;
                total.bytes += m.bytes;
                (pause, last_error) = (POLL, None);
            }
            Err(e) => (pause, last_error) = ((pause * 2).min(RENEW), Some(first_conflict(last_error.take(), e))),
        }
    }
    (total, last_error)
}
