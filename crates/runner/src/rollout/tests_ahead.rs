//! Parts that run ahead (`Mode::Async`): the same fragments and the same recording as
//! lockstep, a policy call per part, and errors that end the rollout with every part back.

use std::sync::Arc;

use rollway_core::EnvFactory;

use super::tests::{agent, envs, probe_weighted, weight};
use super::tests_record::Kept;
use super::*;

/// Everything a fragment holds but its timings.
type Held = (Vec<u8>, Vec<u8>, Vec<f32>, Vec<bool>, Vec<bool>, Vec<bool>, Vec<u64>, Vec<u64>, Vec<f32>, Vec<Finished>, Vec<u8>);

fn held(f: Fragment) -> (Held, Vec<Extra>, u64) {
    let h = (f.obs, f.actions, f.rewards, f.terminated, f.truncated, f.first, f.episode, f.version, f.state, f.finished, f.final_obs);
    (h, f.extras, f.stats.env_faults)
}

/// The fragments; the recorded episodes (id, worker, steps); each fragment's policy calls.
type Made = (Vec<(Held, Vec<Extra>, u64)>, Vec<(u64, usize, Option<Box<rollway_core::Trajectory>>)>, Vec<u64>);

/// Five fragments of a recording rollout of `env` (7 envs over 3 workers: parts of 3, 2
/// and 2) with the probe policy, publishing a version after each; and what it recorded.
fn made(env: &Arc<dyn EnvFactory>, mode: Mode) -> Made {
    let (policy, _, cell) = probe_weighted(None);
    let kept = Kept::default();
    let cfg = RolloutConfig { envs: 7, workers: 3, steps: 24, seed: 5, mode, ..Default::default() };
    let mut r = Rollout::recording(cfg, env.clone(), policy, Some(Box::new(kept.clone()))).unwrap();
    let (mut frags, mut batches) = (Vec::new(), Vec::new());
    for v in 0..5 {
        let f = r.collect().unwrap();
        batches.push(f.stats.batches);
        frags.push(held(f));
        r.publish(Some(weight(&cell, v as f32 + 1.0)));
    }
    drop(r);
    let eps = kept.0.lock().unwrap().iter().map(|e| (e.run_index, e.worker, e.trajectory.clone())).collect();
    (frags, eps, batches)
}

#[test]
fn parts_that_run_ahead_make_the_same_fragments_and_recording_as_lockstep() {
    // Faults (an error every 11th step of an instance, a panic every 23rd) and short
    // episodes: resets, retries and restarts land on different steps in each part.
    let env = envs("Faulty-v0", &[("length", "6"), ("error_every", "11"), ("panic_every", "23")]);
    let (sync, sync_eps, sync_batches) = made(&env, Mode::Sync);
    let (ahead, ahead_eps, ahead_batches) = made(&env, Mode::Async);
    assert!(sync.iter().map(|f| f.2).sum::<u64>() > 5, "faults happened");
    assert!(sync.iter().any(|f| f.0 .9.iter().any(|e| e.env != f.0 .9[0].env)), "episodes ended in several slots");
    for (k, (a, b)) in sync.iter().zip(&ahead).enumerate() {
        assert!(a == b, "fragment {k} differs");
    }
    assert!(sync_eps.len() >= 20, "{} episodes recorded", sync_eps.len());
    assert!(sync_eps == ahead_eps, "the same episodes, in the same order");
    assert_eq!(sync_batches, vec![24; 5], "lockstep: one policy call a step");
    assert_eq!(ahead_batches, vec![24 * 3; 5], "ahead: one call per part a step");
}

#[test]
fn a_rollout_collecting_ahead_of_the_learner_runs_its_parts_ahead_too() {
    let env = envs("CartPole-v1", &[]);
    let frags = |mode| {
        let cfg = RolloutConfig { envs: 6, workers: 2, steps: 32, seed: 2, max_policy_lag: 2, mode, ..Default::default() };
        let mut r = Rollout::start(cfg, env.clone(), agent("random", &env)).unwrap();
        (0..4).map(|_| held(r.collect().unwrap())).collect::<Vec<_>>()
    };
    assert!(frags(Mode::Sync) == frags(Mode::Async));
}

#[test]
fn errors_end_a_rollout_that_runs_ahead_with_every_part_back() {
    let env = envs("CartPole-v1", &[]);
    // The policy breaks on its 7th call: some parts are then stepping on their threads.
    let (p, _, _) = probe_weighted(Some(7));
    let cfg = RolloutConfig { envs: 6, workers: 3, steps: 4, mode: Mode::Async, ..Default::default() };
    let mut r = Rollout::start(cfg, env.clone(), p).unwrap();
    let e = r.collect().unwrap_err();
    assert!(e.to_string().contains("broke on purpose"), "{e}");
    drop(r);
    let broken = envs("Faulty-v0", &[("error_every", "1")]);
    let cfg = RolloutConfig { envs: 4, workers: 2, steps: 10, max_restarts: 2, mode: Mode::Async, ..Default::default() };
    let mut r = Rollout::start(cfg, broken.clone(), agent("random", &broken)).unwrap();
    let e = r.collect().unwrap_err();
    assert!(matches!(e, Error::EnvGaveUp { failures: 3, .. }), "{e}");
}
