//! Issue 35: an agent's extras (`Agent::act_with_extras`: a network's values) are
//! recorded by `rollway run` row by row into the episode each row belongs to,
//! whatever the batch bounds, workers and mode split the batches into.

use std::sync::Arc;

use rollway_core::{ActBatch, Agent, AgentFactory, EnvSpec, Params, Result, StepColumn};
use rollway_runner::{EpisodeResult, Generator, Mode, RunConfig, Target};

/// Pushes left, and reports as extras each row's first observation value and its
/// episode stream's next draw, so a row recorded in the wrong episode or step shows.
struct Echo;

impl Agent for Echo {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        self.act_with_extras(batch, &mut Vec::new())
    }

    fn act_with_extras(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<StepColumn>) -> Result<()> {
        let mut x0 = StepColumn { name: "x0".into(), shape: vec![], values: Vec::new() };
        let mut pair = StepColumn { name: "pair".into(), shape: vec![2], values: Vec::new() };
        batch.for_each_row(|mut row| {
            let x = row.obs.leaf::<f32>(0)[0];
            x0.values.push(x);
            pair.values.extend([x * 2.0, f32::from(u8::from(row.first))]);
            row.action.set_discrete(0, 0);
            Ok(())
        })?;
        *extras = vec![x0, pair];
        Ok(())
    }
}

struct Echoes;

impl AgentFactory for Echoes {
    fn name(&self) -> &str {
        "echo"
    }
    fn make(&self, _spec: &EnvSpec) -> Result<Box<dyn Agent>> {
        Ok(Box::new(Echo))
    }
}

fn run(workers: usize, envs: usize, mode: Mode, batch: (usize, usize)) -> Vec<EpisodeResult> {
    let cfg = RunConfig {
        env: "CartPole-v1".into(),
        agent: "echo".into(),
        workers,
        envs_per_worker: envs,
        mode,
        min_batch: batch.0,
        max_batch: batch.1,
        record_steps: true,
        target: Target::Episodes(24),
        ..Default::default()
    };
    let envs = Arc::new(rollway_envs::Registered::new("CartPole-v1", Params::new()));
    let mut eps: Vec<EpisodeResult> = Vec::new();
    Generator::new(cfg, envs, Arc::new(Echoes), vec![]).unwrap().run(&mut eps).unwrap();
    eps
}

#[test]
fn extras_land_in_their_own_episode_and_step_however_batches_are_cut() {
    for (workers, envs, mode, batch) in [(1, 8, Mode::Sync, (1, 0)), (2, 5, Mode::Async, (3, 3)), (2, 4, Mode::Sync, (1, 3))] {
        for e in run(workers, envs, mode, batch) {
            let t = e.trajectory.as_ref().unwrap();
            let n = e.length as usize;
            let obs0: Vec<f32> = (0..n).map(|k| f32::from_ne_bytes(t.obs[k * 16..k * 16 + 4].try_into().unwrap())).collect();
            let names: Vec<&str> = t.extras.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["x0", "pair"]);
            assert_eq!(t.extras[0].values, obs0, "episode {}: x0 is the observation acted on", e.run_index);
            let pair: Vec<f32> = obs0.iter().enumerate().flat_map(|(k, x)| [x * 2.0, if k == 0 { 1.0 } else { 0.0 }]).collect();
            assert_eq!((t.extras[1].shape.as_slice(), &t.extras[1].values), (&[2usize][..], &pair), "episode {}", e.run_index);
        }
    }
}
