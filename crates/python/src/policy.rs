//! Python policies as the run's agent: `rollway.run(agent=callable)`.
//!
//! The policy is called on the central stage once per batch, like a built-in
//! agent, so batch bounds and `max_wait` apply unchanged. The GIL is taken for
//! the call only. The batch's rows (possibly several workers' blocks) are gathered
//! into one buffer that becomes the policy's arrays (`rollway.policy.Adapter` turns
//! the row layout into numpy arrays over it, without a further copy); the actions
//! come back packed and are scattered into the blocks' rows.
//!
//! Why one copy rather than views of the blocks' own rows: the rows are reused
//! for the next step as soon as the call returns, so an array over them that the
//! policy kept (in a replay buffer, a logged tensor) would silently change or, after
//! the run, point at freed memory. Copying a batch of observations costs a memcpy,
//! far below any policy's own cost (measured in bench/RESULTS.md).

use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use rollway_core::check::Problem;
use rollway_core::{ActBatch, Agent, AgentFactory, EnvSpec, Error, Layout, Result};

/// The exception a Python policy last raised, kept (with its traceback) for `rollway.run`
/// to raise its error from: the engine carries errors as text, the user wants their own
/// exception. One slot for the process: `run` empties it before it starts and takes it
/// when it ends.
static LAST_ERROR: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);

/// Takes the exception a Python policy last raised in this process (and forgets it).
#[pyfunction]
pub fn take_policy_error(py: Python<'_>) -> Option<Py<PyAny>> {
    let e = LAST_ERROR.lock().unwrap_or_else(|p| p.into_inner()).take()?;
    Some(e.into_value(py).into_any())
}

/// An [`AgentFactory`] for a Python callable `policy(obs, first, state)`.
pub struct PyPolicies {
    name: String,
    policy: Py<PyAny>,
}

impl PyPolicies {
    pub fn new(name: String, policy: Py<PyAny>) -> PyPolicies {
        PyPolicies { name, policy }
    }
}

impl AgentFactory for PyPolicies {
    fn name(&self) -> &str {
        &self.name
    }

    fn make(&self, spec: &EnvSpec) -> Result<Box<dyn Agent>> {
        let (adapter, draws) = Python::attach(|py| -> PyResult<_> {
            let a = adapter(py, &self.policy, spec)?;
            let draws: usize = a.bind(py).getattr("draws")?.extract()?;
            Ok((a, draws))
        })
        .map_err(|e| Error::Agent { agent: self.name.clone(), message: e.to_string() })?;
        Ok(Box::new(PyPolicy { name: self.name.clone(), adapter, draws }))
    }
}

/// `rollway.policy.Adapter` over `policy` for `spec`'s spaces.
pub(crate) fn adapter(py: Python<'_>, policy: &Py<PyAny>, spec: &EnvSpec) -> PyResult<Py<PyAny>> {
    let cls = py.import("rollway.policy")?.getattr("Adapter")?;
    let (obs, act) = (spec.observation_space.to_json(), spec.action_space.to_json());
    // A multi-agent env's agents name its action rows in a wrong-shape error.
    Ok(cls.call1((policy.clone_ref(py), obs, act, spec.agents.clone()))?.unbind())
}

struct PyPolicy {
    name: String,
    adapter: Py<PyAny>,
    /// Numbers in `[0, 1)` a row takes per call (`rollway.policy.draws`; 0: none).
    draws: usize,
}

/// `draws` numbers a row, from each row's own stream, in batch order (as `gather`'s rows).
fn draw_uniforms<'py>(py: Python<'py>, batch: &mut ActBatch<'_>, draws: usize) -> PyResult<Bound<'py, PyByteArray>> {
    let mut u = vec![0f64; batch.len() * draws];
    for (rng, out) in batch.segments.iter_mut().flat_map(|s| s.rng.iter_mut()).zip(u.chunks_exact_mut(draws)) {
        rollway_core::uniforms(rng, out);
    }
    Ok(PyByteArray::new(py, bytemuck::cast_slice(&u)))
}

/// What the adapter returns: packed actions, and the new state (bytes, width) if any.
pub(crate) type Answer = (Vec<u8>, Option<(Vec<u8>, usize)>);

/// The adapter's arguments: observations, first flags and states as bytearrays, and `n`, `d`.
pub(crate) type Gathered<'py> = (Bound<'py, PyByteArray>, Bound<'py, PyByteArray>, Bound<'py, PyByteArray>, usize, usize);

/// The batch as the adapter's arguments: observations, first flags and states
/// gathered into bytearrays (one copy: see the module docs), and `n`, `d`.
pub(crate) fn gather<'py>(py: Python<'py>, batch: &ActBatch<'_>) -> PyResult<Gathered<'py>> {
    let n = batch.len();
    let d = batch.segments.iter().flat_map(|s| s.memory.iter().map(Vec::len)).max().unwrap_or(0);
    let ob = batch.obs_layout.row_bytes();
    let segs = &batch.segments;
    // Gathered straight into the bytearrays the policy's arrays are made over: one copy.
    let obs = PyByteArray::new_with(py, n * ob, |buf| {
        let mut at = 0;
        for seg in segs {
            buf[at..at + seg.obs.len()].copy_from_slice(seg.obs);
            at += seg.obs.len();
        }
        Ok(())
    })?;
    let first = PyByteArray::new_with(py, n, |buf| {
        for (b, &f) in buf.iter_mut().zip(segs.iter().flat_map(|s| s.first.iter())) {
            *b = f as u8;
        }
        Ok(())
    })?;
    // Zeros where an env's state is shorter than `d` (or empty, at an episode's start).
    let state = PyByteArray::new_with(py, n * d * 4, |buf| {
        if d == 0 {
            return Ok(());
        }
        for (row, m) in buf.chunks_exact_mut(d * 4).zip(segs.iter().flat_map(|s| s.memory.iter())) {
            row[..m.len() * 4].copy_from_slice(bytemuck::cast_slice(m));
        }
        Ok(())
    })?;
    Ok((obs, first, state, n, d))
}

/// Scatters the adapter's answer into the batch's action rows and memories.
pub(crate) fn scatter(batch: &mut ActBatch<'_>, (actions, new_state): Answer, err: impl Fn(String) -> Error) -> Result<()> {
    let n = batch.len();
    let ab = batch.act_layout.row_bytes();
    if actions.len() != n * ab {
        return Err(err(format!("the policy's actions packed to {} bytes; {n} actions take {}", actions.len(), n * ab)));
    }
    let floats = |b: &[u8]| b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().expect("4 bytes"))).collect::<Vec<f32>>();
    let new_state = new_state.map(|(bytes, d)| (floats(&bytes), d));
    if new_state.as_ref().is_some_and(|(s, d)| s.len() != n * d) {
        return Err(err(format!("the policy's state does not have {n} rows")));
    }
    let (mut at, mut i) = (0, 0);
    for seg in &mut batch.segments {
        let k = seg.len();
        seg.actions.copy_from_slice(&actions[at..at + k * ab]);
        at += k * ab;
        if let Some((s, d)) = &new_state {
            for m in seg.memory.iter_mut() {
                m.clear();
                m.extend_from_slice(&s[i * d..(i + 1) * d]);
                i += 1;
            }
        }
    }
    Ok(())
}

/// The error of an action that did not convert into its row without loss
/// (`rollway.spaces.RowError`: a float that is not a whole number for an integer
/// leaf), naming its batch row so that the run can name the env slot; `None` for
/// any other exception.
pub(crate) fn action_error(py: Python<'_>, e: &PyErr, agent: &str, al: &Layout) -> Option<Error> {
    let v = e.value(py);
    let class = py.import("rollway.spaces").and_then(|m| m.getattr("RowError")).ok()?;
    if !v.is_instance(&class).unwrap_or(false) {
        return None;
    }
    let row: usize = v.getattr("row").and_then(|r| r.extract()).ok()?;
    let leaf: String = v.getattr("leaf").and_then(|r| r.extract()).ok()?;
    let index: usize = v.getattr("index").and_then(|r| r.extract()).ok()?;
    let value: f64 = v.getattr("value").and_then(|r| r.extract()).ok()?;
    let kind: String = v.getattr("kind").and_then(|r| r.extract()).ok()?;
    let dtype: String = v.getattr("dtype").and_then(|r| r.extract()).ok()?;
    let scalar = al.leaf_index(&leaf).is_some_and(|i| al.leaves()[i].len() == 1);
    let space = al.space().describe();
    let why = match (kind.as_str(), value.is_finite()) {
        ("range", _) => format!("does not fit {dtype} ({space})"),
        (_, true) => format!("is not a whole number ({space} takes integers)"),
        (_, false) => format!("is not finite ({space} takes integers)"),
    };
    let p = Problem { leaf, index, scalar, value: if value.is_nan() { "nan".into() } else { value.to_string() }, why, warning: false };
    Some(Error::Action { agent: agent.to_string(), row, message: p.describe("action") })
}

impl Agent for PyPolicy {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        let err = |message: String| Error::Agent { agent: self.name.clone(), message };
        let answer = Python::attach(|py| -> std::result::Result<Answer, Error> {
            let mut call = || -> PyResult<Answer> {
                let uniform = if self.draws > 0 { Some(draw_uniforms(py, batch, self.draws)?) } else { None };
                let (obs, first, state, n, d) = gather(py, batch)?;
                self.adapter.bind(py).call1((obs, first, state, n, d, uniform))?.extract()
            };
            call().map_err(|e| {
                let error = action_error(py, &e, &self.name, batch.act_layout).unwrap_or_else(|| err(e.to_string()));
                *LAST_ERROR.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                error
            })
        })?;
        scatter(batch, answer, err)
    }
}
