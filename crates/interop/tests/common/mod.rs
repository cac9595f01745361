//! A recorded dataset for the interop tests.

use std::path::Path;
use std::sync::Arc;

use rollway_core::{EpisodeResult, Params};
use rollway_runner::{Generator, RunConfig, Target};
use rollway_store::{DatasetWriter, WriterConfig};

/// Records `n` episodes of `env` (with `params`) played by `agent` into `dir`: run
/// seed `seed`, a shard every `shard_episodes` episodes, infos when `infos`.
#[allow(clippy::too_many_arguments)]
pub fn record(
    dir: &Path,
    env: &str,
    params: &str,
    agent: &str,
    n: u64,
    max_steps: Option<u64>,
    infos: bool,
    seed: u64,
    shard_episodes: usize,
) {
    let cfg = RunConfig {
        env: env.into(),
        env_params: Params::parse(params).unwrap(),
        agent: agent.into(),
        target: Target::Episodes(n),
        max_steps,
        seed,
        workers: 1,
        envs_per_worker: 4,
        record_steps: true,
        record_infos: infos,
        ..Default::default()
    };
    let envs = Arc::new(rollway_envs::Registered::new(env, cfg.env_params.clone()));
    let g = Generator::new(cfg, envs, Arc::new(rollway_agents::Registered::new(agent, Params::new())), vec![]).unwrap();
    let mut eps: Vec<EpisodeResult> = Vec::new();
    g.run(&mut eps).unwrap();
    let w = DatasetWriter::create(
        dir,
        g.spec(),
        agent,
        seed,
        serde_json::json!({"env_params": {}}),
        WriterConfig { record_infos: infos, max_buffer_episodes: Some(shard_episodes), ..Default::default() },
    )
    .unwrap();
    for e in eps {
        w.write(e).unwrap();
    }
    w.finish().unwrap();
}
