//! One block's envs as both hosts step them, slot by slot (the env processes,
//! `host.rs`, and the in-process host, `inline_host.rs`): the [`SlotEnvs`] trait.
//! Its implementations are Python envs (`pyenvs.rs`), and `atari:` games and MuJoCo
//! tasks stepped by rollway (`atari.rs`, `mujoco.rs`, whose slots [`Driven`] keeps);
//! `host::slot_envs` picks one for what `prepare` made.

use pyo3::prelude::*;
use rollway_core::{Info, InfoNeed, Layout, Op, Space, StepOutcome};
use rollway_host::proto::SpecJson;

/// What one op of a round gave: the step's outcome (a reset's is the default) and its
/// info when wanted, or why it failed (naming the env).
pub(crate) type OpResult = Result<(StepOutcome, Option<Info>), String>;

/// One block's envs as both hosts step them, slot by slot: Python envs
/// (`pyenvs::PyEnvs`), or envs whose steps are rollway's (`atari::AtariEnvs`,
/// `mujoco::MujocoEnvs`).
pub(crate) trait SlotEnvs: Send {
    /// Observation and action row layouts.
    fn layouts(&self) -> (&Layout, &Layout);
    /// Steps slot `slot` with the action in `act`, writing its observation into `obs`;
    /// the info comes back when the block's [`InfoNeed`](rollway_core::InfoNeed) wants it. Errors name the env.
    fn step(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> Result<(StepOutcome, Option<Info>), String>;
    /// Resets slot `slot` with `seed` (making its env first if it has none), or
    /// without one (`None`: the env's random stream goes on). Errors name the env.
    fn reset(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> Result<Option<Info>, String>;
    /// A failed env is closed and replaced at the slot's next reset.
    fn fail(&mut self, py: Python<'_>, slot: usize);
    /// Closes every env.
    fn close(&mut self, py: Python<'_>);

    /// Runs a round's `ops` over the block's rows (`act`: every slot's action row, `obs`:
    /// every slot's observation row, written where a slot has an op), one result per op
    /// in `out`. Slot by slot through [`Self::step`] and [`Self::reset`], failing the env
    /// of an op that failed; a batched simulator (`batched.rs`) makes it one call.
    fn round(&mut self, py: Python<'_>, ops: &[(usize, Op)], act: &[u8], obs: &mut [u8], out: &mut Vec<OpResult>) {
        let (ar, or) = {
            let (ol, al) = self.layouts();
            (al.row_bytes(), ol.row_bytes())
        };
        for &(slot, op) in ops {
            let row = &mut obs[slot * or..(slot + 1) * or];
            let res = match op {
                Op::Step => self.step(py, slot, &act[slot * ar..(slot + 1) * ar], row),
                Op::Reset(seed) => self.reset(py, slot, seed, row).map(|info| (StepOutcome::default(), info)),
            };
            if res.is_err() {
                self.fail(py, slot);
            }
            out.push(res);
        }
    }
}

/// A block whose steps rollway drives itself (`atari.rs`, `mujoco.rs`): it keeps its
/// slots in a [`Driven`] and steps and resets one slot; the [`SlotEnvs`] it is follows
/// (errors named with the env's id, failing and closing through its `Driven`).
pub(crate) trait DrivenEnvs: DrivenParts + Send {
    /// [`SlotEnvs::step`], its error not yet named.
    fn step_one(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> PyResult<(StepOutcome, Option<Info>)>;
    /// [`SlotEnvs::reset`], its error not yet named.
    fn reset_one(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> PyResult<Option<Info>>;
}

/// What a [`DrivenEnvs`] block holds besides its stepping: [`driven_parts!`] writes it
/// for a block struct with fields `id`, `ol`, `al` and `slots: Driven<Slot>`.
pub(crate) trait DrivenParts {
    /// What each slot holds.
    type Slot: DrivenSlot;
    /// The env's id, which errors name.
    fn id(&self) -> &str;
    /// Observation and action row layouts.
    fn row_layouts(&self) -> (&Layout, &Layout);
    /// The slots.
    fn driven(&mut self) -> &mut Driven<Self::Slot>;
}

/// [`DrivenParts`] of block struct `$ty` (fields `id`, `ol`, `al`, `slots: Driven<Slot>`).
macro_rules! driven_parts {
    ($ty:ty) => {
        impl $crate::slots::DrivenParts for $ty {
            type Slot = Slot;

            fn id(&self) -> &str {
                &self.id
            }

            fn row_layouts(&self) -> (&Layout, &Layout) {
                (&self.ol, &self.al)
            }

            fn driven(&mut self) -> &mut Driven<Slot> {
                &mut self.slots
            }
        }
    };
}
pub(crate) use driven_parts;

impl<T: DrivenEnvs> SlotEnvs for T {
    fn layouts(&self) -> (&Layout, &Layout) {
        self.row_layouts()
    }

    fn step(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> Result<(StepOutcome, Option<Info>), String> {
        self.step_one(py, slot, act, obs).map_err(|e| format!("env {}: {e}", self.id()))
    }

    fn reset(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> Result<Option<Info>, String> {
        self.reset_one(py, slot, seed, obs).map_err(|e| format!("env {}: {e}", self.id()))
    }

    fn fail(&mut self, py: Python<'_>, slot: usize) {
        self.driven().fail(py, slot);
    }

    fn close(&mut self, py: Python<'_>) {
        self.driven().close(py);
    }
}

/// A slot of a block whose steps rollway drives itself: its Python env and what the
/// steps drive (ALE's calls, MuJoCo's pointers).
pub(crate) trait DrivenSlot {
    /// The slot's Python env (reset and closed through Python).
    fn env(&self) -> &Py<PyAny>;
}

/// The envs of a block whose steps rollway drives itself (`atari:`, the MuJoCo tasks):
/// the package's stepper object (which makes and resets envs), the first env
/// `prepare` made, each slot's state, and the package's `dump_info`. Both such
/// blocks (`atari.rs`, `mujoco.rs`) make, reset, fail and close slots through it.
pub(crate) struct Driven<S> {
    /// `prepare`'s stepper (`rollway._atari.Game`, `rollway._mujoco.Model`).
    pub stepper: Py<PyAny>,
    first: Option<Py<PyAny>>,
    slots: Vec<Option<S>>,
    dump_info: Py<PyAny>,
}

impl<S: DrivenSlot> Driven<S> {
    /// `n` slots from `prepare`'s `(stepper, first_env, spec_json, None, None, dump_info)`.
    pub fn new(prepared: &Bound<'_, pyo3::types::PyTuple>, n: usize) -> PyResult<Driven<S>> {
        Ok(Driven {
            stepper: prepared.get_item(0)?.unbind(),
            first: Some(prepared.get_item(1)?.unbind()),
            slots: (0..n).map(|_| None).collect(),
            dump_info: prepared.get_item(5)?.unbind(),
        })
    }

    /// The slot's state, for a step.
    pub fn get(&mut self, slot: usize) -> PyResult<&mut S> {
        self.slots[slot].as_mut().ok_or_else(|| crate::errors::input_error("step of a slot without an env"))
    }

    /// The slot's state for a reset with `seed`, its env made first (the first env
    /// `prepare` made, else the stepper's `make()`) and handed to `drive` if it has none.
    /// A slot without an env cannot continue unseeded.
    pub fn for_reset(
        &mut self,
        py: Python<'_>,
        slot: usize,
        seed: Option<u64>,
        drive: impl FnOnce(Py<PyAny>) -> PyResult<S>,
    ) -> PyResult<&mut S> {
        if self.slots[slot].is_none() {
            let Some(_) = seed else { return Err(crate::errors::input_error(rollway_core::block::NO_ENV_TO_CONTINUE)) };
            let env = match self.first.take() {
                Some(env) => env,
                None => self.stepper.bind(py).call_method0("make")?.unbind(),
            };
            self.slots[slot] = Some(drive(env)?);
        }
        Ok(self.slots[slot].as_mut().expect("just made"))
    }

    /// A reset's info, as the package records a Python env's.
    pub fn info(&self, info: &Bound<'_, PyAny>) -> PyResult<Info> {
        let text: String = self.dump_info.bind(info.py()).call1((info,))?.extract()?;
        serde_json::from_str(&text).map_err(|e| crate::errors::input_error(format!("info: {e}")))
    }

    /// Closes the slot's env; the slot's next reset makes another.
    pub fn fail(&mut self, py: Python<'_>, slot: usize) {
        if let Some(s) = self.slots[slot].take() {
            let _ = s.env().bind(py).call_method0("close");
        }
    }

    /// Closes every env.
    pub fn close(&mut self, py: Python<'_>) {
        for slot in 0..self.slots.len() {
            self.fail(py, slot);
        }
        if let Some(env) = self.first.take() {
            let _ = env.bind(py).call_method0("close");
        }
    }
}

/// Each slot's steps into its episode, and which infos a block hands back: all of
/// them, or (`InfoNeed::Final`) a step's that ends the episode, by the env or at the
/// run's own cut (see [`BlockOptions::cut`](rollway_core::BlockOptions::cut)). Every
/// [`SlotEnvs`] counts through it.
pub(crate) struct Episodes {
    infos: InfoNeed,
    cut: Option<u64>,
    lengths: Vec<u64>,
}

impl Episodes {
    /// `n` slots, wanting `infos`, cut at `cut` steps.
    pub fn new(n: usize, infos: InfoNeed, cut: Option<u64>) -> Episodes {
        Episodes { infos, cut, lengths: vec![0; n] }
    }

    /// A reset started the slot's episode; whether the reset's info is wanted.
    pub fn started(&mut self, slot: usize) -> bool {
        self.lengths[slot] = 0;
        self.infos == InfoNeed::All
    }

    /// A step of the slot's episode; its length now.
    pub fn stepped(&mut self, slot: usize) -> u64 {
        self.lengths[slot] += 1;
        self.lengths[slot]
    }

    /// Whether the slot's last step's info is wanted, `ended` if the env ended the episode.
    pub fn info_wanted(&self, slot: usize, ended: bool) -> bool {
        let ends = ended || self.cut.is_some_and(|c| self.lengths[slot] >= c);
        self.infos == InfoNeed::All || (self.infos == InfoNeed::Final && ends)
    }
}

/// A spec's observation and action row layouts.
pub(crate) fn layouts(spec: &SpecJson) -> PyResult<(Layout, Layout)> {
    let layout = |json: &str| Space::from_json(json).map(|s| Layout::of(&s)).map_err(|e| crate::errors::input_error(format!("space: {e}")));
    Ok((layout(&spec.observation_space)?, layout(&spec.action_space)?))
}
