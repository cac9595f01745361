//! Whole-dataset operations the fronts share beside runs: where the default job
//! records, the HTML report, relabelling.

use std::path::{Path, PathBuf};

use rollway_core::{EpisodeResult, Fault, Status};
use rollway_runner::{filter, Summary};
use rollway_store::IndexEntry;
use serde::Deserialize;

use crate::error::{Error, InputContext, Result};
use crate::parse_filters;

/// `rollway-data/<env>-NNN`, the first that does not exist yet.
pub fn fresh_dir(env: &str) -> PathBuf {
    let base = Path::new("rollway-data");
    (0..).map(|i| base.join(format!("{env}-{i:03}"))).find(|p| !p.exists()).expect("some name is free")
}

/// Writes the dataset's HTML report; returns where and its size. A dataset that
/// cannot be read is an input error (exit 2); a codec failing is ours (exit 1).
pub fn write_report(dir: &Path, out: Option<&Path>) -> Result<(PathBuf, usize)> {
    let path = out.map_or_else(|| rollway_report::default_path(dir), Path::to_path_buf);
    let html = match rollway_report::render(dir, &rollway_report::ReportMedia::default()) {
        Ok(html) => html,
        Err(e @ rollway_report::Error::Store(_)) => return Err(e).input(|| format!("reporting on {}", dir.display())),
        Err(source) => return Err(Error::Report { path: dir.to_path_buf(), source }),
    };
    rollway_report::write(&path, &html).map_err(Error::input_from)?;
    Ok((path, html.len()))
}

/// Runs `filters` again over the committed episodes of `dir` and rewrites only the
/// index (labels); returns how many episodes changed labels.
pub fn relabel_dataset(dir: &Path, filters: &[String]) -> Result<u64> {
    let filters = parse_filters(filters)?;
    let changed = rollway_store::rewrite_index(dir, |e| {
        if e.status == Status::GivenUp {
            return false;
        }
        // Filters look at what the index keeps of an episode: final info, return, length.
        let mut ep = EpisodeResult { labels: vec![], ..indexed(e) };
        filter::apply(&filters, &mut ep);
        let changed = ep.labels != e.labels;
        e.labels = ep.labels;
        changed
    });
    changed.map_err(|e| match e {
        rollway_store::Error::NotADataset { .. } | rollway_store::Error::Locked { .. } => Error::input_from(e),
        source => Error::Store { op: "relabelling", source },
    })
}

/// An episode as its dataset's index keeps it: no trajectory.
fn indexed(e: &IndexEntry) -> EpisodeResult {
    EpisodeResult {
        run_index: e.run_index,
        seed: e.seed,
        length: e.length,
        ret: e.ret,
        status: e.status,
        labels: e.labels.clone(),
        info: e.info.clone(),
        worker: e.worker,
        attempt: e.attempt,
        wall_ms: e.wall_ms,
        error: e.error.clone(),
        trajectory: None,
    }
}

/// What a part of a run many writers ran reports that its episodes do not tell:
/// the fields of its [`Summary`] read back from JSON.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct PartReport {
    /// `sync` or `async`.
    pub mode: String,
    /// Worker threads.
    pub workers: usize,
    /// Envs per worker.
    pub envs_per_worker: usize,
    /// Env and agent rebuilds.
    pub restarts: u64,
    /// Failed attempts.
    pub failed_attempts: u64,
    /// The first failed attempts.
    pub faults: Vec<Fault>,
    /// Values the envs returned that Gymnasium's checker would warn about.
    pub warnings: Vec<String>,
}

/// The summary of run `run` of the dataset at `dir`, a run that many writers ran
/// in parts (a Ray run): its episodes are counted from the committed index, in
/// index order, by the books a local run keeps ([`Summary::tally`]), so an episode
/// of a part that was run again counts once; the parts' reports add their failed
/// attempts, faults, warnings and restarts; `untried` is what no part finished.
pub fn run_summary(dir: &Path, run: u32, parts: &[PartReport], untried: u64, seconds: f64) -> Result<Summary> {
    let ds = rollway_store::Dataset::open(dir).input(|| format!("summing up run {run} of {}", dir.display()))?;
    let config = &ds.metadata().runs.get(run as usize).input(|| format!("{}: no run {run}", dir.display()))?.config;
    let text = |k: &str| config.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let mut base = Summary { env: ds.metadata().env.id.clone(), agent: text("agent"), untried, ..Summary::default() };
    base.seed = config.get("seed").and_then(|v| v.as_u64()).unwrap_or_default();
    if let Some(p) = parts.first() {
        (base.mode, base.workers, base.envs_per_worker) = (p.mode.clone(), p.workers, p.envs_per_worker);
    }
    for p in parts {
        base.restarts += p.restarts;
        base.failed_attempts += p.failed_attempts;
        p.faults.iter().cloned().for_each(|f| base.keep_fault(f));
        p.warnings.iter().cloned().for_each(|w| base.keep_warning(w));
    }
    let mut entries: Vec<&IndexEntry> = ds.episodes().filter(|e| e.run == run).collect();
    entries.sort_by_key(|e| e.run_index);
    let episodes: Vec<EpisodeResult> = entries.into_iter().map(indexed).collect();
    Ok(Summary::tally(base, &episodes, seconds))
}
