//! Runs that record to an object store (`--out s3://…`, `--resume s3://…`).
//!
//! The run itself is an ordinary local run into a work directory
//! (`rollway_remote::Writing`), whose shards are pushed to the store as they are
//! committed; everything a local run checks and does (config, resume, append, the
//! summary) happens on that directory. Before any env starts, the store is
//! reached, the dataset's lease taken, and — for a resume or an append — the
//! dataset pulled, so a missing bucket, refused credentials or a second writer is
//! an input error that costs no work.

use std::path::PathBuf;

use rollway_remote::{Remote, Writing};

use crate::error::{Error, Result};
use crate::execute::{execute_local, Outcome, RunHooks};
use crate::request::RunRequest;

/// The URL of the object store `a` records to, if it does.
pub(crate) fn target(a: &RunRequest) -> Option<String> {
    let join = a.join.as_ref().map(|(dir, _)| dir);
    [a.out.as_ref(), a.resume.as_ref(), join].into_iter().flatten().find(|p| rollway_remote::is_remote(p)).map(|p| p.display().to_string())
}

/// Runs `a`, which records to the store at `url`.
pub(crate) fn execute(a: &RunRequest, hooks: RunHooks<'_>, url: String) -> Result<Outcome> {
    if a.join.is_some() || a.prepare {
        bad!("{url}: a distributed run's parts (--prepare, --join) record to a local or shared directory; an object store takes single-writer runs (--out, --resume)");
    }
    if a.report {
        bad!("--report writes the report into the dataset's directory; for {url}, run `rollway report {url} --out FILE` after the run");
    }
    let remote = Remote::open(&url).map_err(|e| Error::remote("reaching the store", e))?;
    let holds = remote.holds_dataset().map_err(|e| Error::remote("reaching the store", e))?;
    let resume = a.resume.is_some();
    if resume && !holds {
        bad!("--resume {url}: there is no dataset there to resume");
    }
    if !resume && holds && !a.append {
        bad!("--out {url} already holds a dataset: `rollway run --resume {url}` continues its last run; add --append to record a new run after it");
    }
    let writing = Writing::open(remote, holds).map_err(|e| Error::remote("opening the dataset to write", e))?;
    let mut local = a.clone();
    let work = writing.work_dir().to_path_buf();
    for dir in [local.out.as_mut(), local.resume.as_mut()].into_iter().flatten() {
        *dir = work.clone();
    }
    let ran = execute_local(&local, hooks);
    // Whatever the run did, what it committed goes to the store.
    let pushed = writing.finish().map_err(|e| Error::remote("pushing the run's shards to the store", e));
    let mut outcome = ran?;
    pushed?;
    outcome.out = Some(PathBuf::from(url));
    Ok(outcome)
}
