//! `rollway.Rollout`: the rollout engine of `rollway_runner::rollout` for a Python
//! learner. The engine calls a Python policy with the GIL taken for the call only;
//! `collect` runs with the GIL released (at lag ≥ 1 waiting for the collecting
//! thread, checking for Ctrl-C ten times a second; at lag 0 making the fragment
//! itself), and hands the fragment over as numpy arrays that take over the
//! fragment's vectors without a copy (`torch.from_numpy` takes them as they are).
//!
//! A policy that raises ends the rollout, and `collect` raises that very exception
//! (traceback included), not a translation of it: the learner sees its own bug.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rollway_core::{ActBatch, DType, EnvFactory, Error, Params};
use rollway_engine::{RolloutPlan, RolloutRequest, RolloutSources, StartedRollout};
use rollway_runner::rollout::{Extra, Fragment, Policy, Rollout, Update};

use crate::arrays;
use crate::errors::{input_error, stash, Raised, ToPy};
use crate::inline_host::InlineEnvs;
use crate::policy::{gather, scatter, Answer};

/// A Python policy in a rollout: `rollway.policy.Adapter.rollout` answers with the
/// actions, the state and the extras.
struct PyRolloutPolicy {
    adapter: Py<PyAny>,
    raised: Raised,
    kept: Option<ThreadState>,
}

/// The collecting thread's Python thread state, kept from one policy call to the
/// next within a fragment. Without it every call (`Python::attach` on a thread
/// Python did not start) makes a fresh thread state and deletes it after: ~µs of
/// its own, and every per-thread cache the policy's code builds (`threading.local`,
/// torch's thread-local state) is lost at each step. Measured in bench/RESULTS.md
/// (issue 32). Let go at each fragment's end (`Policy::pause`), so no thread state
/// outlives the fragment it served, whatever the interpreter does meanwhile.
struct ThreadState {
    thread: std::thread::ThreadId,
    gil: pyo3::ffi::PyGILState_STATE,
    tstate: *mut pyo3::ffi::PyThreadState,
}

// SAFETY: the pointer is only used on the thread that made it (checked in `drop`);
// the struct travels with the policy but is never dereferenced elsewhere.
unsafe impl Send for ThreadState {}

impl ThreadState {
    /// Called outside any `Python::attach`, on the collecting thread.
    fn keep() -> ThreadState {
        // SAFETY: this thread holds no GIL here (the sampler calls `act` outside any
        // attach). `PyGILState_Ensure` makes this thread's state and takes the GIL;
        // `PyEval_SaveThread` releases the GIL and hands back the state, which stays
        // this thread's: each later `Python::attach` here finds and reuses it.
        let (gil, tstate) = unsafe {
            let gil = pyo3::ffi::PyGILState_Ensure();
            (gil, pyo3::ffi::PyEval_SaveThread())
        };
        ThreadState { thread: std::thread::current().id(), gil, tstate }
    }
}

impl Drop for ThreadState {
    fn drop(&mut self) {
        if std::thread::current().id() != self.thread {
            // Never happens (the policy pauses and drops on its thread); leaking beats touching another thread's state.
            return;
        }
        // SAFETY: on the thread that made the state, holding no GIL (no attach is
        // open here): `PyEval_RestoreThread` retakes the GIL with it, and
        // `PyGILState_Release` undoes `keep`'s ensure, deleting the state.
        unsafe {
            pyo3::ffi::PyEval_RestoreThread(self.tstate);
            pyo3::ffi::PyGILState_Release(self.gil);
        }
    }
}

/// A resumed rollout's replay as Python sees it: (starts, episodes, steps).
type Resumed = (Vec<u64>, u64, u64);

type RolloutAnswer = (Vec<u8>, Option<(Vec<u8>, usize)>, Vec<(String, Vec<u8>, Vec<usize>)>);

impl Policy for PyRolloutPolicy {
    fn act(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<Extra>) -> rollway_core::Result<()> {
        self.kept.get_or_insert_with(ThreadState::keep);
        let err = |message: String| Error::Agent { agent: "policy".into(), message };
        let answer = Python::attach(|py| -> PyResult<RolloutAnswer> {
            let (obs, first, state, n, d) = gather(py, batch)?;
            self.adapter.bind(py).call_method1("rollout", (obs, first, state, n, d))?.extract()
        });
        let (actions, state, cols) = answer.map_err(|e| {
            // An action that did not convert is named by the engine, with its env slot.
            Python::attach(|py| crate::policy::action_error(py, &e, "policy", batch.act_layout)).unwrap_or_else(|| stash(&self.raised, e))
        })?;
        extras.clear();
        for (name, bytes, shape) in cols {
            let data = bytes.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().expect("4 bytes"))).collect();
            extras.push(Extra { name, shape, values: data });
        }
        scatter(batch, (actions, state) as Answer, err)
    }

    fn pause(&mut self) {
        self.kept = None;
    }
}

/// The running rollout behind `rollway.Rollout`.
#[pyclass(module = "rollway._rollway", unsendable)]
pub struct RolloutHandle {
    /// The engine and the dataset it records into (`out=`), closed at `close`.
    started: Option<StartedRollout>,
    adapter: Option<Py<PyAny>>,
    raised: Raised,
    /// `host="auto"`'s choice by a step's cost, and why; `None` when it weighed none.
    host_choice: Option<String>,
}

#[pymethods]
impl RolloutHandle {
    /// `settings`: the rollout's keyword arguments as one JSON mapping
    /// (`rollway_engine::RolloutRequest`'s fields); `policy` a name or a callable.
    #[new]
    #[pyo3(signature = (env, policy, settings, env_pickle=None, python=None))]
    fn new(
        py: Python<'_>,
        env: String,
        policy: Bound<'_, PyAny>,
        settings: &str,
        env_pickle: Option<Vec<u8>>,
        python: Option<PathBuf>,
    ) -> PyResult<Self> {
        let mut request = RolloutRequest::from_json(settings).py()?;
        request.env = env;
        let callable = match policy.extract::<String>() {
            Ok(name) => {
                request.agent = Some(name);
                None
            }
            Err(_) => Some(policy.unbind()),
        };
        let python_env = env_pickle.is_some() || rollway_host::is_hosted(&request.env);
        // In one thread with nothing to overlap, a process only adds its pipe round trip (inline_host.rs),
        // unless the envs' steps cost more than it: `auto` weighs one (rollway_engine's by_cost.rs).
        let (mut envs, mut host_choice): (Option<Arc<dyn EnvFactory>>, _) = (None, None);
        if python_env && request.inline() {
            let params = Params(request.env_params.clone());
            let inline = InlineEnvs::new(py, &request.env, &params, env_pickle.clone(), request.weighs_cost())?;
            // Weighed only where `weighs_cost` said so.
            if let Some(cost) = inline.step_cost() {
                host_choice = Some(request.settle_by_cost(cost));
            }
            envs = request.inline().then(|| Arc::new(inline) as Arc<dyn EnvFactory>);
        }
        let sources = RolloutSources { envs, env_pickle, python };
        let plan = py.detach(move || RolloutPlan::new(request, sources)).py()?;
        let raised: Raised = Arc::default();
        if let Some(scan) = callable.as_ref().filter(|c| c.bind(py).hasattr("rollway_scan").unwrap_or(false)) {
            // A JAX policy with a JAX env: whole fragments from one jitted call (`rollway.batched_scan`).
            let (scan, adapter) = (crate::scan::PyScan { scan: scan.clone_ref(py), raised: raised.clone() }, Some(scan.clone_ref(py)));
            let started = py.detach(move || plan.start_scan(Box::new(scan))).py()?;
            return Ok(RolloutHandle { started: Some(started), adapter, raised, host_choice });
        }
        let (policy, adapter): (Box<dyn Policy>, _) = match (plan.named_policy().py()?, callable) {
            (Some(p), _) => (p, None),
            (None, Some(callable)) => {
                let adapter = crate::policy::adapter(py, &callable, plan.spec())?;
                (Box::new(PyRolloutPolicy { adapter: adapter.clone_ref(py), raised: raised.clone(), kept: None }), Some(adapter))
            }
            (None, None) => return Err(input_error("policy: give a callable or a policy's name")),
        };
        let started = py.detach(move || plan.start(policy)).py()?;
        Ok(RolloutHandle { started: Some(started), adapter, raised, host_choice })
    }

    /// Where `host="auto"` put the envs by one step's measured cost, and why (`None`:
    /// the host was not weighed).
    #[getter]
    fn host_choice(&self) -> Option<String> {
        self.host_choice.clone()
    }

    /// (observation space JSON, action space JSON, time limit).
    fn spec(&self) -> PyResult<(String, String, Option<u64>)> {
        let s = self.engine()?.spec();
        Ok((s.observation_space.to_json(), s.action_space.to_json(), s.max_episode_steps))
    }

    /// With `out` on an object store: what is wrong with the store now, or `None` while
    /// it answers.
    fn store_trouble(&self) -> Option<String> {
        self.started.as_ref().and_then(StartedRollout::store_trouble)
    }

    /// The next fragment as a dict of arrays (see `rollway.rollout.Fragment`).
    fn collect<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        loop {
            let engine = self.started.as_mut().ok_or_else(closed)?.rollout_mut();
            let got = py.detach(|| engine.collect_timeout(Duration::from_millis(100)));
            // A Ctrl-C that landed in an inline env's code was raised there (pyenvs.rs): the user's, raised here.
            if crate::pyenvs::take_interrupt() {
                return Err(pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted while an env stepped"));
            }
            match got {
                Ok(Some(f)) => return fragment_dict(py, f),
                Ok(None) => py.check_signals()?,
                Err(e) => {
                    // The policy's own exception, if it raised one; else the engine's error.
                    let raised = self.raised.lock().unwrap_or_else(|p| p.into_inner()).take();
                    return Err(raised.unwrap_or_else(|| crate::errors::to_py(e.into())));
                }
            }
        }
    }

    /// Makes the next policy version (or `version`, the learner's own number, newer
    /// than the current); `weights`, if given, go to the policy's `load` on the
    /// collecting thread before its next batch. Returns the new version.
    #[pyo3(signature = (weights=None, version=None))]
    fn publish(&self, weights: Option<Py<PyAny>>, version: Option<u64>) -> PyResult<u64> {
        let engine = self.engine()?;
        let update: Option<Update> = match weights {
            None => None,
            Some(w) => {
                let adapter = self.adapter.as_ref().ok_or_else(|| {
                    input_error("publish(weights): a policy given by name (a built-in agent, an onnx: model) has no weights to load")
                })?;
                let (adapter, raised) = (Python::attach(|py| adapter.clone_ref(py)), self.raised.clone());
                Some(Box::new(move |_: &mut dyn Policy| {
                    Python::attach(|py| adapter.bind(py).call_method1("load", (w,)).map(drop)).map_err(|e| stash(&raised, e))
                }))
            }
        };
        match version {
            Some(v) => engine.publish_version(v, update).py(),
            None => Ok(engine.publish(update)),
        }
    }

    /// With `resume`: (each slot's episodes already taken, committed episodes, their steps).
    #[getter]
    fn resumed(&self) -> Option<Resumed> {
        self.started.as_ref()?.resumed().map(|r| (r.starts.clone(), r.episodes, r.steps))
    }

    /// The latest published version.
    #[getter]
    fn version(&self) -> PyResult<u64> {
        Ok(self.engine()?.version())
    }

    /// Stops the collecting thread and closes every env (hosted processes included),
    /// then stores the run's summary, commits what the dataset writer holds and closes it.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(started) = self.started.take() else { return Ok(()) };
        // Without the GIL: the thread may be waiting for it to finish a policy call.
        py.detach(move || started.close()).py()
    }
}

impl RolloutHandle {
    fn engine(&self) -> PyResult<&Rollout> {
        self.started.as_ref().map(StartedRollout::rollout).ok_or_else(closed)
    }
}

impl Drop for RolloutHandle {
    fn drop(&mut self) {
        // An error closing the dataset has nowhere to go here; `close` raises it.
        Python::attach(|py| drop(self.close(py)));
    }
}

fn closed() -> PyErr {
    input_error("the rollout is closed")
}

/// The fragment's columns as arrays that own its vectors (rows stay raw bytes: the
/// package views them by leaf), plus its finished episodes and stats.
fn fragment_dict(py: Python<'_>, f: Fragment) -> PyResult<Bound<'_, PyDict>> {
    let (t, n) = (f.steps, f.envs);
    let d = PyDict::new(py);
    let bools = |v: Vec<bool>| v.into_iter().map(u8::from).collect::<Vec<u8>>();
    let ids = |v: Vec<u64>| v.into_iter().map(|x| x as i64).collect::<Vec<i64>>();
    let obs_len = f.obs.len();
    d.set_item("steps", t)?;
    d.set_item("envs", n)?;
    let obs = match f.obs_buffers {
        Some(buffers) => arrays::recycled(py, f.obs, buffers, DType::U8, &[obs_len])?,
        None => arrays::from_vec(py, f.obs, DType::U8, &[obs_len])?,
    };
    d.set_item("obs", obs)?;
    let act_len = f.actions.len();
    d.set_item("actions", arrays::from_vec(py, f.actions, DType::U8, &[act_len])?)?;
    d.set_item("rewards", arrays::from_vec(py, f.rewards, DType::F32, &[t, n])?)?;
    d.set_item("terminated", arrays::from_vec(py, bools(f.terminated), DType::Bool, &[t, n])?)?;
    d.set_item("truncated", arrays::from_vec(py, bools(f.truncated), DType::Bool, &[t, n])?)?;
    d.set_item("first", arrays::from_vec(py, bools(f.first), DType::Bool, &[t + 1, n])?)?;
    d.set_item("episode", arrays::from_vec(py, ids(f.episode), DType::I64, &[t + 1, n])?)?;
    d.set_item("version", arrays::from_vec(py, ids(f.version), DType::I64, &[t, n])?)?;
    d.set_item("state", arrays::from_vec(py, f.state, DType::F32, &[n, f.state_dim])?)?;
    let extras = PyDict::new(py);
    for e in f.extras {
        let shape: Vec<usize> = [t, n].into_iter().chain(e.shape.iter().copied()).collect();
        extras.set_item(&e.name, arrays::from_vec(py, e.values, DType::F32, &shape)?)?;
    }
    d.set_item("extras", extras)?;
    let fin = PyDict::new(py);
    let k = f.finished.len();
    let col = |g: &dyn Fn(&rollway_runner::rollout::Finished) -> i64| f.finished.iter().map(g).collect::<Vec<i64>>();
    fin.set_item("env", arrays::from_vec(py, col(&|e| e.env as i64), DType::I64, &[k])?)?;
    fin.set_item("step", arrays::from_vec(py, col(&|e| e.step as i64), DType::I64, &[k])?)?;
    fin.set_item("episode", arrays::from_vec(py, col(&|e| e.episode as i64), DType::I64, &[k])?)?;
    fin.set_item("length", arrays::from_vec(py, col(&|e| e.length as i64), DType::I64, &[k])?)?;
    fin.set_item("return", arrays::from_vec(py, f.finished.iter().map(|e| e.ret).collect::<Vec<f64>>(), DType::F64, &[k])?)?;
    fin.set_item(
        "terminated",
        arrays::from_vec(py, f.finished.iter().map(|e| u8::from(e.terminated)).collect::<Vec<u8>>(), DType::Bool, &[k])?,
    )?;
    d.set_item("finished", fin)?;
    // One JSON array for the lot: the package parses it once per fragment.
    let infos: Vec<String> = f.finished.iter().map(|e| e.info.to_json()).collect();
    d.set_item("final_info", format!("[{}]", infos.join(",")))?;
    let final_len = f.final_obs.len();
    d.set_item("final_obs", arrays::from_vec(py, f.final_obs, DType::U8, &[final_len])?)?;
    d.set_item("warnings", f.warnings)?;
    let s = &f.stats;
    let stats = PyDict::new(py);
    for (k, v) in [
        ("wall_s", s.wall_s),
        ("steps_per_s", s.steps_per_s),
        ("policy_s", s.policy_s),
        ("env_s", s.env_s),
        ("waited_s", s.waited_s),
        ("lag_mean", s.lag_mean),
        ("mean_batch", s.mean_batch),
    ] {
        stats.set_item(k, v)?;
    }
    for (k, v) in [
        ("lag_min", s.lag_min),
        ("lag_max", s.lag_max),
        ("dropped_steps", s.dropped_steps),
        ("env_faults", s.env_faults),
        ("batches", s.batches),
    ] {
        stats.set_item(k, v)?;
    }
    d.set_item("stats", stats)?;
    Ok(d)
}

/// Creates the dataset a rollout's `out` names, and its run, without starting the
/// rollout (one env is made to read the spaces): the run `rollway.ray.Rollout`'s actors
/// join. Returns the run's number and, with `resume`, each of the stream's slots' starts.
#[pyfunction]
#[pyo3(signature = (env, settings, env_pickle=None, python=None))]
fn prepare_rollout(
    py: Python<'_>,
    env: String,
    settings: &str,
    env_pickle: Option<Vec<u8>>,
    python: Option<PathBuf>,
) -> PyResult<(u32, Option<Resumed>)> {
    let mut request = RolloutRequest::from_json(settings).py()?;
    request.env = env;
    let sources = RolloutSources { envs: None, env_pickle, python };
    let (run, resumed) = py.detach(move || RolloutPlan::new(request, sources)?.prepare_dataset()).py()?;
    Ok((run, resumed.map(|r| (r.starts, r.episodes, r.steps))))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RolloutHandle>()?;
    m.add_function(wrap_pyfunction!(prepare_rollout, m)?)
}
