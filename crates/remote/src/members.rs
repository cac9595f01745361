//! Many writers on a store: the members of a distributed run (Ray actors on nodes
//! that share no filesystem) pushing the shards of one run into one dataset.
//!
//! The run's driver holds the dataset's lease ([`crate::lease`]) for the whole run;
//! members write under it and take none of their own. What they add to the one
//! writer's protocol is who uses which shard number (FORMAT.md, "On an object store"):
//!
//! - **Claims.** A member records into its own work directory, whose shards are
//!   numbered from 0 as in any new local dataset, and gives each a store number as
//!   it pushes it: it creates `.tmp/claims/shard-N.claim` with `If-None-Match: *`
//!   (the store refuses a second creator of a name, as `link` does locally), and
//!   tries N+1 when the claim is taken or shard N is committed already. The index is
//!   renumbered on the way (its `shard` fields and its files' names); the data's
//!   bytes, and so the hashes, do not change. The claim is deleted once the shard is
//!   published.
//! - **The driver's lease.** A member starts only while a live lease is held, and
//!   checks before each commit that the same holder still has it: the members of a
//!   driver that died, whose dataset a new writer has taken over, stop rather than
//!   commit beside it.
//! - **The fence.** The check and the commit are two requests, so a member can pass
//!   the check, stall, and commit after a new holder has counted what is committed.
//!   A new holder therefore first commits every claimed, uncommitted number as an
//!   empty shard ([`fence_claims`]): the stalled member's commit then fails, and
//!   every episode is on the store once.
//! - **Cleanup.** Members clean up nothing. A member killed mid-push leaves a claim
//!   and staged files, which the lease holder settles (publishes those of committed
//!   shards, deletes the rest and every claim) when it opens the dataset and when it
//!   finishes, after the run's members are gone. Until then, rollway's readers read
//!   a committed shard whose member died before publishing from its staged copy.
//!
//! Cost per shard: a conditional PUT and a HEAD to claim, a DELETE to release; per
//! push round that commits, a GET of the lease. A claim lost to another member adds
//! two listings that skip every number taken since. Beside uploading the shard,
//! nothing.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::store::Remote;
use crate::{Error, Result};

const CLAIMS: &str = ".tmp/claims";
/// Claims tried for one shard before giving up: only a store that refuses every
/// name (or hundreds of members racing) gets this far.
const MAX_TRIES: u32 = 10_000;

fn claim_rel(n: u32) -> String {
    format!("{CLAIMS}/shard-{n:06}.claim")
}

/// The number in `shard-NNNNNN.json`, `shard-NNNNNN.claim`.
fn number(name: &str) -> Option<u32> {
    name.strip_prefix("shard-")?.split('.').next()?.parse().ok()
}

/// A member's shard numbers on the store.
pub(crate) struct Numbering {
    id: String,
    /// The lease holder (the run's driver) when the member started.
    holder: String,
    next: u32,
    /// Local index name → the store number claimed for it, until published: a push
    /// tried again after a failure reuses its claims.
    claimed: BTreeMap<String, u32>,
    /// The state of [`Numbering::draw`]'s stream.
    stream: u64,
}

impl Numbering {
    /// Member `id` of the run whose driver holds `remote`'s lease now.
    pub(crate) fn start(remote: &Remote, id: &str) -> Result<Numbering> {
        let Some(holder) = crate::lease::live_holder(remote)? else {
            let message = "no run's driver holds the dataset's lease: members write into a run its driver \
                           (rollway.ray.run, rollway.ray.Rollout) opened and holds"
                .into();
            return Err(Error::Conflict { url: remote.url().to_string(), message });
        };
        let mut taken = remote.list("index")?;
        taken.extend(remote.list(CLAIMS)?);
        let next = taken.iter().filter_map(|l| number(&l.name)).max().map_or(0, |n| n + 1);
        let stream = xxhash_rust::xxh3::xxh3_64(id.as_bytes());
        Ok(Numbering { id: id.to_string(), holder, next, claimed: BTreeMap::new(), stream })
    }

    /// The store number for local shard `local`: claimed now, or earlier.
    pub(crate) fn claim(&mut self, remote: &Remote, local: &str) -> Result<u32> {
        if let Some(&n) = self.claimed.get(local) {
            return Ok(n);
        }
        for _ in 0..MAX_TRIES {
            let n = self.next;
            self.next += 1;
            if !remote.put(&claim_rel(n), Bytes::from(self.id.clone()), true)? {
                self.skip_taken(remote, n)?;
                continue;
            }
            // A claim is deleted only after its shard's commit, so a free name can still
            // be a committed shard's.
            if remote.exists(&format!("index/shard-{n:06}.json"))? {
                remote.delete(&claim_rel(n))?;
                self.skip_taken(remote, n)?;
                continue;
            }
            self.claimed.insert(local.to_string(), n);
            return Ok(n);
        }
        Err(Error::Conflict { url: remote.url_of(CLAIMS), message: format!("no free shard number in {MAX_TRIES} claims") })
    }

    /// After losing number `n` to another member: on past every number taken since
    /// (claimed or committed after `n`), found by two listings that start at `n`,
    /// rather than one claim at a time. With many members committing, the numbers
    /// taken since a member's last shard grow with the members, and so would its
    /// claims per shard; the listings do not.
    ///
    /// Members that lose a race together would all try the same next number, so each
    /// lands a random distance past it, within as many numbers as there are claims
    /// out (about the members pushing now): the numbers get gaps, which the format
    /// allows, and the members stop colliding.
    fn skip_taken(&mut self, remote: &Remote, n: u32) -> Result<()> {
        let after = [format!("shard-{n:06}.claim"), format!("shard-{n:06}.json")];
        let claims = remote.names_after(CLAIMS, &after[0])?;
        let out = claims.len() as u64;
        let mut taken = claims;
        taken.extend(remote.names_after("index", &after[1])?);
        if let Some(max) = taken.iter().filter_map(|name| number(name)).max() {
            self.next = self.next.max(max + 1);
        }
        self.next += u32::try_from(self.draw() % (out + 1)).unwrap_or(0);
        Ok(())
    }

    /// A number from this member's own stream (splitmix64 over its id's hash).
    fn draw(&mut self) -> u64 {
        self.stream = self.stream.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.stream;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Checks that the driver this member started under still holds the lease.
    pub(crate) fn check_lease(&self, remote: &Remote) -> Result<()> {
        match crate::lease::holder(remote)? {
            Some(h) if h == self.holder => Ok(()),
            now => {
                let now = now.unwrap_or_else(|| "nobody".into());
                let message = format!(
                    "the run's driver ({}) no longer holds the dataset's lease (now {now}): this member stops rather than commit beside another writer",
                    self.holder
                );
                Err(Error::Conflict { url: remote.url().to_string(), message })
            }
        }
    }

    /// Deletes the claims of the local shards `published`.
    pub(crate) fn release(&mut self, remote: &Remote, published: &[String]) -> Result<()> {
        for local in published {
            if let Some(n) = self.claimed.remove(local) {
                remote.delete(&claim_rel(n))?;
            }
        }
        Ok(())
    }
}

/// The lease holder's fence against members that outlived their driver: every
/// number a claim holds whose shard is not committed is committed now as an empty
/// shard (an index object with no episodes and no files, created only if absent).
/// How many were fenced.
///
/// Why it closes the window: a member claims each number before it checks the
/// lease, and commits after. A member whose check came before this holder took the
/// lease therefore holds its claim by now, so its late commit finds the number
/// taken and fails (`push`'s commit: another writer's bytes) instead of adding
/// episodes this holder's ledger does not count; a member whose commit came first
/// is counted, because the holder reads the index after this. A member that checks
/// after the take-over sees another holder and stops. Cost: a list, and a
/// conditional PUT per claim left behind (none after a clean run).
pub(crate) fn fence_claims(remote: &Remote) -> Result<u64> {
    let mut fenced = 0;
    for n in remote.list(CLAIMS)?.iter().filter_map(|l| number(&l.name)) {
        let empty = rollway_store::ShardIndex { shard: n, rows: 0, parquet_bytes: 0, episodes: vec![], files: vec![] };
        let bytes = serde_json::to_vec(&empty).map_err(|e| Error::Corrupt { url: remote.url_of(CLAIMS), message: e.to_string() })?;
        fenced += u64::from(remote.put(&format!("index/shard-{n:06}.json"), Bytes::from(bytes), true)?);
    }
    Ok(fenced)
}

/// Removes every claim: the lease holder's, when no member runs. How many.
pub(crate) fn clear_claims(remote: &Remote) -> Result<u64> {
    let claims = remote.list_all(CLAIMS)?;
    for rel in &claims {
        remote.delete(rel)?;
    }
    Ok(claims.len() as u64)
}

/// The index of local shard `local` (`shard-NNNNNN.json`) as shard `to`: its
/// `shard` fields and its files' names changed, nothing else.
pub(crate) fn renumber(index: &[u8], local: &str, to: u32) -> Result<Vec<u8>> {
    let corrupt = |message: String| Error::Corrupt { url: local.to_string(), message };
    let from = number(local).ok_or_else(|| corrupt("not an index file name".into()))?;
    let mut v: serde_json::Value = serde_json::from_slice(index).map_err(|e| corrupt(format!("not JSON: {e}")))?;
    let (old, new) = (format!("shard-{from:06}."), format!("shard-{to:06}."));
    v["shard"] = to.into();
    for e in v["episodes"].as_array_mut().into_iter().flatten() {
        e["shard"] = to.into();
    }
    for f in v["files"].as_array_mut().into_iter().flatten() {
        if let Some(p) = f["path"].as_str() {
            f["path"] = p.replace(&old, &new).into();
        }
    }
    serde_json::to_vec(&v).map_err(|e| corrupt(format!("rewriting: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_changes_the_shard_number_and_file_names_only() {
        let index = br#"{"shard": 3, "rows": 5, "episodes": [{"episode_id": 7, "shard": 3, "run_index": 3}],
            "files": [{"path": "steps/shard-000003.parquet", "bytes": 9, "xxh3": "ab"},
                      {"path": "frames/observations.rgb/shard-000003.mp4", "bytes": 4, "xxh3": "cd"}]}"#;
        let out: serde_json::Value = serde_json::from_slice(&renumber(index, "shard-000003.json", 41).unwrap()).unwrap();
        assert_eq!(out["shard"], 41);
        assert_eq!(out["episodes"][0]["shard"], 41);
        assert_eq!(out["episodes"][0]["episode_id"], 7);
        assert_eq!(out["episodes"][0]["run_index"], 3);
        assert_eq!(out["files"][0]["path"], "steps/shard-000041.parquet");
        assert_eq!(out["files"][1]["path"], "frames/observations.rgb/shard-000041.mp4");
        assert_eq!(out["files"][1]["xxh3"], "cd");
        assert_eq!(out["rows"], 5);
    }
}
