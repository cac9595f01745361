//! Built-in agents. Each agent is one file plus one line in [`REGISTRY`].
//!
//! ```
//! use rollway_core::{AgentFactory, Params};
//!
//! let env = rollway_envs::make("Faulty-v0", &Params::new()).unwrap();
//! let agent = rollway_agents::make("random", env.spec(), &Params::new()).unwrap();
//! # drop(agent);
//! // The same, as the factory a run builds (and rebuilds) its agent with.
//! let factory = rollway_agents::Registered::new("random", Params::new());
//! let agent = factory.make(env.spec()).unwrap();
//! # drop(agent);
//! ```
#![forbid(unsafe_code)]

use rollway_core::{Agent, AgentEntry, AgentFactory, EnvSpec, Error, Params, Result};

pub mod acrobot_pump;
pub mod cartpole_balance;
pub mod constant;
pub mod faulty;
pub mod miner;
pub mod mountaincar_energy;
pub mod pendulum_swingup;
pub mod random;
#[cfg(test)]
mod testutil;

/// Every built-in agent. Adding an agent: write its file, add its `ENTRY` here.
pub static REGISTRY: &[&AgentEntry] = &[
    &random::ENTRY,
    &constant::ENTRY,
    &cartpole_balance::ENTRY,
    &mountaincar_energy::ENTRY,
    &acrobot_pump::ENTRY,
    &pendulum_swingup::ENTRY,
    &faulty::ENTRY,
    &miner::ENTRY,
];

/// Looks up a registered agent.
pub fn find(name: &str) -> Result<&'static AgentEntry> {
    REGISTRY.iter().copied().find(|e| e.name == name).ok_or_else(|| Error::Unknown {
        what: "agent",
        name: name.into(),
        known: REGISTRY.iter().map(|e| e.name).collect::<Vec<_>>().join(", "),
    })
}

/// Builds agent `name` for an env with `spec`.
pub fn make(name: &str, spec: &EnvSpec, params: &Params) -> Result<Box<dyn Agent>> {
    let entry = find(name)?;
    if !entry.envs.is_empty() && !entry.envs.contains(&spec.id.as_str()) {
        return Err(Error::Param {
            name: "agent".into(),
            message: format!("agent `{name}` is made for {}, not {}", entry.envs.join(", "), spec.id),
        });
    }
    (entry.make)(spec, params)
}

/// A registered agent with its parameters, as the [`AgentFactory`] a run builds
/// its agent with: every agent is what [`make`] builds from `name` and `params`.
#[derive(Clone, Debug, PartialEq)]
pub struct Registered {
    /// Registered name, e.g. `random`; also the factory's name.
    pub name: String,
    /// Agent parameters.
    pub params: Params,
}

impl Registered {
    /// Agent `name` with `params` (looked up when an agent is built).
    pub fn new(name: impl Into<String>, params: Params) -> Registered {
        Registered { name: name.into(), params }
    }
}

impl AgentFactory for Registered {
    fn name(&self) -> &str {
        &self.name
    }

    fn make(&self, spec: &EnvSpec) -> Result<Box<dyn Agent>> {
        make(&self.name, spec, &self.params)
    }
}
