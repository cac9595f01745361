//! Whole-dataset operations from Python: verify, repair, relabel, export, import.
//! Each is the CLI command's library call, run without the GIL, with the CLI's
//! progress bar on a terminal; each returns its report as JSON text.

use std::path::PathBuf;

use pyo3::prelude::*;
use rollway_engine::progress::Bar;
use rollway_interop::{lerobot, minari};
use rollway_store::{Dataset, OpenOptions};
use serde_json::json;

use rollway_engine::Target;

use crate::errors::{dataset_dir, input_error, readable_dataset, ToPy};

/// `rollway verify`: checks every committed episode and file; changes nothing.
#[pyfunction]
pub fn verify(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    let path = py.detach(|| readable_dataset(&path))?;
    py.detach(|| {
        // Damaged shards are what verify is for: report them, check the rest.
        let ds = Dataset::open_with(&path, OpenOptions { skip_damaged: true })?;
        Ok::<_, rollway_store::Error>(serde_json::to_string(&rollway_store::verify(&ds)).expect("reports serialize"))
    })
    .py()
}

/// `rollway report`: writes the dataset's HTML page; returns its path.
#[pyfunction]
#[pyo3(signature = (path, out=None))]
pub fn report(py: Python<'_>, path: PathBuf, out: Option<PathBuf>) -> PyResult<PathBuf> {
    let out = rollway_engine::target::report_path(&path, out.as_deref()).py()?;
    let path = py.detach(|| readable_dataset(&path))?;
    py.detach(|| rollway_engine::dataset::write_report(&path, out.as_deref())).py().map(|(p, _)| p)
}

/// `rollway verify --repair`: publishes, cleans up and quarantines (never deletes data).
#[pyfunction]
pub fn repair(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    let r = py.detach(|| rollway_engine::target::repair(&path)).py()?;
    Ok(serde_json::to_string(&r).expect("reports serialize"))
}

/// `rollway relabel`: runs filters over the committed episodes; returns how many changed.
#[pyfunction]
pub fn relabel(py: Python<'_>, path: PathBuf, filters: Vec<String>) -> PyResult<u64> {
    let path = dataset_dir(path)?;
    py.detach(|| rollway_engine::dataset::relabel_dataset(&path, &filters)).py()
}

/// `rollway export --to minari`.
#[pyfunction]
#[pyo3(signature = (path, out, dataset_id=None, force=false, author=None, description=None, data_format=None, progress=true))]
#[allow(clippy::too_many_arguments)]
pub fn export_minari(
    py: Python<'_>,
    path: PathBuf,
    out: PathBuf,
    dataset_id: Option<String>,
    force: bool,
    author: Option<String>,
    description: Option<String>,
    data_format: Option<String>,
    progress: bool,
) -> PyResult<String> {
    let (path, out) = (py.detach(|| readable_dataset(&path))?, dataset_dir(out)?);
    let data_format = data_format.as_deref().map(str::parse).transpose().map_err(input_error)?.unwrap_or_default();
    let opts = minari::ExportOptions { data_format, dataset_id, force, author, description };
    let r = py.detach(|| {
        let bar = Bar::new(!progress, "exporting", "episodes");
        minari::export(&path, &out, &opts, &mut |d, t| bar.update(d, t))
    });
    let r = r.py()?;
    Ok(json!({"dataset_id": r.dataset_id, "path": r.data_dir, "episodes": r.episodes, "steps": r.steps, "bytes": r.bytes, "given_up": r.given_up, "skipped_infos": r.skipped_infos, "env_spec": r.env_spec}).to_string())
}

/// `rollway export --to lerobot`.
#[pyfunction]
#[pyo3(signature = (path, out, fps=None, task=None, robot_type=None, force=false, video_codec=None, crf=None, keyint=None, progress=true))]
#[allow(clippy::too_many_arguments)]
pub fn export_lerobot(
    py: Python<'_>,
    path: PathBuf,
    out: PathBuf,
    fps: Option<u32>,
    task: Option<String>,
    robot_type: Option<String>,
    force: bool,
    video_codec: Option<String>,
    crf: Option<f32>,
    keyint: Option<u32>,
    progress: bool,
) -> PyResult<String> {
    let (path, out) = (py.detach(|| readable_dataset(&path))?, dataset_dir(out)?);
    let d = lerobot::ExportOptions::default();
    let video_codec = match video_codec {
        None => d.video_codec,
        Some(name) => lerobot::export_codec(&name).map_err(|m| input_error(format!("video_codec {name:?}: {m}")))?,
    };
    let opts = lerobot::ExportOptions { fps: fps.unwrap_or(d.fps), task, robot_type, force, video_codec, crf, keyint, ..d };
    let r = py.detach(|| {
        let bar = Bar::new(!progress, "exporting", "episodes");
        lerobot::export(&path, &out, &opts, &mut |d, t| bar.update(d, t))
    });
    let r = r.py()?;
    Ok(json!({"path": r.out, "episodes": r.episodes, "steps": r.steps, "frames": r.frames, "given_up": r.given_up, "data_files": r.data_files, "video_files": r.video_files, "video_keys": r.video_keys, "bytes": r.bytes}).to_string())
}

/// `rollway import minari`.
#[pyfunction]
#[pyo3(signature = (src, out, progress=true))]
pub fn import_minari(py: Python<'_>, src: PathBuf, out: PathBuf, progress: bool) -> PyResult<String> {
    let src = dataset_dir(src)?;
    let target = py.detach(|| Target::create(&out)).py()?;
    let r = py.detach(|| {
        let bar = Bar::new(!progress, "importing", "episodes");
        minari::import(&src, target.dir(), &mut |d, t| bar.update(d, t))
    });
    let mut r = r.py()?;
    py.detach(|| target.finish()).py()?;
    r.out = out;
    Ok(json!({"path": r.out, "dataset_id": r.dataset_id, "env": r.env, "episodes": r.episodes, "steps": r.steps, "bytes": r.bytes, "skipped_infos": r.skipped_infos}).to_string())
}

/// `rollway import lerobot`.
#[pyfunction]
#[pyo3(signature = (src, out, progress=true))]
pub fn import_lerobot(py: Python<'_>, src: PathBuf, out: PathBuf, progress: bool) -> PyResult<String> {
    let src = dataset_dir(src)?;
    let target = py.detach(|| Target::create(&out)).py()?;
    let r = py.detach(|| {
        let bar = Bar::new(!progress, "importing", "episodes");
        lerobot::import(&src, target.dir(), &mut |d, t| bar.update(d, t))
    });
    let mut r = r.py()?;
    py.detach(|| target.finish()).py()?;
    r.out = out;
    Ok(json!({"path": r.out, "env": r.env, "episodes": r.episodes, "steps": r.steps, "bytes": r.bytes, "from_rollway": r.from_rollway, "skipped_features": r.skipped_features}).to_string())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(repair, m)?)?;
    m.add_function(wrap_pyfunction!(relabel, m)?)?;
    m.add_function(wrap_pyfunction!(export_minari, m)?)?;
    m.add_function(wrap_pyfunction!(export_lerobot, m)?)?;
    m.add_function(wrap_pyfunction!(import_minari, m)?)?;
    m.add_function(wrap_pyfunction!(import_lerobot, m)?)
}
