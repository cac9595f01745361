//! Built-in agents. Each agent is one file plus one line in [`REGISTRY`].
//!
//! ```
//! use rollway_core::Params;
//!
//! let env = rollway_envs::make("Faulty-v0", &Params::new()).unwrap();
//! let agent = rollway_agents::make("random", env.spec(), &Params::new()).unwrap();
//! # drop(agent);
//! ```
#![deny(missing_docs)]

use rollway_core::{Agent, AgentEntry, EnvSpec, Error, Params, Result};

pub mod acrobot_pump;
pub mod cartpole_balance;
pub mod constant;
pub mod miner;
pub mod faulty;
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
