//! The dataset's lease on a store: one writer at a time, where a store has no `flock`.
//!
//! The lease is the object `.tmp/lease.json` (`{holder, host, pid, renewed}`),
//! created with `If-None-Match: *` and renewed every [`RENEW`] by its holder (the
//! push thread, `crate::sync`). A writer that finds a lease renewed less than
//! [`LEASE_TTL`] ago refuses to start, naming the holder; an older lease, or one
//! whose holder was a process of this host that no longer exists, is a dead
//! writer's and is taken over. This needs the writers' clocks to agree to well
//! within the TTL, which NTP gives. Index objects are created with
//! `If-None-Match: *` too, so even two writers that both believe they hold the
//! lease cannot overwrite each other's commits: the second one's push fails; and a
//! new holder fences the numbers members had claimed (`crate::members`).
//!
//! Cost: a conditional PUT to take it, a PUT every [`RENEW`] to keep it, a DELETE
//! to give it back; a member's GET before each push that commits.

use std::time::{Duration, SystemTime};

use bytes::Bytes;

use crate::host::{hostname, process_gone};
use crate::store::Remote;
use crate::{Error, Result};

/// The lease object, relative to the dataset.
pub(crate) const LEASE: &str = ".tmp/lease.json";
/// A lease not renewed for this long belongs to a dead writer.
pub const LEASE_TTL: Duration = Duration::from_secs(60);
/// How often a live writer renews its lease.
pub const RENEW: Duration = Duration::from_secs(10);

/// Seconds since the epoch: what leases are stamped with.
pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The lease's body for `holder`, renewed now.
pub(crate) fn lease_body(holder: &str) -> Bytes {
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
