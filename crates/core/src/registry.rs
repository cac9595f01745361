//! Registry entry types: an env, agent or filter is one file plus one line in a
//! registry table (see `rollway-envs` and `rollway-agents`). A registry is one
//! source of envs and agents for a run; see [`crate::factory`] for the seam.

use crate::{Agent, Env, EnvSpec, Params, Result};

/// A registered env.
pub struct EnvEntry {
    /// Id used on the command line, e.g. `CartPole-v1`.
    pub id: &'static str,
    /// One line for `rollway envs`.
    pub summary: &'static str,
    /// Accepted parameters: (name, help).
    pub params: &'static [(&'static str, &'static str)],
    /// Builds the env (without the time limit; the registry adds it from the spec).
    pub make: fn(&Params) -> Result<Box<dyn Env>>,
}

/// A registered agent.
pub struct AgentEntry {
    /// Name used on the command line, e.g. `random`.
    pub name: &'static str,
    /// One line for `rollway agents`.
    pub summary: &'static str,
    /// Env ids this agent is made for; empty means any env.
    pub envs: &'static [&'static str],
    /// Accepted parameters: (name, help).
    pub params: &'static [(&'static str, &'static str)],
    /// Builds the agent for an env's spec.
    pub make: fn(&EnvSpec, &Params) -> Result<Box<dyn Agent>>,
}
