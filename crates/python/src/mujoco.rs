//! Gymnasium's MuJoCo tasks stepped by rollway (`rollway/_mujoco.py` says which
//! and when): MuJoCo's `mj_step` on each env's own model and data, called through
//! the library the `mujoco` package loaded, and the rest of the step in
//! `rollway_envs::mujoco`. A step runs without the GIL, so a rollout's worker
//! threads step envs on every core; a reset runs Gymnasium's `env.reset` under it.
#![allow(unsafe_code)] // calls into libmujoco: each block says why it is sound (SAFETY)

use std::ffi::c_void;
use std::sync::OnceLock;

use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rollway_core::{Info, InfoNeed, Layout, StepOutcome};
use rollway_envs::mujoco::{self as task, Physics, Task};
use rollway_host::proto::SpecJson;

use crate::slots::{layouts, Driven, DrivenEnvs, DrivenSlot, Episodes};

/// `mj_step` and `mj_rnePostConstraint`: `(const mjModel*, mjData*)`.
type MjFn = unsafe extern "C" fn(*const c_void, *mut c_void);

/// The two MuJoCo calls a step makes, from the library the `mujoco` package loaded.
struct Lib {
    path: String,
    step: MjFn,
    rne_post_constraint: MjFn,
    _lib: libloading::Library,
}

static LIB: OnceLock<Lib> = OnceLock::new();

fn lib(path: &str) -> PyResult<&'static Lib> {
    if let Some(lib) = LIB.get() {
        return if lib.path == path { Ok(lib) } else { Err(crate::errors::input_error(format!("a second MuJoCo library: {path}"))) };
    }
    let err = |e: libloading::Error| crate::errors::input_error(format!("MuJoCo library {path}: {e}"));
    // SAFETY: the `mujoco` package has already loaded this very file into the process
    // (its path is the package's own), so opening it runs no initialiser again and
    // returns the loaded library; the two symbols have the C signature of `MjFn`
    // (mujoco.h: `void mj_step(const mjModel* m, mjData* d)`, same for
    // `mj_rnePostConstraint`), and `_lib` keeps them loaded for the process's life.
    let lib = unsafe {
        let l = libloading::Library::new(path).map_err(err)?;
        let step = *l.get::<MjFn>(b"mj_step\0").map_err(err)?;
        let rne_post_constraint = *l.get::<MjFn>(b"mj_rnePostConstraint\0").map_err(err)?;
        Lib { path: path.into(), step, rne_post_constraint, _lib: l }
    };
    Ok(LIB.get_or_init(|| lib))
}

/// One env's simulation: its `MjModel`, its `MjData`, and views of the data's arrays.
struct Sim {
    lib: &'static Lib,
    model: *const c_void,
    data: *mut c_void,
    qpos: (*mut f64, usize),
    qvel: (*mut f64, usize),
    ctrl: (*mut f64, usize),
    frame_skip: usize,
}

// SAFETY: the pointers are into the MjModel/MjData of the env the same `Slot` holds
// (a `Py` reference keeps them alive), and only the thread stepping this block uses
// them, one step at a time; MuJoCo's calls on distinct MjData are thread-safe.
unsafe impl Send for Sim {}

impl Physics for Sim {
    fn advance(&mut self, action: &[f32]) {
        // SAFETY: see `Sim`'s Send: `ctrl` is `nu` float64 of this env's MjData, which
        // nothing else touches while the block steps; model and data are MuJoCo's own.
        unsafe {
            let ctrl = std::slice::from_raw_parts_mut(self.ctrl.0, self.ctrl.1);
            for (c, a) in ctrl.iter_mut().zip(action) {
                *c = f64::from(*a);
            }
            for _ in 0..self.frame_skip {
                (self.lib.step)(self.model, self.data);
            }
            (self.lib.rne_post_constraint)(self.model, self.data);
        }
    }

    fn qpos(&self) -> &[f64] {
        // SAFETY: `nq` float64 of this env's MjData (see `Sim`'s Send), read between steps.
        unsafe { std::slice::from_raw_parts(self.qpos.0, self.qpos.1) }
    }

    fn qvel(&self) -> &[f64] {
        // SAFETY: as `qpos`.
        unsafe { std::slice::from_raw_parts(self.qvel.0, self.qvel.1) }
    }
}

/// `Model.parts`: `(model, data, qpos, qvel, ctrl, frame_skip, settings)`.
type Parts<'py> = (usize, usize, Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>, usize, Bound<'py, PyDict>);

pub(crate) struct Slot {
    env: Py<PyAny>,
    sim: Sim,
    action: Vec<f32>,
}

impl DrivenSlot for Slot {
    fn env(&self) -> &Py<PyAny> {
        &self.env
    }
}

/// One block's MuJoCo envs (`slots.stepper` is the package's `Model`).
pub(crate) struct MujocoEnvs {
    slots: Driven<Slot>,
    task: Option<Task>,
    kind: task::Kind,
    /// Gymnasium's `TimeLimit` (the env's `max_episode_steps`), against each slot's steps.
    limit: Option<u64>,
    episodes: Episodes,
    ol: Layout,
    al: Layout,
    id: String,
}

impl MujocoEnvs {
    /// `n` slots from what `prepare` returned for a MuJoCo task rollway steps:
    /// `(model, first_env, spec_json, None, None, dump_info)`.
    pub fn new(prepared: &Bound<'_, PyTuple>, spec: &SpecJson, n: usize, infos: InfoNeed, cut: Option<u64>) -> PyResult<MujocoEnvs> {
        let model = prepared.get_item(0)?;
        let id = spec.id.strip_prefix("gym:").unwrap_or(&spec.id);
        let kind = task::kind(id).ok_or_else(|| crate::errors::input_error(format!("{id} is not a MuJoCo task rollway steps")))?;
        let (ol, al) = layouts(spec)?;
        Ok(MujocoEnvs {
            limit: model.getattr("limit")?.extract()?,
            slots: Driven::new(prepared, n)?,
            task: None,
            kind,
            episodes: Episodes::new(n, infos, cut),
            ol,
            al,
            id: spec.id.clone(),
        })
    }

    /// A slot's simulation, and the task's settings read from its env when `task` has none yet.
    fn slot(model: &Bound<'_, PyAny>, kind: task::Kind, task: &mut Option<Task>, env: Py<PyAny>) -> PyResult<Slot> {
        let parts = model.call_method1("parts", (&env,))?;
        let (m, d, qpos, qvel, ctrl, frame_skip, settings): Parts<'_> = parts.extract()?;
        let path: String = model.call_method0("library")?.extract()?;
        let view = |a: &Bound<'_, PyAny>| -> PyResult<(*mut f64, usize)> {
            let a = a.cast::<PyArray1<f64>>()?;
            if !a.is_c_contiguous() {
                return Err(crate::errors::input_error("MuJoCo data arrays must be contiguous"));
            }
            Ok((a.data(), a.len()))
        };
        let (qpos, qvel, ctrl) = (view(&qpos)?, view(&qvel)?, view(&ctrl)?);
        if task.is_none() {
            *task = Some(read_task(kind, &settings)?);
        }
        let sim = Sim { lib: lib(&path)?, model: m as *const c_void, data: d as *mut c_void, qpos, qvel, ctrl, frame_skip };
        Ok(Slot { env, action: vec![0.0; ctrl.1], sim })
    }
}

crate::slots::driven_parts!(MujocoEnvs);

impl DrivenEnvs for MujocoEnvs {
    fn step_one(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> PyResult<(StepOutcome, Option<Info>)> {
        let s = self.slots.get(slot)?;
        let task = self.task.as_ref().expect("set with the first slot");
        for (a, b) in s.action.iter_mut().zip(act.chunks_exact(4)) {
            *a = f32::from_ne_bytes(b.try_into().expect("four bytes"));
        }
        let (sim, action) = (&mut s.sim, &s.action);
        let step = py.detach(|| task.step(sim, action, obs));
        let length = self.episodes.stepped(slot);
        let truncated = self.limit.is_some_and(|l| length >= l);
        let info = if self.episodes.info_wanted(slot, step.terminated || truncated) { Some(info_of(&step.info)?) } else { None };
        Ok((StepOutcome { reward: step.reward, terminated: step.terminated, truncated }, info))
    }

    fn reset_one(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> PyResult<Option<Info>> {
        let model = self.slots.stepper.clone_ref(py).into_bound(py);
        let (kind, task) = (self.kind, &mut self.task);
        let s = self.slots.for_reset(py, slot, seed, |env| MujocoEnvs::slot(&model, kind, task, env))?;
        let (first, info): (Bound<'_, PyAny>, Bound<'_, PyAny>) = model.call_method1("reset", (&s.env, seed))?.extract()?;
        let first = first.cast::<PyArray1<f64>>()?.readonly();
        for (out, v) in obs.chunks_exact_mut(8).zip(first.as_slice()?) {
            out.copy_from_slice(&v.to_ne_bytes());
        }
        if !self.episodes.started(slot) {
            return Ok(None);
        }
        Ok(Some(self.slots.info(&info)?))
    }
}

/// The task's settings as its env holds them (see `rollway/_mujoco.py`'s `SETTINGS`).
fn read_task(kind: task::Kind, s: &Bound<'_, PyDict>) -> PyResult<Task> {
    let get = |k: &str| s.get_item(k);
    let f = |k: &str, default: f64| -> PyResult<f64> { get(k)?.map_or(Ok(default), |v| v.extract()) };
    let range = |k: &str| -> PyResult<(f64, f64)> { get(k)?.map_or(Ok((f64::NEG_INFINITY, f64::INFINITY)), |v| v.extract()) };
    Ok(Task {
        kind,
        forward_reward_weight: f("forward_reward_weight", 1.0)?,
        ctrl_cost_weight: f("ctrl_cost_weight", 0.0)?,
        exclude_x: get("exclude_x")?.map_or(Ok(true), |v| v.extract())?,
        dt: f("dt", 0.0)?,
        healthy_reward: f("healthy_reward", 0.0)?,
        terminate_when_unhealthy: get("terminate_when_unhealthy")?.map_or(Ok(false), |v| v.extract())?,
        healthy_state_range: range("healthy_state_range")?,
        healthy_z_range: range("healthy_z_range")?,
        healthy_angle_range: range("healthy_angle_range")?,
        init_z: f("init_z", 0.0)?,
    })
}

/// A step's info; a value JSON cannot hold is refused as the Python envs' infos are.
fn info_of(values: &[(&'static str, f64)]) -> PyResult<Info> {
    let mut info = Info::new();
    for &(key, v) in values {
        let n = serde_json::Number::from_f64(v)
            .ok_or_else(|| crate::errors::input_error(format!("info[{key:?}]: a float {v} cannot be recorded")))?;
        info.0.insert(key.into(), n.into());
    }
    Ok(info)
}
