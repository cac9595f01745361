//! Pulling a dataset from the store into a local replica, and pushing a local
//! dataset's new shards to the store by the object-store commit protocol
//! (FORMAT.md, "On an object store").
//!
//! A replica is an ordinary local dataset that holds committed shards only, so
//! every local reader (inspect, verify, the loader, export) works on it unchanged.
//! Shards never change after commit, so a pull fetches only index files it does not
//! have and the data files they list, each checked against the index's size and
//! XXH3 before it is renamed into place; the index file is written last, so a pull
//! killed half-way leaves a replica that is still whole.
//!
//! Pushing mirrors the local protocol step by step, with the store's atomic PUT in
//! place of rename: data files are uploaded under `.tmp/publish/`, the index object
//! is created with `If-None-Match: *` (the commit: an object is never half-visible),
//! then each data file is copied to its final key and the staged copy deleted.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use object_store::ObjectStore;

use crate::error::LocalContext;
use crate::store::Remote;
use crate::{Error, Result};

const METADATA: &str = "rollway.json";
const PUBLISH: &str = ".tmp/publish";
/// Requests in flight at once, per transfer.
const WIDTH: usize = 16;

/// What a pull or push moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Shards (index files) transferred.
    pub shards: u64,
    /// Data bytes transferred.
    pub bytes: u64,
}

/// A data file as an index lists it.
struct Listed {
    path: String,
    bytes: u64,
    xxh3: String,
}

/// `shard-NNNNNN.json`, the only names readers take for index files.
pub(crate) fn is_index_name(name: &str) -> bool {
    name.strip_prefix("shard-").and_then(|r| r.strip_suffix(".json")).is_some_and(|n| n.len() == 6 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The data files an index lists, each path checked to be a shard file inside the
/// dataset (a hostile index must not make a pull write outside the replica).
fn listed_files(url: &str, bytes: &[u8]) -> Result<Vec<Listed>> {
    let corrupt = |message: String| Error::Corrupt { url: url.to_string(), message };
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| corrupt(format!("not JSON: {e}")))?;
    let Some(files) = v.get("files").and_then(|f| f.as_array()) else { return Ok(vec![]) };
    files
        .iter()
        .map(|f| {
            let (Some(path), Some(size), Some(xxh3)) = (f["path"].as_str(), f["bytes"].as_u64(), f["xxh3"].as_str()) else {
                return Err(corrupt(format!("a `files` entry is not {{path, bytes, xxh3}}: {f}")));
            };
            let parts: Vec<&str> = path.split('/').collect();
            let inside = matches!(parts[0], "steps" | "frames")
                && parts.iter().all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.contains('\\'));
            if !inside || parts.len() > 3 {
                return Err(corrupt(format!("lists `{path}`, which is not a shard file of the dataset")));
            }
            Ok(Listed { path: path.to_string(), bytes: size, xxh3: xxh3.to_string() })
        })
        .collect()
}

/// The data files an index object lists, each path checked to be a shard file
/// inside the dataset (`steps/…`, `frames/<key>/…`): what a pull would write.
pub fn index_paths(bytes: &[u8]) -> Result<Vec<String>> {
    Ok(listed_files("index", bytes)?.into_iter().map(|f| f.path).collect())
}

fn size_of(p: &Path) -> Option<u64> {
    std::fs::metadata(p).ok().map(|m| m.len())
}

/// Writes `bytes` to `dir/rel` by way of a temporary file and a rename.
fn write_atomic(dir: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    let dest = dir.join(rel);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).local("creating", parent)?;
    }
    let tmp = dir.join(".tmp/pull").join(rel.replace('/', "__"));
    std::fs::write(&tmp, bytes).local("writing", &tmp)?;
    std::fs::rename(&tmp, &dest).local("renaming into place", &dest)
}

/// Brings the replica `dir` up to `remote`: its metadata, and every committed shard
/// it lacks. `dir` is created if needed; it is only ever added to.
pub fn pull(remote: &Remote, dir: &Path) -> Result<Moved> {
    let meta = remote
        .get(METADATA)?
        .ok_or_else(|| Error::NotADataset { url: remote.url().to_string(), message: format!("it has no {METADATA}") })?;
    for d in [dir.join("index"), dir.join(".tmp/pull")] {
        std::fs::create_dir_all(&d).local("creating", &d)?;
    }
    write_atomic(dir, METADATA, &meta)?;
    let new: Vec<String> = remote
        .list("index")?
        .into_iter()
        .filter(|l| is_index_name(&l.name) && size_of(&dir.join("index").join(&l.name)) != Some(l.size))
        .map(|l| l.name)
        .collect();
    let gets = new.iter().map(|name| async move {
        let rel = format!("index/{name}");
        let got = async { remote.client().get(&remote.key(&rel)).await?.bytes().await }.await;
        got.map(|b| (name.clone(), b)).map_err(|e| remote.store_err("reading", &rel, e))
    });
    let indexes = remote.all(WIDTH, gets.collect())?;
    let mut wanted = vec![];
    for (name, bytes) in &indexes {
        for f in listed_files(&remote.url_of(&format!("index/{name}")), bytes)? {
            if size_of(&dir.join(&f.path)) != Some(f.bytes) {
                wanted.push(f);
            }
        }
    }
    let mut moved = Moved { shards: indexes.len() as u64, bytes: 0 };
    let fetches = wanted.iter().map(|f| fetch(remote, dir, f));
    moved.bytes = remote.all(WIDTH, fetches.collect())?.into_iter().sum();
    for (name, bytes) in &indexes {
        write_atomic(dir, &format!("index/{name}"), bytes)?;
    }
    Ok(moved)
}

/// One data file: from its final key, or from its staged key when the writer died
/// (or is) between commit and publish; checked against the index, then renamed in.
async fn fetch(remote: &Remote, dir: &Path, f: &Listed) -> Result<u64> {
    let client = remote.client();
    let mut got = None;
    for rel in [f.path.clone(), format!("{PUBLISH}/{}", f.path)] {
        match client.get(&remote.key(&rel)).await {
            Ok(r) => {
                got = Some(r.bytes().await.map_err(|e| remote.store_err("reading", &rel, e))?);
                break;
            }
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(remote.store_err("reading", &rel, e)),
        }
    }
    let url = remote.url_of(&f.path);
    let bytes = got.ok_or_else(|| Error::Corrupt {
        url: url.clone(),
        message: "committed by its index, but neither it nor its staged copy exists".into(),
    })?;
    let hash = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes));
    if bytes.len() as u64 != f.bytes || hash != f.xxh3 {
        let message = format!("{} bytes with XXH3 {hash}; the index says {} bytes, {}", bytes.len(), f.bytes, f.xxh3);
        return Err(Error::Corrupt { url, message });
    }
    write_atomic(dir, &f.path, &bytes)?;
    Ok(f.bytes)
}

/// Pushes a local dataset's shards to the store, remembering what is there.
pub struct Pusher {
    remote: Remote,
    dir: PathBuf,
    known: BTreeSet<String>,
    meta_sent: Option<Vec<u8>>,
}

impl Pusher {
    /// A pusher of `dir` to `remote`, knowing the shards the store holds already.
    pub fn new(remote: Remote, dir: &Path) -> Result<Pusher> {
        let known = remote.list("index")?.into_iter().map(|l| l.name).filter(|n| is_index_name(n)).collect();
        Ok(Pusher { remote, dir: dir.to_path_buf(), known, meta_sent: None })
    }

    /// The store.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// Uploads the metadata if it changed and every committed local shard the store
    /// lacks, by the commit protocol. The shards of one push go step by step
    /// together — every data file staged, then every index created, then every file
    /// published — with [`WIDTH`] requests in flight: a store's latency, not its
    /// bandwidth, is what one shard at a time would wait on.
    pub fn push(&mut self) -> Result<Moved> {
        self.push_metadata()?;
        let index = self.dir.join("index");
        let mut names: Vec<String> = match std::fs::read_dir(&index) {
            Ok(rd) => {
                rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| is_index_name(n) && !self.known.contains(n)).collect()
            }
            Err(_) => vec![],
        };
        names.sort();
        let mut shards = vec![];
        for name in &names {
            let rel = format!("index/{name}");
            let local = self.dir.join(&rel);
            let index = Bytes::from(std::fs::read(&local).local("reading", &local)?);
            let files = listed_files(&self.remote.url_of(&rel), &index)?;
            shards.push((rel, index, files));
        }
        let files: Vec<&Listed> = shards.iter().flat_map(|(_, _, f)| f).collect();
        let bytes = self.remote.all(WIDTH, files.iter().map(|f| self.stage(f)).collect())?.into_iter().sum();
        self.remote.all(WIDTH, shards.iter().map(|(rel, index, _)| self.commit(rel, index)).collect())?;
        self.remote.all(WIDTH, files.iter().map(|f| self.publish(f)).collect())?;
        self.known.extend(names);
        // The counts (and a run's summary) change as a writer closes.
        self.push_metadata()?;
        Ok(Moved { shards: shards.len() as u64, bytes })
    }

    fn push_metadata(&mut self) -> Result<()> {
        let path = self.dir.join(METADATA);
        let Ok(meta) = std::fs::read(&path) else { return Ok(()) };
        if self.meta_sent.as_ref() != Some(&meta) {
            self.remote.put(METADATA, Bytes::from(meta.clone()), false)?;
            self.meta_sent = Some(meta);
        }
        Ok(())
    }

    /// Step 1: one data file uploaded to its staged key; its size.
    async fn stage(&self, f: &Listed) -> Result<u64> {
        let file = final_or_staged(&self.dir, &f.path);
        let bytes = std::fs::read(&file).local("reading", &file)?;
        let (n, staged) = (bytes.len() as u64, format!("{PUBLISH}/{}", f.path));
        let put = self.remote.client().put(&self.remote.key(&staged), bytes.into()).await;
        put.map(|_| n).map_err(|e| self.remote.store_err("uploading", &staged, e))
    }

    /// Step 3: a staged file copied to its final key, then the staged copy deleted.
    async fn publish(&self, f: &Listed) -> Result<()> {
        let (client, staged) = (self.remote.client(), format!("{PUBLISH}/{}", f.path));
        let copied = client.copy(&self.remote.key(&staged), &self.remote.key(&f.path)).await;
        copied.map_err(|e| self.remote.store_err("publishing", &f.path, e))?;
        match client.delete(&self.remote.key(&staged)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.remote.store_err("deleting", &staged, e)),
        }
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
                let message = "another writer committed this shard: the dataset has a second writer".into();
                Err(Error::Conflict { url: self.remote.url_of(rel), message })
            }
            Err(e) => Err(self.remote.store_err("committing", rel, e)),
        }
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

/// A writer's cleanup on the store, as a local writer's on open: staged files of
/// committed shards are published (roll forward), those of uncommitted shards (a
/// killed upload) are deleted. Only under the dataset's lease.
pub(crate) fn settle(remote: &Remote) -> Result<u64> {
    let committed: BTreeSet<String> = remote.list("index")?.into_iter().map(|l| l.name).collect();
    let mut cleaned = 0;
    for staged in remote.list_all(PUBLISH)? {
        let Some(rel) = staged.strip_prefix(&format!("{PUBLISH}/")) else { continue };
        let file = rel.rsplit('/').next().unwrap_or(rel);
        let shard = file.split('.').next().unwrap_or(file);
        if committed.contains(&format!("{shard}.json")) {
            remote.publish(&staged, rel)?;
        } else {
            remote.delete(&staged)?;
        }
        cleaned += 1;
    }
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_names_are_exact() {
        assert!(is_index_name("shard-000012.json"));
        for n in ["shard-12.json", "shard-000012.json.partial", "shard-00001x.json", "x-000012.json"] {
            assert!(!is_index_name(n), "{n}");
        }
    }

    #[test]
    fn a_hostile_index_cannot_name_files_outside_the_dataset() {
        let ok = br#"{"files": [{"path": "steps/shard-000001.parquet", "bytes": 3, "xxh3": "00"}]}"#;
        assert_eq!(listed_files("u", ok).unwrap()[0].path, "steps/shard-000001.parquet");
        for bad in ["../x", "steps/../../x", "/etc/passwd", "rollway.json", "frames/a/b/c", "steps//x"] {
            let text = format!(r#"{{"files": [{{"path": "{bad}", "bytes": 3, "xxh3": "00"}}]}}"#);
            assert!(matches!(listed_files("u", text.as_bytes()), Err(Error::Corrupt { .. })), "{bad}");
        }
        assert!(listed_files("u", b"{not json").is_err());
    }
}
