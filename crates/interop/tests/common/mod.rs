//! Datasets for the interop tests (recorded, or sampled from spaces) and the check
//! that two datasets hold the same episodes.
#![allow(dead_code)] // each test file uses its own share of these

use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use rollway_core::{EnvSpec, EpisodeResult, Layout, Params, Rows, Status, Trajectory};
use rollway_runner::{Generator, RunConfig, Target};
use rollway_store::{Dataset, DatasetWriter, WriterConfig};

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

/// Writes episodes of sampled rows with these `lengths` into a new dataset at `dir`
/// (seeds 40, 41…, rewards `0.5 k - 1`, the first one terminated unless step-less, the
/// rest truncated),
/// and, when `given_up`, one given-up episode after them (no data).
pub fn write_sampled(dir: &Path, spec: &EnvSpec, lengths: &[u64], seed: u64, given_up: bool) {
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let w = DatasetWriter::create(dir, spec, "sampler", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    let episode = |index: u64, length: u64, status, trajectory: Option<Trajectory>, error: Option<String>| EpisodeResult {
        run_index: index,
        seed: 40 + index,
        length,
        ret: trajectory.as_ref().map_or(0.0, |t| t.rewards.iter().sum()),
        status,
        labels: vec![],
        info: Default::default(),
        worker: 0,
        attempt: 1,
        wall_ms: 0.0,
        error,
        trajectory: trajectory.map(Box::new),
    };
    for (i, &len) in lengths.iter().enumerate() {
        let (mut o, mut a) = (Rows::new(ol.row_bytes(), len as usize + 1), Rows::new(al.row_bytes(), len as usize));
        (0..=len as usize).for_each(|r| ol.sample_row(&mut rng, o.row_mut(r)));
        (0..len as usize).for_each(|r| al.sample_row(&mut rng, a.row_mut(r)));
        let t = Trajectory {
            obs: o.bytes().to_vec(),
            actions: a.bytes().to_vec(),
            rewards: (0..len).map(|x| x as f64 * 0.5 - 1.0).collect(),
            terminations: (0..len).map(|x| x + 1 == len && i == 0).collect(),
            truncations: (0..len).map(|x| x + 1 == len && i != 0).collect(),
            infos: vec![],
            ..Default::default()
        };
        // A step-less episode has no flag to say it terminated; neither format keeps one.
        let status = if i == 0 && len > 0 { Status::Terminated } else { Status::Truncated };
        w.write(episode(i as u64, len, status, Some(t), None)).unwrap();
    }
    if given_up {
        w.write(episode(lengths.len() as u64, 0, Status::GivenUp, None, Some("boom".into()))).unwrap();
    }
    w.finish().unwrap();
}

/// Every episode of `a` has the same values in `b` (ids renumbered from 0 in id order).
pub fn assert_same(a: &Dataset, b: &Dataset, drop_info_keys: &[&str]) {
    let mut ids: Vec<u64> = a.select(|_| true).map(|e| e.episode_id).collect();
    ids.sort_unstable();
    assert_eq!(b.select(|_| true).count(), ids.len());
    assert_eq!(a.metadata().env.observation_space, b.metadata().env.observation_space);
    assert_eq!(a.metadata().env.action_space, b.metadata().env.action_space);
    for (k, &id) in ids.iter().enumerate() {
        let (x, y) = (a.read_episode(id).unwrap(), b.read_episode(k as u64).unwrap());
        assert_eq!(x.observations, y.observations, "episode {id} observations");
        assert_eq!(x.actions, y.actions, "episode {id} actions");
        assert_eq!(x.rewards, y.rewards, "episode {id}");
        assert_eq!(x.terminations, y.terminations, "episode {id}");
        assert_eq!(x.truncations, y.truncations, "episode {id}");
        assert_eq!(
            (x.entry.seed, x.entry.length, x.entry.status, x.entry.ret),
            (y.entry.seed, y.entry.length, y.entry.status, y.entry.ret),
            "episode {id}"
        );
        match (&x.infos, &y.infos) {
            (Some(xi), Some(yi)) => {
                let mut xi = xi.clone();
                for i in &mut xi {
                    for k in drop_info_keys {
                        i.0.remove(*k);
                    }
                }
                assert_eq!(&xi, yi, "episode {id} infos");
            }
            (None, None) => {}
            other => panic!("episode {id}: infos {other:?}"),
        }
    }
}
