//! Writing to an object store (`--out s3://…`, `--resume s3://…`, a rollout's
//! `out=`, a distributed run's driver and members).
//!
//! The writing itself is local: into a work directory (`rollway_remote::Writing`)
//! whose shards are pushed to the store as they are committed, so everything a
//! local run checks and does (config, resume, append, the summary) happens on that
//! directory. Before any env starts, the store is reached and the dataset's lease
//! taken (by the one writer, or a distributed run's driver, which holds it while
//! its members write), and the dataset pulled for a resume or an append; so a
//! missing bucket, refused credentials or a second writer is an input error that
//! costs no work.

use std::path::PathBuf;

use rollway_remote::{Remote, Writing};

use crate::error::{Error, Result};
use crate::request::{Outcome, RunHooks, RunRequest};

/// What a writer wants of the dataset at a URL.
pub enum Want {
    /// A new dataset; `refusal` is the message when one is there already.
    New {
        /// What to tell the user instead (the front's own flags).
        refusal: String,
    },
    /// A new run after the dataset's runs, or a new dataset.
    Append,
    /// The dataset's last run, continued.
    Resume,
}

/// Takes the lease of the dataset at `url` for its one writer (or a distributed
/// run's driver) and opens a work directory to write it from.
pub fn hold(url: &str, want: Want) -> Result<Writing> {
    let remote = Remote::open(url).map_err(|e| Error::remote("reaching the store", e))?;
    let holds = remote.holds_dataset().map_err(|e| Error::remote("reaching the store", e))?;
    match want {
        Want::Resume if !holds => bad!("{url}: there is no dataset there to resume"),
        Want::New { refusal } if holds => return Err(Error::input(refusal)),
        _ => {}
    }
    Writing::open(remote, holds).map_err(|e| Error::remote("opening the dataset to write", e))
}

/// Opens a work directory for writer `id` of the distributed run whose driver
/// holds the dataset at `url`.
pub fn join(url: &str, id: &str) -> Result<Writing> {
    let remote = Remote::open(url).map_err(|e| Error::remote("reaching the store", e))?;
    Writing::join(remote, id).map_err(|e| Error::remote("joining the run on the store", e))
}

/// `verify --repair` of the dataset at `url`: under its lease, what killed writers
/// left is settled (staged files of committed shards published, the rest deleted,
/// members' claims removed), as the next writer would; as a local repair's report.
pub fn repair(url: &str) -> Result<rollway_store::RepairReport> {
    let remote = Remote::open(url).map_err(|e| Error::remote("reaching the store", e))?;
    let settled = rollway_remote::repair(&remote).map_err(|e| Error::remote("repairing the dataset on the store", e))?;
    Ok(rollway_store::RepairReport { published: settled.published as usize, ..Default::default() })
}

/// The URL of the object store `a` records to, if it does.
pub(crate) fn target(a: &RunRequest) -> Option<String> {
    let join = a.join.as_ref().map(|(dir, _)| dir);
    [a.out.as_ref(), a.resume.as_ref(), join].into_iter().flatten().find(|p| rollway_remote::is_remote(p)).map(|p| p.display().to_string())
}

/// Runs `a`, which records to the store at `url`: `local` runs it into the work
/// directory, whose shards are pushed as they commit.
pub(crate) fn execute(
    a: &RunRequest,
    hooks: RunHooks<'_>,
    url: String,
    local: fn(&RunRequest, RunHooks<'_>) -> Result<Outcome>,
) -> Result<Outcome> {
    if a.prepare {
        bad!(
            "--prepare {url}: a distributed run on an object store is prepared by its driver (`rollway run --backend ray`, \
             rollway.ray.run), which holds the dataset's lease while the parts run"
        );
    }
    if a.report {
        bad!("--report writes the report into the dataset's directory; for {url}, run `rollway report {url} --out FILE` after the run");
    }
    let writing = match (&a.join, &a.resume) {
        (Some((_, part)), _) => join(&url, &part.id)?,
        (None, Some(_)) => hold(&url, Want::Resume)?,
        (None, None) if a.append => hold(&url, Want::Append)?,
        (None, None) => hold(&url, Want::New { refusal: a.holds_a_dataset(&url) })?,
    };
    let mut request = a.clone();
    let work = writing.work_dir().to_path_buf();
    let join = request.join.as_mut().map(|(dir, _)| dir);
    for dir in [request.out.as_mut(), request.resume.as_mut(), join].into_iter().flatten() {
        *dir = work.clone();
    }
    let ran = local(&request, RunHooks { store: Some(writing.health()), ..hooks });
    // Whatever the run did, what it committed goes to the store.
    let pushed = writing.finish().map_err(|e| Error::remote("pushing the run's shards to the store", e));
    let mut outcome = ran?;
    pushed?;
    outcome.out = Some(PathBuf::from(url));
    Ok(outcome)
}

/// A new dataset written by a local writer (an import, a `DataCollector`): at a
/// local directory, or at an `s3://` URL through a held work directory whose shards
/// are pushed as they are committed.
pub struct NewDataset {
    dir: PathBuf,
    push: Option<Writing>,
}

impl NewDataset {
    /// Opens `out` for a new dataset. A local path is checked as any dataset path (a
    /// URL of a scheme this build does not reach is an input error); the local writer
    /// refuses a directory that holds a dataset. On a store, one there is refused here.
    pub fn open(out: &std::path::Path) -> Result<NewDataset> {
        if !rollway_remote::is_remote(out) {
            return Ok(NewDataset { dir: crate::dataset::local(out)?, push: None });
        }
        let url = out.display().to_string();
        let push = hold(&url, Want::New { refusal: format!("{url} already holds a dataset; write a new one to a new prefix") })?;
        Ok(NewDataset { dir: push.work_dir().to_path_buf(), push: Some(push) })
    }

    /// The local directory to write.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// Once the writer has closed: pushes what is left and releases the store.
    pub fn finish(self) -> Result<()> {
        self.push.map_or(Ok(()), |p| p.finish().map(drop).map_err(|e| Error::remote("pushing the dataset to the store", e)))
    }
}
