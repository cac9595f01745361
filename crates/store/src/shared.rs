//! Many writers, one dataset: the processes of one distributed run (Ray actors on
//! several nodes, say) each commit shards into the same directory on shared storage.
//!
//! The commit protocol is the single writer's, unchanged, so readers need nothing new:
//! a shard is staged under `.tmp/publish/`, committed by its index rename, then
//! published. What many writers add is who may use which shard number and who may
//! clean up after whom (FORMAT.md, "Many writers"):
//!
//! - **Locks.** A member holds `.lock` *shared* (a single writer, `verify --repair` and
//!   `relabel` hold it exclusive, so they and members exclude each other) and its own
//!   `.tmp/writers/<id>.lock` exclusive, for as long as it lives. A member whose lock
//!   file can be taken is dead: the kernel drops flocks with the process.
//! - **Claims.** Before staging shard `N` a member claims it by hard-linking a file
//!   holding its id to `.tmp/claims/shard-N.claim`. `link` fails if the name exists, on
//!   local filesystems and NFS alike, so two members never hold the same number; the
//!   claim is removed once the shard is published. A claimed number that turns out to
//!   be committed already (a claim is removed only after its shard's index exists) is
//!   given back and the next one tried.
//! - **Reaping.** A member that joins cleans up after dead members only: the staged
//!   files of a shard are rolled forward (committed) or deleted (debris) when the
//!   shard has no claim (its writer was a single writer, necessarily dead while we
//!   hold `.lock` shared) or its claimant is dead, and that claimant's lock is held
//!   while doing it, so two members never reap the same writer. Claims are read
//!   *after* the scan: a claim is made before a shard's first file and removed after
//!   its last rename, so a file the scan saw either still has its live claim or is
//!   already published (a removal or rename that finds nothing is fine). Orphans —
//!   shard files without an index — are left for the next single writer, which alone
//!   can tell them from a shard being published right now.
//!
//! Cost: one `link` and one `unlink` per shard, and a directory scan when a member
//! joins: nothing next to writing a shard.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::IoContext;
use crate::format::{create_dir_durable, require_real_dir, Metadata, Paths};
use crate::lock::try_lock;
use crate::reader::load_shard_indexes;
use crate::{recover, Error, Result};

/// Longest writer id: ids are file names.
const MAX_ID: usize = 64;

fn writers_dir(paths: &Paths) -> PathBuf {
    paths.tmp().join("writers")
}

fn claims_dir(paths: &Paths) -> PathBuf {
    paths.tmp().join("claims")
}

fn claim_path(paths: &Paths, n: u32) -> PathBuf {
    claims_dir(paths).join(format!("shard-{n:06}.claim"))
}

/// The shard number in a file name as the writer gives them (`shard-000012.parquet`,
/// `shard-000012.json.partial`, `shard-000012.claim`).
fn shard_of(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_str()?.strip_prefix("shard-")?;
    let digits = name.split('.').next()?;
    (digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// Checks a writer id: it names files, so letters, digits, `-`, `_`, `.`, not
/// starting with `.`, at most 64 bytes.
pub(crate) fn check_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID
        && !id.starts_with('.')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(Error::WriterId(id.into()))
    }
}

/// One writer among many: its locks and the shard numbers it claims.
pub(crate) struct Member {
    paths: Paths,
    id: String,
    /// `.lock`, held shared.
    _dataset: File,
    /// `.tmp/writers/<id>.lock`, held exclusive.
    _own: File,
    /// `.tmp/writers/<id>.claim`: the file every claim of this member links to.
    claim: PathBuf,
    next: u32,
}

impl Member {
    /// Joins the dataset at `paths` (its metadata must exist) as writer `id`, and
    /// cleans up after dead writers. Returns the member and the highest shard number
    /// in use, for [`Member::claim`] to start past.
    pub(crate) fn join(paths: &Paths, id: &str, meta: &Metadata) -> Result<Member> {
        check_id(id)?;
        let dataset = try_lock(&paths.lock(), true, true)?.ok_or_else(|| Error::Locked { path: paths.root.clone() })?;
        require_real_dir(&paths.tmp())?;
        for d in [writers_dir(paths), claims_dir(paths)] {
            require_real_dir(&d)?;
            create_dir_durable(&d)?;
        }
        let own_path = writers_dir(paths).join(format!("{id}.lock"));
        let own = try_lock(&own_path, false, true)?.ok_or_else(|| Error::Locked { path: own_path.clone() })?;
        let claim = writers_dir(paths).join(format!("{id}.claim"));
        let mut f = File::create(&claim).io("creating", &claim)?;
        f.write_all(id.as_bytes()).io("writing", &claim)?;
        let mut m = Member { paths: paths.clone(), id: id.into(), _dataset: dataset, _own: own, claim, next: 0 };
        m.next = m.reap(meta)?.map_or(0, |h| h + 1);
        Ok(m)
    }

    /// Who claims which shard number now.
    fn claims(&self) -> Result<BTreeMap<u32, String>> {
        let dir = claims_dir(&self.paths);
        let mut out = BTreeMap::new();
        for e in std::fs::read_dir(&dir).io("listing", &dir)? {
            let p = e.io("listing", &dir)?.path();
            if let Some(n) = shard_of(&p) {
                // A claim removed since the listing has no owner left to ask about.
                if let Ok(owner) = std::fs::read_to_string(&p) {
                    out.insert(n, owner);
                }
            }
        }
        Ok(out)
    }

    /// Rolls forward or deletes the staged files of dead writers' shards; removes their
    /// claims and lock files. Returns the highest shard number seen anywhere.
    fn reap(&self, meta: &Metadata) -> Result<Option<u32>> {
        let paths = &self.paths;
        let (shards, damaged) = load_shard_indexes(paths, meta)?;
        let scan = recover::scan(paths, meta, &shards, &damaged)?;
        let claims = self.claims()?;
        // Each dead claimant's lock, held until its leftovers are gone.
        let mut dead: BTreeMap<String, Option<File>> = BTreeMap::new();
        for owner in claims.values() {
            if owner != &self.id && !dead.contains_key(owner) && check_id(owner).is_ok() {
                let at = writers_dir(paths).join(format!("{owner}.lock"));
                if let Some(lock) = try_lock(&at, false, false)? {
                    dead.insert(owner.clone(), Some(lock));
                } else if !at.exists() {
                    dead.insert(owner.clone(), None);
                }
            }
        }
        let ours = |p: &Path| shard_of(p).is_none_or(|n| claims.get(&n).is_none_or(|w| dead.contains_key(w)));
        let unpublished: Vec<(PathBuf, PathBuf)> = scan.unpublished.iter().filter(|(s, _)| ours(s)).cloned().collect();
        let debris: Vec<PathBuf> = scan.debris.iter().filter(|p| ours(p)).cloned().collect();
        recover::settle(paths, &unpublished, &debris)?;
        for (n, owner) in &claims {
            if dead.contains_key(owner) {
                remove(&claim_path(paths, *n), "removing a dead writer's claim")?;
            }
        }
        for (owner, lock) in dead {
            for ext in ["claim", "lock"] {
                remove(&writers_dir(paths).join(format!("{owner}.{ext}")), "removing a dead writer's files")?;
            }
            drop(lock);
        }
        Ok(scan.highest.max(claims.keys().next_back().copied()))
    }

    /// Claims the next free shard number.
    pub(crate) fn claim(&mut self) -> Result<u32> {
        loop {
            let n = self.next;
            self.next = n
                .checked_add(1)
                .ok_or_else(|| Error::Corrupt { path: self.paths.index_dir(), message: "shard numbers are used up".into() })?;
            let at = claim_path(&self.paths, n);
            match std::fs::hard_link(&self.claim, &at) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::Io { op: "claiming a shard number", path: at, source: e }),
            }
            let taken = [self.paths.shard_index(n), self.paths.shard(n), self.paths.staged(&self.paths.shard(n))];
            if taken.iter().any(|p| p.exists()) {
                remove(&at, "giving back a shard number")?;
                continue;
            }
            return Ok(n);
        }
    }

    /// Gives up the claim on `n`, once its shard is published.
    pub(crate) fn release(&self, n: u32) -> Result<()> {
        remove(&claim_path(&self.paths, n), "releasing a shard number")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        // Best effort: a member that cannot remove them is reaped as dead later.
        let _ = std::fs::remove_file(&self.claim);
        let _ = std::fs::remove_file(writers_dir(&self.paths).join(format!("{}.lock", self.id)));
    }
}

/// Removes `path`; one that is already gone is fine (another member got there first).
fn remove(path: &Path, op: &'static str) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r.io(op, path),
    }
}

/// What a single writer (holding `.lock` exclusive, so no member lives) does on open:
/// removes the claims and lock files that dead members left.
pub(crate) fn clear(paths: &Paths) -> Result<()> {
    for dir in [writers_dir(paths), claims_dir(paths)] {
        if require_real_dir(&dir).is_err() {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        for e in rd {
            let e = e.io("listing", &dir)?;
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = name.ends_with(".claim") || name.ends_with(".lock");
            if ours && e.file_type().is_ok_and(|t| t.is_file()) {
                remove(&e.path(), "removing a dead writer's files")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_numbers_come_from_writer_names_only() {
        assert_eq!(shard_of(Path::new("a/shard-000012.parquet")), Some(12));
        assert_eq!(shard_of(Path::new("shard-000012.json.partial")), Some(12));
        assert_eq!(shard_of(Path::new("shard-1234567.claim")), Some(1_234_567));
        assert_eq!(shard_of(Path::new("shard-12.claim")), None);
        assert_eq!(shard_of(Path::new("rollway.json.partial")), None);
    }

    #[test]
    fn writer_ids_are_plain_file_names() {
        for ok in ["a", "run0-actor3-7", "node_1.a"] {
            assert!(check_id(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".hidden", "a/b", "..", "x y", &"a".repeat(65)] {
            assert!(matches!(check_id(bad), Err(Error::WriterId(_))), "{bad}");
        }
    }
}
