//! `rollway report`: what a researcher looks at after a run, as one self-contained
//! HTML file — no script, no network, opens from disk and survives being mailed.
//!
//! Where each figure comes from, so the page never shows what the dataset does not
//! hold:
//! - **The index** (committed episodes only, as every reader): counts, statuses,
//!   labels, return and length histograms, each agent's returns (a multi-agent env),
//!   episodes and steps per worker, attempts and given-up episodes with their errors.
//! - **The run's stored summary** (`runs[i].summary` in `rollway.json`, written when
//!   a run ends cleanly): throughput over time, restarts and failed attempts. A run
//!   that was killed has none; the page says so rather than guessing.
//! - **The frames**, for datasets with image observations: a few episodes,
//!   labelled and not, decoded and re-encoded as JPEG thumbnails and H.264 clips.
//!
//! Cost: reading the index (milliseconds) plus decoding the sampled episodes'
//! frames and encoding their thumbnails and clips. For the default job (five
//! episodes of 1000 H.264 frames decoded, four clips encoded) that is ~1.1 s on a
//! 2-core VM, and the page is ~0.7 MB. Nothing in the dataset is changed.
#![forbid(unsafe_code)]

mod agents;
mod error;
mod gallery;
mod html;
mod media;
mod sections;
pub mod svg;
mod training;
mod training_time;

use std::path::{Path, PathBuf};

use rollway_store::{Dataset, OpenOptions};

pub use error::{Error, Result};
pub use media::ReportMedia;

/// The report of the dataset at `dir` as an HTML document. Damaged shards are
/// left out and named at the top of the page.
pub fn render(dir: &Path, media: &ReportMedia) -> Result<String> {
    let ds = Dataset::open_with(dir, OpenOptions { skip_damaged: true })?;
    let meta = ds.metadata();
    let name = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    let mut page = html::Page::new(
        &format!("rollway report: {name}"),
        &format!("{} · {} · rendered by rollway {}", dir.display(), meta.env.id, env!("CARGO_PKG_VERSION")),
    );
    let entries: Vec<_> = ds.episodes().collect();
    page.section("overview", "Overview", &sections::overview(&ds, &entries));
    page.section("runs", "Runs: config and provenance", &sections::runs(&ds, &entries));
    page.section("episodes", "Episodes: outcomes, labels, returns, lengths", &sections::episodes(&entries));
    if let Some(markup) = agents::agents(meta.env.agents.as_ref(), &entries) {
        page.section("agents", "Agents: returns per agent", &markup);
    }
    if let Some(markup) = training::training(&ds, &entries) {
        page.section("training", "Training: by policy version", &markup);
        page.section("training-time", "Training: by wall time, lives and actors", &training_time::over_time(&ds, &entries, media)?);
    }
    page.section("throughput", "Throughput: over time and per worker", &sections::throughput(&ds, &entries));
    page.section("faults", "Faults: attempts, restarts, given-up episodes", &sections::faults(&ds, &entries));
    if !meta.frame_keys.is_empty() {
        page.section("frames", "Frames: sampled episodes, labelled and not", &gallery::frames(&ds, &entries, media)?);
    }
    Ok(page.finish())
}

/// Where `rollway report DIR` writes by default: beside the dataset, as
/// `DIR.report.html` (inside it, `rollway verify` would report a file it does not know).
pub fn default_path(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().map(|n| n.to_os_string()).unwrap_or_else(|| "dataset".into());
    name.push(".report.html");
    dir.with_file_name(name)
}

/// Writes `html` to `path` atomically (a temp file beside it, then a rename), so a
/// reader never opens half a report.
pub fn write(path: &Path, html: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, html).map_err(|source| Error::Io { op: "writing", path: tmp.clone(), source })?;
    std::fs::rename(&tmp, path).map_err(|source| {
        let _ = std::fs::remove_file(&tmp);
        Error::Io { op: "renaming into", path: path.to_path_buf(), source }
    })
}
