//! One block's envs as both hosts step them, slot by slot (the env processes,
//! `host.rs`, and the in-process host, `inline_host.rs`): the [`SlotEnvs`] trait.
//! Its implementations are Python envs (`pyenvs.rs`) and `atari:` games stepped by
//! rollway (`atari.rs`); `host::slot_envs` picks one for a target.

use pyo3::prelude::*;
use rollway_core::{Info, Layout, StepOutcome};

/// One block's envs as both hosts step them, slot by slot: Python envs
/// (`pyenvs::PyEnvs`), or `atari:` envs whose steps are rollway's (`atari::AtariEnvs`).
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
}
