//! Pushing a local dataset's new shards to the store by the object-store commit
//! protocol (FORMAT.md, "On an object store"), as the dataset's one writer or as a
//! member of a distributed run ([`crate::members`]).
//!
//! Pushing mirrors the local protocol step by step, with the store's atomic PUT in
//! place of rename: data files are uploaded under `.tmp/publish/`, the index object
//! is created with `If-None-Match: *` (the commit: an object is never half-visible),
//! then each data file is copied to its final key and the staged copy deleted.
//!
//! A member's work directory numbers its shards from 0, as any new local dataset
//! does, so a member pushes each under a number claimed on the store, renumbering
//! its index on the way; the data's bytes, and so the hashes, are the same.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use object_store::ObjectStore;

use crate::error::LocalContext;
use crate::members::{self, Numbering};
use crate::replica::{get_indexes, is_index_name, listed_files, write_atomic, Listed, Moved, METADATA, PUBLISH, WIDTH};
use crate::store::Remote;
use crate::{Error, Result};

/// A shard on its way: its index object as the store gets it, its data files (the
/// local path, and the file as the store's index lists it), and its store number
/// when a member claimed one.
struct Outgoing {
    rel: String,
    index: Bytes,
    files: Vec<(String, Listed)>,
}

/// Pushes a local dataset's shards to the store, remembering what is there.
pub struct Pusher {
    remote: Remote,
    dir: PathBuf,
    /// Local index names pushed or already on the store: never pushed (again).
    known: BTreeSet<String>,
    meta_sent: Option<Vec<u8>>,
    /// A member's shard numbers on the store; `None` for the dataset's one writer.
    numbering: Option<Numbering>,
}

fn staged(rel: &str) -> String {
    format!("{PUBLISH}/{rel}")
}

impl Pusher {
    /// The one writer's pusher of `dir` to `remote`, knowing the shards the store
    /// holds already.
    pub fn new(remote: Remote, dir: &Path) -> Result<Pusher> {
        let known = remote.list("index")?.into_iter().map(|l| l.name).filter(|n| is_index_name(n)).collect();
        Ok(Pusher { remote, dir: dir.to_path_buf(), known, meta_sent: None, numbering: None })
    }

    /// A member's pusher: shards under claimed numbers, never the metadata (its
    /// driver's to write).
    pub(crate) fn member(remote: Remote, dir: &Path, numbering: Numbering) -> Pusher {
        Pusher { remote, dir: dir.to_path_buf(), known: BTreeSet::new(), meta_sent: None, numbering: Some(numbering) }
    }

    /// The store.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// Uploads the metadata if it changed and every committed local shard the store
    /// lacks, by the commit protocol. The shards of one push go step by step
    /// together — every data file staged, then every index created, then every file
    /// published — with `WIDTH` requests in flight: a store's latency, not its
    /// bandwidth, is what one shard at a time would wait on.
    pub fn push(&mut self) -> Result<Moved> {
        self.push_metadata()?;
        let names = self.unpushed();
        let shards = names.iter().map(|n| self.outgoing(n)).collect::<Result<Vec<_>>>()?;
        let files: Vec<&(String, Listed)> = shards.iter().flat_map(|s| &s.files).collect();
        let bytes = self.remote.all(WIDTH, files.iter().map(|(src, f)| self.stage(src, f)).collect())?.into_iter().sum();
        if let Some(n) = self.numbering.as_ref().filter(|_| !shards.is_empty()) {
            n.check_lease(&self.remote)?;
            crate::failpoint::pause("member-commit");
        }
        self.remote.all(WIDTH, shards.iter().map(|s| self.commit(&s.rel, &s.index)).collect())?;
        if self.numbering.is_some() && !shards.is_empty() {
            // Committed, not yet published: a writer killed here leaves staged files for the next to publish.
            crate::failpoint::pause("member-publish");
        }
        self.remote.all(WIDTH, files.iter().map(|(_, f)| publish(&self.remote, staged(&f.path), &f.path)).collect())?;
        if let Some(n) = &mut self.numbering {
            n.release(&self.remote, &names)?;
        }
        self.known.extend(names);
        // The counts (and a run's summary) change as a writer closes.
        self.push_metadata()?;
        Ok(Moved { shards: shards.len() as u64, bytes })
    }

    /// Committed local shards not pushed yet, in order.
    fn unpushed(&self) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.dir.join("index")) else { return vec![] };
        let mut names: Vec<String> =
            rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| is_index_name(n) && !self.known.contains(n)).collect();
        names.sort();
        names
    }

    /// Local shard `name` as the store is to get it: renumbered, for a member.
    fn outgoing(&mut self, name: &str) -> Result<Outgoing> {
        let local = self.dir.join("index").join(name);
        let bytes = std::fs::read(&local).local("reading", &local)?;
        let mine = listed_files(&local.display().to_string(), &bytes)?;
        let (rel, index) = match &mut self.numbering {
            None => (format!("index/{name}"), bytes),
            Some(n) => {
                let to = n.claim(&self.remote, name)?;
                (format!("index/shard-{to:06}.json"), members::renumber(&bytes, name, to)?)
            }
        };
        let theirs = listed_files(&self.remote.url_of(&rel), &index)?;
        Ok(Outgoing { rel, index: Bytes::from(index), files: mine.into_iter().map(|m| m.path).zip(theirs).collect() })
    }

    fn push_metadata(&mut self) -> Result<()> {
        let path = self.dir.join(METADATA);
        let Ok(meta) = std::fs::read(&path) else { return Ok(()) };
        if self.numbering.is_none() && self.meta_sent.as_ref() != Some(&meta) {
            self.remote.put(METADATA, Bytes::from(meta.clone()), false)?;
            self.meta_sent = Some(meta);
        }
        Ok(())
    }

    /// Step 1: one data file (local `src`) uploaded to its staged key; its size.
    async fn stage(&self, src: &str, f: &Listed) -> Result<u64> {
        let file = final_or_staged(&self.dir, src);
        let bytes = std::fs::read(&file).local("reading", &file)?;
        let (n, staged) = (bytes.len() as u64, staged(&f.path));
        let put = self.remote.client().put(&self.remote.key(&staged), bytes.into()).await;
        put.map(|_| n).map_err(|e| self.remote.store_err("uploading", &staged, e))
    }

    /// Step 2: the index object created only if absent. Present already with the same
    /// bytes, it is this writer's own commit whose answer was lost (a dropped
    /// connection, a killed push); with other bytes, another writer's.
    async fn commit(&self, rel: &str, index: &Bytes) -> Result<()> {
        let (client, key) = (self.remote.client(), self.remote.key(rel));
        let opts = object_store::PutOptions::from(object_store::PutMode::Create);
        match client.put_opts(&key, index.clone().into(), opts).await {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => {
                let theirs = async { client.get(&key).await?.bytes().await }.await.map_err(|e| self.remote.store_err("reading", rel, e))?;
                if theirs == *index {
                    return Ok(());
                }
                let fenced = serde_json::from_slice::<rollway_store::ShardIndex>(&theirs).is_ok_and(|i| i.episodes.is_empty());
                let message = if fenced {
                    "the dataset's new lease holder fenced this shard number (committed it empty) while this member \
                     waited to commit: its driver is gone, and the new one runs these episodes again"
                } else {
                    "another writer committed this shard: the dataset has a second writer"
                };
                let message = message.into();
                Err(Error::Conflict { url: self.remote.url_of(rel), message })
            }
            Err(e) => Err(self.remote.store_err("committing", rel, e)),
        }
    }

    /// The index objects on the store that this writer did not push (the shards of a
    /// distributed run's members), written into the work directory: what the run's
    /// driver counts and sums up. Their data stays on the store, and they are never
    /// pushed back. How many were new.
    pub(crate) fn pull_index(&mut self) -> Result<u64> {
        let new: Vec<String> =
            self.remote.list("index")?.into_iter().map(|l| l.name).filter(|n| is_index_name(n) && !self.known.contains(n)).collect();
        let tmp = self.dir.join(".tmp/pull");
        std::fs::create_dir_all(&tmp).local("creating", &tmp)?;
        let count = new.len() as u64;
        for (name, bytes) in get_indexes(&self.remote, new)? {
            write_atomic(&self.dir, &format!("index/{name}"), &bytes)?;
            self.known.insert(name);
        }
        Ok(count)
    }
}

/// Step 3: a staged file copied to its final key, then the staged copy deleted.
async fn publish(remote: &Remote, staged: String, to: &str) -> Result<()> {
    let client = remote.client();
    client.copy(&remote.key(&staged), &remote.key(to)).await.map_err(|e| remote.store_err("publishing", to, e))?;
    match client.delete(&remote.key(&staged)).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(remote.store_err("deleting", &staged, e)),
    }
}

/// A local committed file is at its final place or, between commit and publish,
/// still staged.
fn final_or_staged(dir: &Path, rel: &str) -> PathBuf {
    let fin = dir.join(rel);
    if fin.exists() {
        fin
    } else {
        dir.join(PUBLISH).join(rel)
    }
}

/// What `settle` cleaned up on the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Staged files of committed shards, published.
    pub published: u64,
    /// Staged files of shards never committed (a killed upload), deleted.
    pub deleted: u64,
    /// Claims of members gone, removed.
    pub claims: u64,
    /// Claimed numbers committed as empty shards, so that a member that outlived
    /// its driver cannot commit them (`members::fence_claims`).
    pub fenced: u64,
}

/// The lease holder's cleanup on the store, as a local writer's on open: claimed
/// numbers are fenced first, then staged files that their shard's committed index
/// lists are published (roll forward), the rest (a killed upload, a fenced
/// member's files) deleted, and the claims of members, all gone by then, removed.
/// Only under the dataset's lease, with no member running.
pub(crate) fn settle(remote: &Remote) -> Result<Settled> {
    let fenced = members::fence_claims(remote)?;
    let committed: BTreeSet<String> = remote.list("index")?.into_iter().map(|l| l.name).collect();
    let staged: Vec<(String, String)> = remote
        .list_all(PUBLISH)?
        .into_iter()
        .filter_map(|s| Some((s.strip_prefix(&format!("{PUBLISH}/"))?.to_string(), s.clone())))
        .collect();
    // A staged file is published only if its shard's index lists it: a fenced number's
    // index is committed but lists nothing.
    let shards: BTreeSet<String> = staged.iter().filter_map(|(rel, _)| shard_index_name(rel)).filter(|n| committed.contains(n)).collect();
    let mut listed = BTreeSet::new();
    for (name, bytes) in get_indexes(remote, shards.into_iter().collect())? {
        listed.extend(listed_files(&remote.url_of(&format!("index/{name}")), &bytes)?.into_iter().map(|f| f.path));
    }
    let (forward, debris): (Vec<_>, Vec<_>) = staged.into_iter().partition(|(rel, _)| listed.contains(rel));
    let (published, deleted) = (forward.len() as u64, debris.len() as u64);
    remote.all(WIDTH, forward.into_iter().map(|(rel, staged)| async move { publish(remote, staged, &rel).await }).collect())?;
    for (_, rel) in &debris {
        remote.delete(rel)?;
    }
    Ok(Settled { published, deleted, claims: members::clear_claims(remote)?, fenced })
}

/// `shard-NNNNNN.json` for a data file `…/shard-NNNNNN.<ext>` of the dataset.
fn shard_index_name(rel: &str) -> Option<String> {
    let file = rel.rsplit('/').next()?;
    Some(format!("{}.json", file.split('.').next()?))
}
