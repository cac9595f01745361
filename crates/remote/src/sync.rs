//! A run writing to the store: the dataset's lease, and the thread that pushes each
//! shard soon after the local writer commits it.
//!
//! A store has no `flock`, so one writer at a time is kept by a **lease**: the
//! object `.tmp/lease.json` (`{holder, host, pid, renewed}`), created with `If-None-Match: *`
//! and renewed every [`RENEW`]. A writer that finds a lease renewed less than
//! [`LEASE_TTL`] ago refuses to start, naming the holder; an older lease, or one
//! whose holder was a process of this host that no longer exists, is a dead
//! writer's and is taken over. This needs the writers' clocks to agree to well
//! within the TTL, which NTP gives. Index objects are created with
//! `If-None-Match: *` too, so even two writers that both believe they hold the
//! lease cannot overwrite each other's commits: the second one's push fails.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;

use crate::error::LocalContext;
use crate::health::StoreHealth;
use crate::members::Numbering;
use crate::push::{self, Pusher, Settled};
use crate::replica::{self, Moved};
use crate::store::Remote;
use crate::{Error, Result};

const LEASE: &str = ".tmp/lease.json";
/// A lease not renewed for this long belongs to a dead writer.
pub const LEASE_TTL: Duration = Duration::from_secs(60);
/// How often a live writer renews its lease.
pub const RENEW: Duration = Duration::from_secs(10);
/// How often the pusher looks for newly committed local shards.
const POLL: Duration = Duration::from_millis(50);

fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn lease_body(holder: &str) -> Bytes {
    let body = serde_json::json!({"holder": holder, "host": hostname(), "pid": std::process::id(), "renewed": now()});
    Bytes::from(body.to_string())
}

/// Whether the lease `v` is a dead writer's: not renewed for [`LEASE_TTL`], or
/// held by a process of this host that is gone (a resume right after a kill).
fn is_stale(v: &serde_json::Value) -> (bool, u64) {
    let age = now().saturating_sub(v["renewed"].as_u64().unwrap_or(0));
    let here = v["host"].as_str() == Some(hostname().as_str());
    let gone = here && v["pid"].as_u64().is_some_and(process_gone);
    (age >= LEASE_TTL.as_secs() || gone, age)
}

/// The lease as stored, if any.
fn lease(remote: &Remote) -> Result<Option<serde_json::Value>> {
    Ok(remote.get(LEASE)?.map(|b| serde_json::from_slice(&b).unwrap_or_default()))
}

/// Who holds the dataset's lease, live or not.
pub(crate) fn holder(remote: &Remote) -> Result<Option<String>> {
    Ok(lease(remote)?.map(|v| v["holder"].as_str().unwrap_or("?").to_string()))
}

/// Who holds the dataset's lease, if the holder is alive.
pub(crate) fn live_holder(remote: &Remote) -> Result<Option<String>> {
    Ok(lease(remote)?.filter(|v| !is_stale(v).0).map(|v| v["holder"].as_str().unwrap_or("?").to_string()))
}

/// Takes the dataset's lease for `holder`, or says who holds it.
pub(crate) fn take_lease(remote: &Remote, holder: &str) -> Result<()> {
    for _ in 0..2 {
        if remote.put(LEASE, lease_body(holder), true)? {
            return Ok(());
        }
        let Some(v) = lease(remote)? else { continue };
        let (stale, age) = is_stale(&v);
        if !stale {
            let who = v["holder"].as_str().unwrap_or("?");
            let message = format!(
                "is being written by {who} (its lease {} was renewed {age} s ago; a writer that died frees it {} s after its last renewal)",
                remote.url_of(LEASE),
                LEASE_TTL.as_secs()
            );
            return Err(Error::Conflict { url: remote.url().to_string(), message });
        }
        remote.put(LEASE, lease_body(holder), false)?;
        return Ok(());
    }
    Err(Error::Conflict { url: remote.url().to_string(), message: "its lease changed hands while this writer tried to take it".into() })
}

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
        // A conflict the push thread met first says why (a fenced commit, say), better
        // than the lease check that refuses every push after it.
        let last = last.map_err(|e| match earlier {
            Some(first @ Error::Conflict { .. }) if matches!(e, Error::Conflict { .. }) => first,
            _ => e,
        })?;
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
            Err(e) => (pause, last_error) = ((pause * 2).min(RENEW), Some(e)),
        }
    }
    (total, last_error)
}

pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "host".into())
}

/// Whether process `pid` of this host is gone: what tells a dead writer's lease, work
/// directory or reader's pin from a live one's.
pub(crate) fn process_gone(pid: u64) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}
