//! Python envs of one block, stepped from rollway's rows: what both hosts share —
//! the env process's round loop (`host.rs`) and the in-process host (`inline_host.rs`).
//!
//! Per op it is one call of `env.step`/`env.reset`; actions and observations cross
//! between rows and Python without a Python-level packer for the common spaces
//! (see [`crate::rows`]), else through the package's packers.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rollway_core::{Info, InfoNeed, Layout, StepOutcome};
use rollway_host::proto::SpecJson;

use crate::rows::{fast_row, fast_value, part_bytes, stepped, Int64s, Stepped};
use crate::slots::{layouts, Episodes, SlotEnvs};

/// `rollway._host.prepare`'s answer: `(make, first_env, spec_json, pack_obs, unpack_act, dump_info)`.
pub(crate) struct PyEnvs {
    make: Py<PyAny>,
    pack_obs: Py<PyAny>,
    unpack_act: Py<PyAny>,
    dump_info: Py<PyAny>,
    envs: Vec<Option<Py<PyAny>>>,
    ol: Layout,
    al: Layout,
    episodes: Episodes,
    buf: Vec<u8>,
    /// Discrete actions as the envs get them, made once.
    ints: Int64s,
    /// The env's id (or class name), which every error names.
    id: String,
}

impl PyEnvs {
    /// `n` slots from what `prepare` returned (its spec already read: `spec`); the
    /// first env goes to slot 0. `cut`: the run's own episode limit (see [`BlockOptions::cut`]).
    ///
    /// [`BlockOptions::cut`]: rollway_core::BlockOptions::cut
    pub fn new(prepared: &Bound<'_, PyTuple>, spec: &SpecJson, n: usize, infos: InfoNeed, cut: Option<u64>) -> PyResult<PyEnvs> {
        let (ol, al) = layouts(spec)?;
        let mut envs: Vec<Option<Py<PyAny>>> = (0..n).map(|_| None).collect();
        if n > 0 {
            envs[0] = Some(prepared.get_item(1)?.unbind());
        }
        Ok(PyEnvs {
            make: prepared.get_item(0)?.unbind(),
            pack_obs: prepared.get_item(3)?.unbind(),
            unpack_act: prepared.get_item(4)?.unbind(),
            dump_info: prepared.get_item(5)?.unbind(),
            envs,
            ol,
            al,
            episodes: Episodes::new(n, infos, cut),
            buf: Vec::new(),
            ints: Int64s::default(),
            id: spec.id.clone(),
        })
    }

    fn stepped(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> Result<(StepOutcome, Option<Info>), String> {
        let env = self.envs[slot].as_ref().ok_or("step of a slot without an env")?.bind(py).clone();
        let action = match fast_value(py, &self.al, act, &mut self.ints) {
            Some(v) => v,
            None => self.unpack_act.bind(py).call1((PyBytes::new(py, act),)),
        }
        .map_err(|e| format!("action: {e}"))?;
        // Interned: no new Python string for the method's name at every step.
        let out = env.call_method1(pyo3::intern!(py, "step"), (action,)).map_err(|e| env_error(py, e))?;
        let Stepped { obs: o, reward, terminated, truncated, info } = stepped(&out).map_err(|e| e.value(py).to_string())?;
        self.write_obs(&o, obs)?;
        self.episodes.stepped(slot);
        let info = if self.episodes.info_wanted(slot, terminated || truncated) { Some(self.info(&info)?) } else { None };
        Ok((StepOutcome { reward, terminated, truncated }, info))
    }

    fn reset_one(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> Result<Option<Info>, String> {
        match (&self.envs[slot], seed) {
            (None, None) => return Err(rollway_core::block::NO_ENV_TO_CONTINUE.into()),
            (None, Some(_)) => {
                self.envs[slot] = Some(self.make.bind(py).call0().map_err(|e| format!("making the env: {e}"))?.unbind());
            }
            (Some(_), _) => {}
        }
        let env = self.envs[slot].as_ref().expect("just made").bind(py).clone();
        // Unseeded, no keyword at all: `reset(seed=...)` builds a new numpy Generator (~13 µs for CartPole).
        let out = match seed {
            Some(seed) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item(pyo3::intern!(py, "seed"), seed).map_err(|e| e.to_string())?;
                env.call_method(pyo3::intern!(py, "reset"), (), Some(&kwargs))
            }
            None => env.call_method0(pyo3::intern!(py, "reset")),
        }
        .map_err(|e| env_error(py, e))?;
        let t = out.cast::<PyTuple>().ok().filter(|t| t.len() == 2).ok_or("env.reset must return (obs, info)")?;
        let wanted = self.episodes.started(slot);
        self.write_obs(&t.get_item(0).map_err(|e| e.to_string())?, obs)?;
        if wanted {
            return Ok(Some(self.info(&t.get_item(1).map_err(|e| e.to_string())?)?));
        }
        Ok(None)
    }

    fn write_obs(&mut self, o: &Bound<'_, PyAny>, row: &mut [u8]) -> Result<(), String> {
        if fast_row(&self.ol, o, &mut self.buf) {
            return copy_parts([self.buf.as_slice()], row);
        }
        let parts = self
            .pack_obs
            .bind(o.py())
            .call1((o,))
            .and_then(|p| p.cast_into::<PyList>().map_err(PyErr::from))
            .map_err(|e| format!("observation does not fit the observation space: {}", e.value(o.py())))?;
        // The packer's parts (`rollway.spaces.part_packer`: bytes, flat uint8 arrays) go straight
        // into the row, read in place: a multi-agent env's megabytes of stacked observations are
        // copied once here, not joined into new bytes and copied again.
        let arrays: Vec<Bound<'_, PyAny>> = parts.iter().collect();
        let mut slices = Vec::with_capacity(arrays.len());
        for a in &arrays {
            slices.push(
                part_bytes(a)
                    .ok_or_else(|| format!("the observation packer returned a {}, not bytes or a contiguous uint8 array", type_name(a)))?,
            );
        }
        copy_parts(slices, row)
    }

    fn info(&self, info: &Bound<'_, PyAny>) -> Result<Info, String> {
        // Most envs' infos are `{}` (CartPole's, at every step and reset): no JSON round trip for
        // nothing, which cost ~0.4 µs a step with episodes of ~10 steps.
        if info.cast::<PyDict>().is_ok_and(|d| d.is_empty()) {
            return Ok(Info::new());
        }
        let text: String =
            self.dump_info.bind(info.py()).call1((info,)).and_then(|s| s.extract()).map_err(|e| e.value(info.py()).to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("info is not a JSON object: {e}"))
    }
}

impl SlotEnvs for PyEnvs {
    fn layouts(&self) -> (&Layout, &Layout) {
        (&self.ol, &self.al)
    }

    fn step(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> Result<(StepOutcome, Option<Info>), String> {
        self.stepped(py, slot, act, obs).map_err(|e| format!("env {}: {e}", self.id))
    }

    fn reset(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> Result<Option<Info>, String> {
        self.reset_one(py, slot, seed, obs).map_err(|e| format!("env {}: {e}", self.id))
    }

    fn fail(&mut self, py: Python<'_>, slot: usize) {
        if let Some(env) = self.envs[slot].take() {
            let _ = env.bind(py).call_method0("close");
        }
    }

    fn close(&mut self, py: Python<'_>) {
        for slot in 0..self.envs.len() {
            self.fail(py, slot);
        }
    }
}

/// Set when a `KeyboardInterrupt` came out of an env's `step` or `reset`: a Ctrl-C
/// that landed in env code running on the caller's own thread (an inline run or
/// rollout steps its envs there). It is the user's, not the env's: the op still
/// fails (its episode is retried), and the run's or rollout's next signal check
/// takes this flag (`take_interrupt`) and stops as if it had seen the signal itself,
/// which Python has already spent raising the exception in the env.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a Ctrl-C landed in an env since the last call (see [`INTERRUPTED`]).
pub fn take_interrupt() -> bool {
    INTERRUPTED.swap(false, Ordering::AcqRel)
}

/// An env method's exception as its message, noting a `KeyboardInterrupt` (see [`INTERRUPTED`]).
fn env_error(py: Python<'_>, e: PyErr) -> String {
    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
        INTERRUPTED.store(true, Ordering::Release);
    }
    e.to_string()
}

fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
}

/// `parts`, one after another, fill `row` exactly; else an error saying by how much they miss.
fn copy_parts<'a>(parts: impl IntoIterator<Item = &'a [u8]>, row: &mut [u8]) -> Result<(), String> {
    let mut at = 0;
    for p in parts {
        let Some(dst) = row.get_mut(at..at + p.len()) else {
            return Err(format!("observation packs to more than the observation space's row of {} bytes", row.len()));
        };
        dst.copy_from_slice(p);
        at += p.len();
    }
    if at != row.len() {
        return Err(format!("observation packs to {at} bytes; the observation space's row has {}", row.len()));
    }
    Ok(())
}
