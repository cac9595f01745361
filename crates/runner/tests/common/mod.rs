//! A generator over the built-in registries, as most tests here run one.

use std::sync::Arc;

use rollway_runner::{Generator, Result, RunConfig};

/// A generator running `cfg`'s env and agent (with their parameters) from the built-in registries.
pub fn registered(cfg: RunConfig) -> Result<Generator> {
    let envs = Arc::new(rollway_envs::Registered::new(&cfg.env, cfg.env_params.clone()));
    let agents = Arc::new(rollway_agents::Registered::new(&cfg.agent, cfg.agent_params.clone()));
    Generator::new(cfg, envs, agents, vec![])
}
