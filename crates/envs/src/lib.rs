//! Built-in environments. Each env is one file plus one line in [`REGISTRY`].
//!
//! The classic-control envs reproduce Gymnasium 1.x exactly (dynamics, rewards,
//! termination and time limits), checked against golden vectors produced by the
//! real Gymnasium package (`tests/golden/`, made by `tests/golden/make_golden.py`).
//! Their random stream is numpy's ([`np_random`]), so `reset(seed=s)` starts from
//! the same state as `gymnasium.make(id).reset(seed=s)` (`tests/seeding.rs`).
//!
//! ```
//! use rollway_core::{Layout, Params, Rows};
//!
//! let mut env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
//! let spec = env.spec().clone();
//! let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
//! let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
//! env.reset(Some(0), None, rollway_core::RowMut::new(&ol, obs.row_mut(0))).unwrap();
//! act.row_mut(0).copy_from_slice(&1i64.to_ne_bytes());
//! let out = env.step(rollway_core::RowRef::new(&al, act.row(0)), rollway_core::RowMut::new(&ol, obs.row_mut(0))).unwrap();
//! assert_eq!(out.reward, 1.0);
//! ```
//!
//! A run gets its envs through [`Registered`], the registry as an
//! [`EnvFactory`].
#![forbid(unsafe_code)]

use rollway_core::{Env, EnvEntry, EnvFactory, Error, Params, Result, TimeLimit};

pub mod acrobot;
pub mod atari;
pub mod cartpole;
mod classic;
pub mod faulty;
pub mod mine;
pub mod mountain_car;
pub mod mujoco;
pub mod np_random;
pub mod pendulum;

/// Every built-in env. Adding an env: write its file, add its `ENTRY` here.
pub static REGISTRY: &[&EnvEntry] =
    &[&cartpole::ENTRY, &mountain_car::ENTRY, &acrobot::ENTRY, &pendulum::ENTRY, &faulty::ENTRY, &mine::ENTRY];

/// Looks up a registered env.
pub fn find(id: &str) -> Result<&'static EnvEntry> {
    REGISTRY.iter().copied().find(|e| e.id == id).ok_or_else(|| Error::Unknown {
        what: "env",
        name: id.into(),
        // The usual slip: a Gymnasium id without its prefix.
        known: format!(
            "{}; a Gymnasium env is named `gym:{id}`, a Python factory `module:callable`",
            REGISTRY.iter().map(|e| e.id).collect::<Vec<_>>().join(", ")
        ),
    })
}

/// Builds env `id` with `params`, wrapped in a `TimeLimit` when its spec has one.
pub fn make(id: &str, params: &Params) -> Result<Box<dyn Env>> {
    let env = (find(id)?.make)(params)?;
    Ok(match env.spec().max_episode_steps {
        Some(max) => Box::new(TimeLimit::new(env, max)),
        None => env,
    })
}

/// A registered env with its parameters, as the [`EnvFactory`] a run builds its
/// envs with: every env is what [`make`] builds from `id` and `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct Registered {
    /// Registered id, e.g. `CartPole-v1`; also the factory's name.
    pub id: String,
    /// Env parameters.
    pub params: Params,
}

impl Registered {
    /// Env `id` with `params` (looked up when an env is built).
    pub fn new(id: impl Into<String>, params: Params) -> Registered {
        Registered { id: id.into(), params }
    }
}

impl EnvFactory for Registered {
    fn name(&self) -> &str {
        &self.id
    }

    fn make(&self) -> Result<Box<dyn Env>> {
        make(&self.id, &self.params)
    }
}
