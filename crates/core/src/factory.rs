//! Env and agent factories: how a run gets its envs and its agent without knowing
//! where they come from.
//!
//! The generator builds an env for every env slot, rebuilds one after each env
//! failure, and rebuilds its agent after each agent failure; all it needs for that
//! is "make me another one". The built-in registries (`rollway_envs::Registered`,
//! `rollway_agents::Registered`) are one implementation; an env host in other
//! processes, or a policy living in Python, is another. Keeping this seam in core
//! means the runner depends on neither.
//!
//! A factory is shared by every worker thread (`Send + Sync`) and is called only
//! when something is built, never per step, so a `dyn` call costs nothing that
//! shows.
//!
//! ```
//! use rollway_core::{Agent, AgentFactory, ActBatch, EnvSpec, Result};
//!
//! /// Always picks action 0 (for a `Discrete` action space).
//! struct Zero;
//!
//! impl Agent for Zero {
//!     fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
//!         batch.for_each_row(|mut row| Ok(row.action.set_discrete(0, 0)))
//!     }
//! }
//!
//! struct ZeroFactory;
//!
//! impl AgentFactory for ZeroFactory {
//!     fn name(&self) -> &str {
//!         "zero"
//!     }
//!     fn make(&self, _spec: &EnvSpec) -> Result<Box<dyn Agent>> {
//!         Ok(Box::new(Zero))
//!     }
//! }
//! # let _ = ZeroFactory.name();
//! ```

use crate::{Agent, BlockOptions, Env, EnvBlock, EnvSpec, Result};

/// Builds the envs of a run: one per env slot, and a fresh one after each failure.
pub trait EnvFactory: Send + Sync {
    /// The name runs record for these envs and that a later run resolves again
    /// (the CLI's `--env`, e.g. `CartPole-v1`). A run's `RunConfig::env` must equal it.
    fn name(&self) -> &str;

    /// A new env, wrappers (such as the time limit) applied, ready for a seeded
    /// `reset`. Called from worker threads, concurrently; errors and panics count
    /// as a failed attempt of the episode that needed the env.
    fn make(&self) -> Result<Box<dyn Env>>;

    /// The spec every env [`EnvFactory::make`] builds has. The default builds one
    /// env and reads it, which also checks the parameters before a run starts; a
    /// host whose envs are costly to start (a process, a simulator) may answer
    /// from what it already knows, and then should check what it can here.
    fn spec(&self) -> Result<EnvSpec> {
        Ok(self.make()?.spec().clone())
    }

    /// A block of `n` env slots stepped together, for envs that are costly to
    /// reach one at a time (see [`crate::block`]). `None` (the default): the worker
    /// keeps `n` envs from [`EnvFactory::make`] and steps them one by one.
    /// Building a block must not fail; a host that cannot start reports that as
    /// failed ops, which the run counts and retries like any env failure.
    fn block(&self, _n: usize, _options: BlockOptions) -> Option<Box<dyn EnvBlock>> {
        None
    }

    /// Whether the envs compute in the worker's own thread (the default). A host
    /// whose blocks step in processes of their own answers `false`: its worker
    /// threads mostly wait, and the run then leaves the cores to those processes
    /// instead of polling for messages between rounds.
    fn steps_in_worker(&self) -> bool {
        true
    }

    /// The run is ending but some worker is still inside a round (an env that
    /// hangs): make its blocks' rounds fail now, e.g. by killing the processes they
    /// wait on. Called once, after the workers had a moment to finish by
    /// themselves; the default does nothing (an env in the worker's own thread
    /// cannot be interrupted).
    fn interrupt(&self) {}
}

/// Builds a run's agent: once before the run to check it fits the env, once to
/// start, and again after each failed `act`.
pub trait AgentFactory: Send + Sync {
    /// The name runs record for the agent (the CLI's `--agent`, e.g. `random`).
    /// A run's `RunConfig::agent` must equal it.
    fn name(&self) -> &str;

    /// A new agent for envs with `spec`; an error says why it does not fit.
    fn make(&self, spec: &EnvSpec) -> Result<Box<dyn Agent>>;
}
