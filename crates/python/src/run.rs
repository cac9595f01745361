//! `rollway.run`: the CLI's `run`, with the config given as the TOML file's keys.
//!
//! The package turns keyword arguments into the config file's table (the same keys,
//! the same defaults, the same checks and messages; durations as numbers of
//! seconds) and calls [`run`] with it, which makes the engine's typed request; the
//! run itself is `rollway_engine::execute`, the one the CLI uses. The GIL is
//! released for the whole run; about ten times a second the progress tick takes it
//! back to let Python handle signals, so Ctrl-C stops the run, its finished
//! episodes are committed, and `KeyboardInterrupt` is raised.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use rollway_core::{AgentFactory, EnvFactory};
use rollway_engine::{execute, Host, Outcome, Part, RunHooks, RunOptions, RunRequest, Sources};
use serde_json::json;

use crate::errors::{input_error, ToPy};
use crate::inline_host::InlineEnvs;
use crate::policy::PyPolicies;

/// A run's settings, the config file's keys as JSON text.
fn settings_of(text: &str) -> PyResult<RunOptions> {
    serde_json::from_str(text).map_err(|e| {
        // serde_json adds where in the JSON text it was: meaningless to a caller of run().
        let msg = e.to_string();
        let msg = msg.rsplit_once(" at line ").map_or(msg.as_str(), |(m, _)| m);
        input_error(format!("run settings: {msg}"))
    })
}

/// Whether `resume=path` starts the run of `config` (its settings as JSON, None when
/// the call gave none) afresh, nothing having been recorded there: the engine's rule
/// (`rollway_engine::resume_starts_afresh`), for `rollway.ray.run`.
#[pyfunction]
#[pyo3(signature = (path, config=None, progress=true))]
pub fn resume_starts_afresh(path: PathBuf, config: Option<&str>, progress: bool) -> PyResult<bool> {
    let file = config.map(settings_of).transpose()?;
    let request = RunRequest { file, resume: Some(path.clone()), quiet: !progress, python: true, ..RunRequest::default() };
    rollway_engine::resume_starts_afresh(&request, &path).py()
}

/// Runs a job; returns the summary and what was written, as JSON text.
#[pyfunction]
#[pyo3(signature = (config, out=None, resume=None, append=false, record=true, progress=true, episodes=None, steps=None, python=None, env_pickle=None, agent_factory=None, prepare=false, join=None, host="auto"))]
#[allow(clippy::too_many_arguments)]
pub fn run(
    py: Python<'_>,
    config: Option<&str>,
    out: Option<PathBuf>,
    resume: Option<PathBuf>,
    append: bool,
    record: bool,
    progress: bool,
    episodes: Option<u64>,
    steps: Option<u64>,
    python: Option<PathBuf>,
    env_pickle: Option<Vec<u8>>,
    agent_factory: Option<(String, Py<PyAny>)>,
    prepare: bool,
    join: Option<(PathBuf, String)>,
    host: &str,
) -> PyResult<String> {
    let host = Host::try_from(host.to_string()).map_err(input_error)?;
    let file = config.map(settings_of).transpose()?;
    if append && out.is_none() {
        return Err(input_error("append=True needs out="));
    }
    let settings = RunOptions { episodes, steps, ..RunOptions::default() };
    // A distributed run's parts (rollway.ray): `prepare` records the run, `join=(dir, "RUN:START:END:ID")` runs a part.
    let join = match join {
        Some((dir, part)) => Some((dir, part.parse::<Part>().map_err(input_error)?)),
        None => None,
    };
    let inline = inline_envs(py, file.as_ref(), env_pickle.clone(), host, join.is_some() || prepare || resume.is_some())?;
    // The summary says where Python envs stepped: offered inline, or asked to stay in processes.
    let host = if inline.is_some() || python_env(file.as_ref(), env_pickle.is_some()) { host } else { Host::Auto };
    let request = RunRequest {
        file,
        settings,
        out,
        resume,
        append,
        no_record: !record,
        quiet: !progress,
        prepare,
        join,
        python: true,
        ..RunRequest::default()
    };
    let outcome = py.detach(|| {
        // A Ctrl-C that landed in an inline env's code was raised there (pyenvs.rs): taken here too.
        let stop = Box::new(|| crate::pyenvs::take_interrupt() || Python::attach(|py| py.check_signals().is_err()));
        let agents = agent_factory.map(|(name, policy)| Arc::new(PyPolicies::new(name, policy)) as Arc<dyn AgentFactory>);
        // A callable env: pickled by the package, unpickled in each env process.
        let sources = Sources { envs: None, env_pickle, agents, python, inline, host };
        execute(&request, RunHooks { stop: Some(stop), sources, ..Default::default() })
    });
    Ok(report(&outcome.py()?).to_string())
}

/// A run's Python env stepped in this process too (`inline_host.rs`), offered to the
/// run, which takes it where `host` says. Not for a distributed run's parts (each
/// node's own processes) nor a resumed run (it keeps the stored settings' processes).
fn inline_envs(
    py: Python<'_>,
    file: Option<&RunOptions>,
    pickled: Option<Vec<u8>>,
    host: Host,
    distributed_or_resumed: bool,
) -> PyResult<Option<Arc<dyn EnvFactory>>> {
    let Some(env) = file.and_then(|f| f.env.clone()) else { return Ok(None) };
    if host == Host::Process || distributed_or_resumed || !python_env(file, pickled.is_some()) {
        return Ok(None);
    }
    let params = rollway_engine::table_params(file.and_then(|f| f.env_params.clone()));
    Ok(Some(Arc::new(InlineEnvs::new(py, &env, &params, pickled, false)?)))
}

/// Whether the run's env is a Python env (a pickled callable, `gym:`, `module:`).
fn python_env(file: Option<&RunOptions>, pickled: bool) -> bool {
    pickled || file.and_then(|f| f.env.as_deref()).is_some_and(rollway_host::is_hosted)
}

fn report(o: &Outcome) -> serde_json::Value {
    let written = o.written.as_ref().map(|w| json!({"shards": w.shards, "episodes": w.episodes, "steps": w.steps, "bytes": w.bytes}));
    let resumed =
        o.resumed.as_ref().map(|r| json!({"run": r.run.run, "episodes": r.episodes, "steps": r.steps, "next_index": r.next_index}));
    json!({
        "summary": o.summary,
        "shortfall": o.summary.shortfall(),
        "out": o.out.as_ref().map(|p| p.display().to_string()),
        "written": written,
        "resumed": resumed,
    })
}

/// The summary of run `run` of a dataset many writers wrote (`rollway.ray`), as JSON
/// text: counted from the committed index as a local run counts its episodes, plus
/// what the parts reported (`parts`: their summaries, JSON text of a list).
#[pyfunction]
#[pyo3(signature = (out, run, parts, untried, seconds))]
pub fn run_summary(py: Python<'_>, out: PathBuf, run: u32, parts: &str, untried: u64, seconds: f64) -> PyResult<String> {
    let parts: Vec<rollway_engine::dataset::PartReport> =
        serde_json::from_str(parts).map_err(|e| input_error(format!("part summaries: {e}")))?;
    let s = py.detach(|| rollway_engine::dataset::run_summary(&out, run, &parts, untried, seconds)).py()?;
    Ok(json!({"summary": s, "shortfall": s.shortfall()}).to_string())
}

/// Ends run `run` of a dataset many writers wrote (`rollway.ray`): records its summary
/// (JSON text) and the dataset's counts, once every writer is gone. Returns what the
/// run committed, as JSON text.
#[pyfunction]
#[pyo3(signature = (out, run, summary=None))]
pub fn close_run(py: Python<'_>, out: PathBuf, run: u32, summary: Option<&str>) -> PyResult<String> {
    let summary = summary.map(serde_json::from_str::<serde_json::Value>).transpose().map_err(|e| input_error(format!("summary: {e}")))?;
    let w = py.detach(|| rollway_store::close_run(&out, run, summary)).py()?;
    Ok(json!({"shards": w.shards, "episodes": w.episodes, "steps": w.steps}).to_string())
}
