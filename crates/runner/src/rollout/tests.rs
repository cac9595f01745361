//! The rollout's guarantees, each checked: fragment conventions, determinism and
//! identity with the generator, versions and lag, recurrent state, faults.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rollway_core::{ActBatch, AgentFactory, EnvFactory, Params};

use super::*;
use crate::{Generator, RunConfig, Target};

pub(super) fn envs(id: &str, params: &[(&str, &str)]) -> Arc<dyn EnvFactory> {
    let p = Params(params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    Arc::new(rollway_envs::Registered::new(id, p))
}

pub(super) fn agent(name: &str, env: &Arc<dyn EnvFactory>) -> Box<dyn Policy> {
    let spec = env.spec().unwrap();
    Box::new(AgentPolicy(rollway_agents::Registered::new(name, Params::default()).make(&spec).unwrap()))
}

fn start(cfg: RolloutConfig, env: &Arc<dyn EnvFactory>, policy: Box<dyn Policy>) -> Rollout {
    Rollout::start(cfg, env.clone(), policy).unwrap()
}

/// Acts 0, counts its calls, and reports as extras the weight it acts with and,
/// per env, how many steps it has seen of the episode (kept as recurrent memory).
struct Probe {
    calls: Arc<AtomicUsize>,
    weight: Arc<std::sync::atomic::AtomicU32>,
    fail_at: Option<usize>,
}

impl Policy for Probe {
    fn act(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<Extra>) -> rollway_core::Result<()> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.fail_at == Some(call) {
            return Err(rollway_core::Error::Agent { agent: "probe".into(), message: "broke on purpose".into() });
        }
        let (mut seen, n) = (Vec::new(), batch.len());
        let w = f32::from_bits(self.weight.load(Ordering::SeqCst));
        batch.for_each_row(|mut row| {
            row.action.set_discrete(0, 0);
            let c = row.memory.first().copied().unwrap_or(0.0) + 1.0;
            *row.memory = vec![c];
            seen.push(c);
            Ok(())
        })?;
        *extras = vec![
            Extra { name: "weight".into(), shape: vec![], values: vec![w; n] },
            Extra { name: "seen".into(), shape: vec![1], values: seen },
        ];
        Ok(())
    }
}

fn probe(fail_at: Option<usize>) -> (Box<dyn Policy>, Arc<AtomicUsize>) {
    let (p, calls, _) = probe_weighted(fail_at);
    (p, calls)
}

pub(super) fn probe_weighted(fail_at: Option<usize>) -> (Box<dyn Policy>, Arc<AtomicUsize>, Arc<std::sync::atomic::AtomicU32>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let weight = Arc::new(std::sync::atomic::AtomicU32::new(0));
    (Box::new(Probe { calls: calls.clone(), weight: weight.clone(), fail_at }), calls, weight)
}

/// An update that sets the probe's weight: run by the collecting thread between
/// batches, the only writer of the cell the probe reads its weight from.
pub(super) fn weight(cell: &Arc<std::sync::atomic::AtomicU32>, w: f32) -> Update {
    let cell = cell.clone();
    Box::new(move |_: &mut dyn Policy| {
        cell.store(w.to_bits(), Ordering::SeqCst);
        Ok(())
    })
}

#[test]
fn fragments_follow_the_conventions() {
    let env = envs("CartPole-v1", &[]);
    let mut r = start(RolloutConfig { envs: 4, steps: 200, seed: 3, ..Default::default() }, &env, agent("random", &env));
    let f = r.collect().unwrap();
    let (t_len, n, ob) = (f.steps, f.envs, 16);
    assert_eq!(
        (f.obs.len(), f.actions.len(), f.first.len(), f.episode.len()),
        ((t_len + 1) * n * ob, t_len * n * 8, (t_len + 1) * n, (t_len + 1) * n)
    );
    assert!(f.first[..n].iter().all(|&x| x), "every env starts an episode");
    let mut returns = vec![0.0f64; n];
    let mut whole = 0;
    for t in 0..t_len {
        for (i, ret) in returns.iter_mut().enumerate() {
            let at = t * n + i;
            *ret += f64::from(f.rewards[at]);
            let ended = f.terminated[at] || f.truncated[at];
            assert_eq!(f.first[at + n], ended, "first[t+1] exactly where step t ended an episode");
            assert_eq!(f.episode[at + n] != f.episode[at], ended, "a new episode id exactly after an end");
            if ended {
                let fin = f.finished.iter().find(|e| e.episode == f.episode[at]).expect("the ended episode is listed");
                assert_eq!((fin.env, fin.terminated), (i, f.terminated[at]));
                // Only episodes that started inside the fragment are summed whole here.
                if f.episode[at] >= n as u64 {
                    assert!((fin.ret - *ret).abs() < 1e-9);
                    whole += 1;
                }
                *ret = 0.0;
            }
        }
    }
    assert!(whole > 0, "some episode ran start to end inside 200 steps");
    assert_eq!(f.stats.batches, t_len as u64);
    assert_eq!(f.stats.env_faults, 0);
}

#[test]
fn same_seed_same_fragments_whatever_the_workers() {
    let env = envs("CartPole-v1", &[]);
    let run = |workers| {
        let mut r = start(RolloutConfig { envs: 6, workers, steps: 64, seed: 9, ..Default::default() }, &env, agent("random", &env));
        (0..3).map(|_| r.collect().unwrap()).map(|f| (f.obs, f.actions, f.rewards, f.first, f.episode)).collect::<Vec<_>>()
    };
    let one = run(1);
    assert_eq!(one, run(1));
    assert_eq!(one, run(3));
}

/// `rollway.run`'s first `episodes` random-agent episodes of `env` with `seed`.
fn generated(env: &Arc<dyn EnvFactory>, seed: u64, episodes: u64) -> Vec<rollway_core::EpisodeResult> {
    let cfg =
        RunConfig { env: "CartPole-v1".into(), agent: "random".into(), seed, target: Target::Episodes(episodes), ..Default::default() };
    let agents = Arc::new(rollway_agents::Registered::new("random", Params::default()));
    let mut eps = Vec::new();
    Generator::new(cfg, env.clone(), agents, vec![]).unwrap().run(&mut eps).unwrap();
    eps
}

#[test]
fn rollout_episode_k_is_the_generators_episode_k() {
    let env = envs("CartPole-v1", &[]);
    let mut r = start(RolloutConfig { envs: 4, steps: 500, seed: 5, ..Default::default() }, &env, agent("random", &env));
    let finished: Vec<Finished> = (0..2).flat_map(|_| r.collect().unwrap().finished).collect();
    let eps = generated(&env, 5, 40);
    let mut checked = 0;
    for fin in finished.iter().filter(|f| f.episode < 40) {
        let g = &eps[fin.episode as usize];
        assert_eq!((fin.length, fin.ret), (g.length, g.ret), "episode {}", fin.episode);
        checked += 1;
    }
    assert!(checked >= 8, "{checked} episodes compared");
}

#[test]
fn lag_zero_collects_nothing_while_the_learner_trains() {
    let env = envs("CartPole-v1", &[]);
    let (p, calls) = probe(None);
    let mut r = start(RolloutConfig { envs: 2, steps: 16, ..Default::default() }, &env, p);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(calls.load(Ordering::SeqCst), 0, "nothing runs before the first collect");
    for v in 0..4u64 {
        let f = r.collect().unwrap();
        assert!(f.version.iter().all(|&x| x == v));
        assert_eq!((f.stats.lag_min, f.stats.lag_max), (0, 0));
        let before = calls.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(30)); // "training"
        assert_eq!(calls.load(Ordering::SeqCst), before);
        assert_eq!(r.publish(None), v + 1);
    }
}

#[test]
fn weights_change_between_batches_and_every_step_says_which_version_acted() {
    let env = envs("CartPole-v1", &[]);
    let (p, _, cell) = probe_weighted(None);
    let mut r = start(RolloutConfig { envs: 3, steps: 400, max_policy_lag: 2, ..Default::default() }, &env, p);
    let mut seen_versions = std::collections::BTreeSet::new();
    for _ in 0..6 {
        let f = r.collect().unwrap();
        let w = &f.extras.iter().find(|e| e.name == "weight").unwrap().values;
        for (k, &v) in f.version.iter().enumerate() {
            assert_eq!(w[k], v as f32, "step {k}: acted with version {v}'s weights");
            seen_versions.insert(v);
        }
        assert!(f.version.windows(2).all(|w| w[0] <= w[1]), "versions never go back inside a fragment");
        assert!(f.stats.lag_max <= 2);
        let v = r.version() + 1;
        r.publish(Some(weight(&cell, v as f32)));
        std::thread::sleep(Duration::from_millis(2)); // "training"
    }
    assert!(seen_versions.len() >= 2, "{seen_versions:?}");
}

#[test]
fn lag_k_runs_ahead_while_the_learner_trains_and_never_past_the_bound() {
    let env = envs("CartPole-v1", &[]);
    for k in [1u64, 3] {
        let (p, calls) = probe(None);
        let mut r = start(RolloutConfig { envs: 2, steps: 8, max_policy_lag: k, ..Default::default() }, &env, p);
        for i in 1..=8 {
            let f = r.collect().unwrap();
            assert!(f.stats.lag_max <= k, "lag {} > {k}", f.stats.lag_max);
            std::thread::sleep(Duration::from_millis(30)); // "training"
                                                           // Meanwhile exactly k fragments were made ahead of the i delivered: no more.
            assert_eq!(calls.load(Ordering::SeqCst), (i + k as usize) * 8, "lag {k}, after {i} fragments");
            r.publish(None);
        }
        assert_eq!(r.dropped_steps(), 0, "publishing once per collect drops nothing");
    }
}

#[test]
fn fragments_older_than_the_bound_are_dropped_and_counted() {
    let env = envs("CartPole-v1", &[]);
    let (p, _) = probe(None);
    let mut r = start(RolloutConfig { envs: 2, steps: 8, max_policy_lag: 2, ..Default::default() }, &env, p);
    r.collect().unwrap();
    std::thread::sleep(Duration::from_millis(50)); // two more are made at version 0
    for _ in 0..5 {
        r.publish(None);
    }
    let f = r.collect().unwrap();
    assert!(f.oldest_version() + 2 >= 5);
    assert!(f.stats.dropped_steps >= 16, "dropped {}", f.stats.dropped_steps);
    assert_eq!(f.stats.dropped_steps % 16, 0, "whole fragments, never half");
}

#[test]
fn recurrent_state_is_handed_over_and_zeroed_on_first() {
    let env = envs("Faulty-v0", &[("length", "7")]);
    let (p, _) = probe(None);
    let mut r = start(RolloutConfig { envs: 3, steps: 5, ..Default::default() }, &env, p);
    let mut last_seen: Vec<f32> = vec![0.0; 3];
    for k in 0..6 {
        let f = r.collect().unwrap();
        // The width is known once the policy has returned a state.
        assert_eq!(f.state_dim, usize::from(k > 0));
        for (i, &last) in last_seen.iter().enumerate() {
            let expect = if f.first[i] { 0.0 } else { last };
            assert_eq!(f.state.get(i).copied().unwrap_or(0.0), expect, "env {i}: state at the fragment's start");
        }
        let seen = &f.extras.iter().find(|e| e.name == "seen").unwrap().values;
        for t in 0..f.steps {
            for i in 0..3 {
                let at = t * 3 + i;
                // The probe counts the episode's steps in its memory: 1 at the first step.
                if f.first[at] {
                    assert_eq!(seen[at], 1.0);
                } else if t > 0 {
                    assert_eq!(seen[at], seen[at - 3] + 1.0);
                }
            }
        }
        last_seen.copy_from_slice(&seen[seen.len() - 3..]);
    }
}

#[test]
fn a_flaky_env_costs_its_episodes_only() {
    let env = envs("Faulty-v0", &[("length", "5"), ("error_every", "13"), ("panic_every", "29")]);
    let mut r = start(RolloutConfig { envs: 4, steps: 50, ..Default::default() }, &env, agent("random", &env));
    let mut faults = 0;
    for _ in 0..4 {
        let f = r.collect().unwrap();
        faults += f.stats.env_faults;
        for (k, &tr) in f.truncated.iter().enumerate() {
            if tr {
                assert!(f.first[k + 4], "a failed step ends its episode");
            }
        }
    }
    assert!(faults >= 10, "{faults} faults");
}

#[test]
fn a_broken_env_ends_the_rollout_with_its_error() {
    let env = envs("Faulty-v0", &[("error_every", "1")]);
    let mut r = start(RolloutConfig { envs: 2, steps: 10, max_restarts: 2, ..Default::default() }, &env, agent("random", &env));
    let e = r.collect().unwrap_err();
    assert!(matches!(e, Error::EnvGaveUp { failures: 3, .. }), "{e}");
    assert!(r.collect().is_err(), "an ended rollout stays ended");
}

#[test]
fn a_failing_policy_ends_the_rollout_with_its_message() {
    let env = envs("CartPole-v1", &[]);
    let (p, _) = probe(Some(5));
    let mut r = start(RolloutConfig { envs: 2, steps: 4, ..Default::default() }, &env, p);
    r.collect().unwrap();
    let e = r.collect().unwrap_err();
    assert!(e.to_string().contains("broke on purpose"), "{e}");
}

#[test]
fn dropping_a_rollout_that_runs_ahead_stops_it() {
    let env = envs("CartPole-v1", &[]);
    let (p, calls) = probe(None);
    let r = start(RolloutConfig { envs: 2, steps: 100_000, max_policy_lag: 4, ..Default::default() }, &env, p);
    std::thread::sleep(Duration::from_millis(20));
    let t = std::time::Instant::now();
    drop(r);
    assert!(t.elapsed() < Duration::from_secs(1));
    let after = calls.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(calls.load(Ordering::SeqCst), after);
}

#[test]
fn bad_configs_name_the_field() {
    let env = envs("CartPole-v1", &[]);
    for (cfg, field) in [
        (RolloutConfig { envs: 0, ..Default::default() }, "envs"),
        (RolloutConfig { envs: 2, workers: 3, ..Default::default() }, "workers"),
        (RolloutConfig { steps: 0, ..Default::default() }, "steps"),
    ] {
        let e = Rollout::start(cfg, env.clone(), agent("random", &env)).err().unwrap();
        assert!(matches!(e, Error::Config { field: f, .. } if f == field), "{e}");
    }
}

#[test]
fn an_action_outside_the_space_ends_the_rollout_naming_slot_value_and_space() {
    let env = envs("Faulty-v0", &[]);
    let spec = env.spec().unwrap();
    let bad = rollway_agents::Registered::new("faulty", Params::new().with("bad_action_every", 3)).make(&spec).unwrap();
    let mut r = start(RolloutConfig { envs: 4, steps: 2, ..Default::default() }, &env, Box::new(AgentPolicy(bad)));
    r.collect().unwrap();
    let e = r.collect().unwrap_err();
    // The faulty agent spoils the batch's last row.
    assert_eq!(e.to_string(), "policy: env slot 3: action 7 is outside Discrete(2)");
}

#[test]
fn nan_observations_are_env_faults_and_values_outside_the_space_are_warned_once() {
    let env = envs("Faulty-v0", &[("length", "5"), ("nan_obs_every", "7"), ("high", "3")]);
    let mut r = start(RolloutConfig { envs: 4, steps: 20, ..Default::default() }, &env, agent("random", &env));
    let (first, second) = (r.collect().unwrap(), r.collect().unwrap());
    assert!(first.stats.env_faults >= 8 && second.stats.env_faults >= 8, "{} {}", first.stats.env_faults, second.stats.env_faults);
    assert_eq!(first.warnings, ["env Faulty-v0: observation 4 is above its bound 3 in Box(float32, [1])"]);
    assert!(second.warnings.is_empty(), "each kind once per rollout");
    let mut obs = first.obs.chunks_exact(8).map(|row| f32::from_ne_bytes(row[..4].try_into().unwrap()));
    assert!(obs.all(f32::is_finite), "no NaN reaches a fragment");
    let unchecked = RolloutConfig { envs: 4, steps: 20, check: false, ..Default::default() };
    let f = start(unchecked, &env, agent("random", &env)).collect().unwrap();
    assert_eq!((f.stats.env_faults, f.warnings.len()), (0, 0));
}

/// Issue 32: Gymnasium's seeding convention as an option. An env seeded at its first
/// reset goes on with its own stream: slot 0's second episode starts where the same
/// env reset without a seed starts, and the same seed still gives the same fragments.
#[test]
fn issue32_without_seed_each_episode_envs_continue_their_stream() {
    let env = envs("CartPole-v1", &[]);
    let cfg = |each| RolloutConfig { envs: 3, steps: 200, seed: 4, seed_each_episode: each, ..Default::default() };
    let run = |each| {
        let mut r = start(cfg(each), &env, agent("random", &env));
        r.collect().unwrap()
    };
    let (a, b, seeded) = (run(false), run(false), run(true));
    assert_eq!((&a.obs, &a.actions, &a.rewards), (&b.obs, &b.actions, &b.rewards), "deterministic for a seed");
    assert_eq!(a.obs[..3 * 16], seeded.obs[..3 * 16], "the first episodes are seeded alike");
    assert_ne!(a.obs, seeded.obs, "later episodes differ: they continue the env's stream");
    // Slot 0's second episode: its first row, against the env reset without a seed.
    let n = 3;
    let t = (1..a.steps).find(|&t| a.first[t * n]).expect("slot 0 ends an episode within 200 random steps");
    let mut one = env.make().unwrap();
    let ol = rollway_core::Layout::of(&env.spec().unwrap().observation_space);
    let mut row = vec![0u8; ol.row_bytes()];
    one.reset(Some(rollway_core::seed::episode_seed(4, 0)), None, rollway_core::RowMut::new(&ol, &mut row)).unwrap();
    assert_eq!(row, a.obs[..16], "slot 0's first episode starts at its seed");
    one.reset(None, None, rollway_core::RowMut::new(&ol, &mut row)).unwrap();
    assert_eq!(row, a.obs[t * n * 16..t * n * 16 + 16], "slot 0's second episode continues the env's stream");
}

/// Issue 32: after a fault the slot's env is a new one, so its next reset is seeded
/// again (a reset without a seed there would be one more fault each time).
#[test]
fn issue32_a_failed_env_is_seeded_again_without_seed_each_episode() {
    let env = envs("Faulty-v0", &[("length", "5"), ("error_every", "13")]);
    let faults = |each| {
        let cfg = RolloutConfig { envs: 4, steps: 50, seed_each_episode: each, ..Default::default() };
        let mut r = start(cfg, &env, agent("random", &env));
        (0..4).map(|_| r.collect().unwrap().stats.env_faults).sum::<u64>()
    };
    let (seeded, continued) = (faults(true), faults(false));
    assert!(seeded >= 12, "{seeded} faults");
    assert_eq!(continued, seeded, "the same injected faults, and no more");
}

/// Issue 34: rollouts that share a run number their episodes apart, each seeded as the
/// generator's episode of its number; numbers that could collide are refused.
#[test]
fn issue34_episode_ids_number_and_seed_episodes_apart() {
    let env = envs("CartPole-v1", &[]);
    let ids = EpisodeIds { base: 2, offset: 3, slots: 10 };
    let cfg = RolloutConfig { envs: 3, steps: 300, seed: 5, episode_ids: Some(ids), ..Default::default() };
    let f = start(cfg, &env, agent("random", &env)).collect().unwrap();
    assert_eq!(&f.episode[..3], &[23, 24, 25], "slot i's first episode is (2 + 0) × 10 + 3 + i");
    let later: Vec<u64> = f.finished.iter().map(|e| e.episode).filter(|&e| e >= 30).collect();
    assert!(!later.is_empty() && later.iter().all(|e| (3..6).contains(&(e % 10))), "{later:?}");
    let eps = generated(&env, 5, 60);
    let mine: Vec<&Finished> = f.finished.iter().filter(|e| e.episode < 60).collect();
    assert!(mine.len() >= 3, "{} episodes to compare", mine.len());
    for fin in mine {
        let g = &eps[fin.episode as usize];
        assert_eq!((fin.length, fin.ret), (g.length, g.ret), "episode {} is the generator's", fin.episode);
    }
    let clash = RolloutConfig { envs: 8, episode_ids: Some(EpisodeIds { base: 0, offset: 4, slots: 8 }), ..Default::default() };
    assert!(Rollout::start(clash, env.clone(), agent("random", &env)).err().unwrap().to_string().contains("episode_ids"));
}

#[test]
fn issue48_truncated_episodes_keep_their_final_observation() {
    // Random CartPole cut at 5 steps: most episodes end truncated, some terminated.
    let env = envs("CartPole-v1", &[]);
    let cfg = RolloutConfig { envs: 3, steps: 20, seed: 4, max_steps: Some(5), ..Default::default() };
    let mut r = start(cfg, &env, agent("random", &env));
    let (f, ob) = (r.collect().unwrap(), 16);
    assert_eq!(f.final_obs.len(), f.finished.len() * ob, "one row per finished episode");
    assert!(f.finished.iter().any(|e| !e.terminated), "some episodes truncated");
    for (k, e) in f.finished.iter().enumerate() {
        let (at, next) = (e.step * f.envs + e.env, (e.step + 1) * f.envs + e.env);
        assert!(f.terminated[at] || f.truncated[at]);
        assert!(f.first[next] && f.episode[next] != e.episode, "obs[t + 1] is the next episode's");
        let last = &f.final_obs[k * ob..(k + 1) * ob];
        // CartPole's state moves every step: the final row is neither the step's own
        // observation nor the reset's.
        assert_ne!(last, &f.obs[at * ob..(at + 1) * ob]);
        assert_ne!(last, &f.obs[next * ob..(next + 1) * ob]);
    }
}

#[test]
fn issue48_the_learners_version_numbers_are_the_rollouts() {
    // A rollout acting for a learner that counts its own versions (a Ray actor restarted at 0).
    let env = envs("CartPole-v1", &[]);
    let mut r = start(RolloutConfig { envs: 2, steps: 4, ..Default::default() }, &env, agent("random", &env));
    assert_eq!(r.publish_version(25, None).unwrap(), 25);
    assert!(r.collect().unwrap().version.iter().all(|&v| v == 25), "steps carry the learner's number");
    let e = r.publish_version(25, None).unwrap_err().to_string();
    assert!(e.contains("version 25 is not newer than the current version 25"), "{e}");
    assert_eq!(r.publish(None), 26, "publish goes on from the learner's number");
}

/// Issue 47: a resumed rollout continues each slot's numbering (and so its seeds) from
/// where the last life stopped, and acts as the learner's checkpointed version.
#[test]
fn issue47_episode_starts_continue_each_slots_stream_at_the_given_version() {
    let env = envs("CartPole-v1", &[]);
    let whole = RolloutConfig { envs: 2, steps: 400, seed: 9, ..Default::default() };
    let all = start(whole.clone(), &env, agent("random", &env)).collect().unwrap();
    // Slot 0 had taken 3 episodes, slot 1 five: their next are 3 × 2 + 0 and 5 × 2 + 1.
    let cfg = RolloutConfig { episode_starts: vec![3, 5], version: 7, ..whole };
    let f = start(cfg, &env, agent("random", &env)).collect().unwrap();
    assert_eq!(&f.episode[..2], &[6, 11]);
    assert!(f.version.iter().all(|&v| v == 7), "acts as the version it was given");
    let later: Vec<&Finished> = f.finished.iter().filter(|e| all.finished.iter().any(|a| a.episode == e.episode)).collect();
    assert!(later.len() >= 4, "{} episodes in both", later.len());
    for e in later {
        let a = all.finished.iter().find(|a| a.episode == e.episode).unwrap();
        assert_eq!((e.length, e.ret), (a.length, a.ret), "episode {} plays as in the unbroken stream", e.episode);
    }
    let wrong = RolloutConfig { envs: 2, episode_starts: vec![1], ..Default::default() };
    assert!(Rollout::start(wrong, env.clone(), agent("random", &env)).err().unwrap().to_string().contains("episode_starts"));
}
