//! The `Env` trait (Gymnasium 1.x semantics) and the `TimeLimit` wrapper.

use crate::layout::{RowMut, RowRef};
use crate::{Info, Result, Space};

/// What an env is: its id, spaces and metadata (Gymnasium's `EnvSpec` + `metadata`).
#[derive(Clone, Debug, PartialEq)]
pub struct EnvSpec {
    /// Registered id, e.g. `CartPole-v1`.
    pub id: String,
    /// Space of observations.
    pub observation_space: Space,
    /// Space of actions.
    pub action_space: Space,
    /// Truncate episodes after this many steps (Gymnasium's `TimeLimit`).
    pub max_episode_steps: Option<u64>,
    /// Frames per second for video (`metadata["render_fps"]`).
    pub render_fps: Option<u32>,
    /// Return at which the task counts as solved, if any.
    pub reward_threshold: Option<f64>,
    /// Gymnasium's own `EnvSpec.to_json()` of an env Gymnasium made (a `gym:` id, a Python
    /// factory's env, a Minari dataset's `env_spec`), when it has one that serializes: the id,
    /// entry point, kwargs and wrappers that Minari's `recover_environment` rebuilds it from.
    pub gymnasium_spec: Option<String>,
    /// A multi-agent env's possible agents (PettingZoo's `possible_agents`), in the order
    /// of the rows its observations and actions stack them in; `None` for one agent.
    pub agents: Option<Vec<String>>,
}

/// The result of one step, without the observation (written into the caller's row).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepOutcome {
    /// Reward for the transition.
    pub reward: f64,
    /// The MDP reached a terminal state.
    pub terminated: bool,
    /// The episode was cut off (time limit or `max_steps`).
    pub truncated: bool,
}

/// An environment with Gymnasium 1.x semantics, writing observations into caller-owned rows.
///
/// `reset(seed, options)` returns the first observation (into `obs`); `step(action)`
/// returns `(reward, terminated, truncated)` and writes the next observation. The
/// info dict of the latest reset/step is available from [`Env::info`]: it is built
/// only when somebody asks (filters read the last one, recorders may read all),
/// because most runs never look at per-step infos and building maps costs time.
///
/// A seeded `reset(Some(s), ..)` must fully determine the episode given the actions;
/// `reset(None, ..)` continues the env's own random stream.
pub trait Env: Send {
    /// The env's spec.
    fn spec(&self) -> &EnvSpec;
    /// Starts an episode and writes the first observation.
    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()>;
    /// Applies `action`, writes the next observation, returns reward and flags.
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome>;
    /// The info of the latest reset or step.
    fn info(&self) -> Info {
        Info::new()
    }
}

impl Env for Box<dyn Env> {
    fn spec(&self) -> &EnvSpec {
        (**self).spec()
    }
    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        (**self).reset(seed, options, obs)
    }
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        (**self).step(action, obs)
    }
    fn info(&self) -> Info {
        (**self).info()
    }
}

/// Gymnasium's `TimeLimit`: sets `truncated` once `max_episode_steps` steps have been taken.
pub struct TimeLimit<E> {
    inner: E,
    max: u64,
    elapsed: u64,
}

impl<E: Env> TimeLimit<E> {
    /// Wraps `inner`, truncating after `max` steps.
    pub fn new(inner: E, max: u64) -> Self {
        TimeLimit { inner, max, elapsed: 0 }
    }

    /// The wrapped env.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The wrapped env, mutable (tests set physical state through it).
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }
}

impl<E: Env> Env for TimeLimit<E> {
    fn spec(&self) -> &EnvSpec {
        self.inner.spec()
    }
    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        self.elapsed = 0;
        self.inner.reset(seed, options, obs)
    }
    #[inline]
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        let mut out = self.inner.step(action, obs)?;
        self.elapsed += 1;
        if self.elapsed >= self.max {
            out.truncated = true;
        }
        Ok(out)
    }
    fn info(&self) -> Info {
        self.inner.info()
    }
}
