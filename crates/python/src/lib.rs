//! `rollway._rollway`: the Python bindings. All PyO3 code of the project lives in
//! this crate (the core crates know nothing of Python); the package around it,
//! with the pure-Python parts, the stubs and `py.typed`, is `python/rollway/`.
//!
//! Each file binds one part: `run` the generator, `dataset` reading,
//! `loader` the training loader (zero-copy batches), `collector` recording
//! from a Python env, `host` the env process hosting Python envs for a run,
//! `policy` Python policies as a run's agent, `rollout` the rollout engine of a training loop,
//! `arrays` the numpy views they share, `errors` the mapping of every error to
//! a Python exception.

mod arrays;
mod atari;
mod batched;
mod collector;
mod convert;
mod dataset;
mod errors;
mod held;
mod host;
mod info_columns;
mod inline_host;
mod lag;
mod loader;
mod mujoco;
mod policy;
mod pyenvs;
mod rollout;
mod rows;
mod run;
mod scan;
mod slots;
mod tblog;
mod vec_blocks;
mod vec_env;

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The built-in envs: id, summary, spaces (Minari's space JSON), time limit, parameters.
#[pyfunction]
fn envs(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for e in rollway_envs::REGISTRY {
        let d = PyDict::new(py);
        d.set_item("id", e.id)?;
        d.set_item("summary", e.summary)?;
        d.set_item("params", e.params.iter().map(|(k, h)| (*k, *h)).collect::<Vec<_>>())?;
        if let Ok(env) = rollway_envs::make(e.id, &Default::default()) {
            let s = env.spec();
            d.set_item("observation_space", s.observation_space.to_json())?;
            d.set_item("action_space", s.action_space.to_json())?;
            d.set_item("max_episode_steps", s.max_episode_steps)?;
        }
        out.push(d);
    }
    Ok(out)
}

/// The built-in agents: name, summary, the envs they are made for (empty: any), parameters.
#[pyfunction]
fn agents(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let entry = |name: &str, summary: &str, envs: Vec<&str>, params: &[(&str, &str)]| {
        let d = PyDict::new(py);
        d.set_item("name", name)?;
        d.set_item("summary", summary)?;
        d.set_item("envs", envs)?;
        d.set_item("params", params.to_vec())?;
        Ok(d)
    };
    let onnx = format!("{}PATH", rollway_onnx::PREFIX);
    let builtin = rollway_agents::REGISTRY.iter().map(|a| entry(a.name, a.summary, a.envs.to_vec(), a.params));
    builtin.chain(std::iter::once(entry(&onnx, rollway_onnx::SUMMARY, vec![], rollway_onnx::PARAMS))).collect()
}

/// A leaf of a row layout: path, numpy dtype, shape, bytes.
type LeafInfo = (String, &'static str, Vec<usize>, usize);

/// A space's row layout: its leaves as (path, numpy dtype, shape, bytes), and the
/// row's size. Leaves start at multiples of 8 bytes.
#[pyfunction]
fn layout(space_json: &str) -> PyResult<(Vec<LeafInfo>, usize)> {
    let space = rollway_core::Space::from_json(space_json).map_err(|e| errors::input_error(format!("space: {e}")))?;
    let l = rollway_core::Layout::of(&space);
    let leaves = l.leaves().iter().map(|f| (f.path.clone(), f.dtype.name(), f.shape.clone(), f.bytes())).collect();
    Ok((leaves, l.row_bytes()))
}

/// The `rollway` command line over `argv` (the first names the program), with the GIL
/// released: what the package's `rollway` script runs, so the wheel's CLI is the
/// binary's code (`rollway_cli`). Returns the exit code.
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    py.detach(|| rollway_cli::main_with_args(argv))
}

#[pymodule]
fn _rollway(m: &Bound<'_, PyModule>) -> PyResult<()> {
    rollway_engine::quiet_worker_panics();
    errors::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FORMAT_VERSION", rollway_store::FORMAT_VERSION)?;
    // Every run setting's name, as RunOptions declares them (`rollway.run`'s keywords are checked against it).
    m.add("RUN_SETTINGS", rollway_engine::RunOptions::keys())?;
    m.add("RENAMED_SETTINGS", rollway_engine::settings::RENAMED.to_vec())?;
    m.add("RENAMED_ROLLOUT_SETTINGS", rollway_engine::rollout::RENAMED.to_vec())?;
    let rollout = serde_json::to_string(&rollway_engine::RolloutRequest::default()).expect("requests serialize");
    m.add("ROLLOUT_SETTINGS", rollout)?;
    m.add_function(wrap_pyfunction!(renamed_warning, m)?)?;
    // The engines this build's `onnx:` agent can use (tract only with the `tract` feature).
    m.add("ONNX_ENGINES", rollway_onnx::ENGINES.to_vec())?;
    // `gym:` ids whose MuJoCo steps are rollway's, and the Gymnasium class each must be made as.
    let tasks = pyo3::types::PyDict::new(m.py());
    for (id, module, class, _) in rollway_envs::mujoco::TASKS {
        tasks.set_item(id, (module, class))?;
    }
    m.add("MUJOCO_TASKS", tasks)?;
    m.add_function(wrap_pyfunction!(envs, m)?)?;
    m.add_function(wrap_pyfunction!(agents, m)?)?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(policy::take_policy_error, m)?)?;
    m.add_function(wrap_pyfunction!(run::close_run, m)?)?;
    m.add_function(wrap_pyfunction!(run::run_summary, m)?)?;
    m.add_function(wrap_pyfunction!(run::resume_starts_afresh, m)?)?;
    m.add_function(wrap_pyfunction!(layout, m)?)?;
    m.add_function(wrap_pyfunction!(cli, m)?)?;
    m.add_function(wrap_pyfunction!(host::host_serve, m)?)?;
    m.add_class::<arrays::Keeper>()?;
    dataset::register(m)?;
    convert::register(m)?;
    loader::register(m)?;
    collector::register(m)?;
    vec_env::register(m)?;
    rollout::register(m)?;
    lag::register(m)?;
    held::register(m)?;
    tblog::register(m)?;
    Ok(())
}

/// The deprecation warning for a setting given by its old name (`rollway_engine::settings::renamed_warning`).
#[pyfunction]
fn renamed_warning(old: &str, new: &str) -> String {
    rollway_engine::settings::renamed_warning(old, new)
}
