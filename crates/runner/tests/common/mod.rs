//! A generator over the built-in registries, as most tests here run one.

use std::sync::Arc;

use rollway_runner::{Generator, Result, RunConfig};

/// A generator running `cfg`'s env and agent (with their parameters) from the built-in registries.
pub fn registered(cfg: RunConfig) -> Result<Generator> {
    let envs = Arc::new(rollway_envs::Registered::new(&cfg.env, cfg.env_params.clone()));
    let agents = Arc::new(rollway_agents::Registered::new(&cfg.agent, cfg.agent_params.clone()));
    Generator::new(cfg, envs, agents, vec![])
}

/// A run of `Faulty-v0` (2 workers × 4 envs, seed 3, no restart backoff) with `agent`:
/// what the fault-injection tests vary from.
#[allow(dead_code)] // not every test binary injects faults
pub fn faulty(env_params: rollway_core::Params, agent: &str, agent_params: rollway_core::Params, episodes: u64) -> RunConfig {
    RunConfig {
        env: "Faulty-v0".into(),
        env_params,
        agent: agent.into(),
        agent_params,
        workers: 2,
        envs_per_worker: 4,
        target: rollway_runner::Target::Episodes(episodes),
        seed: 3,
        restart_backoff: std::time::Duration::ZERO,
        ..Default::default()
    }
}
