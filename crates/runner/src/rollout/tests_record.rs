//! Recording while training: the episodes a recording rollout hands on are exactly
//! what its fragments held, with extras, versions and states; faults are not recorded.

use std::sync::{Arc, Mutex};

use rollway_core::{EpisodeResult, Status};

use super::tests::{agent, envs, probe_weighted, weight};
use super::*;
use crate::{Observer, SinkError};

/// Keeps what the rollout hands on, for the test to look at while it runs.
#[derive(Clone, Default)]
pub(super) struct Kept(pub(super) Arc<Mutex<Vec<EpisodeResult>>>);

impl Observer for Kept {
    fn on_episode(&mut self, e: EpisodeResult) -> Result<(), SinkError> {
        self.0.lock().unwrap().push(e);
        Ok(())
    }
}

/// Per step of episode `id` in the fragments: (obs row, action row, reward, version, extra `seen`).
type Step = (Vec<u8>, Vec<u8>, f32, u64, f32);

fn steps_of(frags: &[Fragment], id: u64, ob: usize, ab: usize) -> Vec<Step> {
    let mut out = Vec::new();
    for f in frags {
        let seen = &f.extras.iter().find(|x| x.name == "seen").unwrap().values;
        // Rows 0..T only: row T is the next fragment's row 0.
        for at in (0..f.steps * f.envs).filter(|&at| f.episode[at] == id) {
            out.push((
                f.obs[at * ob..(at + 1) * ob].to_vec(),
                f.actions[at * ab..(at + 1) * ab].to_vec(),
                f.rewards[at],
                f.version[at],
                seen[at],
            ));
        }
    }
    out
}

#[test]
fn recorded_episodes_are_what_the_fragments_held_with_extras_versions_and_states() {
    let env = envs("CartPole-v1", &[]);
    let (policy, _, cell) = probe_weighted(None);
    let kept = Kept::default();
    let cfg = RolloutConfig { envs: 4, steps: 16, seed: 9, ..Default::default() };
    let mut r = Rollout::recording(cfg, env.clone(), policy, Some(Box::new(kept.clone()))).unwrap();
    let mut frags = Vec::new();
    for v in 0..3 {
        frags.push(r.collect().unwrap());
        r.publish(Some(weight(&cell, v as f32 + 1.0)));
    }
    drop(r);
    let eps = kept.0.lock().unwrap().clone();
    let finished: Vec<u64> = frags.iter().flat_map(|f| f.finished.iter().map(|e| e.episode)).collect();
    assert_eq!(eps.iter().map(|e| e.run_index).collect::<Vec<_>>(), finished, "every ended episode, in the order they ended");
    assert!(eps.len() >= 8, "{} episodes", eps.len());
    let (ob, ab) = (16, 8);
    for e in &eps {
        let t = e.trajectory.as_ref().unwrap();
        let want = steps_of(&frags, e.run_index, ob, ab);
        assert_eq!(want.len() as u64, e.length, "episode {}", e.run_index);
        for (k, (obs, act, rew, ver, seen)) in want.into_iter().enumerate() {
            assert_eq!((&t.obs[k * ob..(k + 1) * ob], &t.actions[k * ab..(k + 1) * ab]), (&obs[..], &act[..]));
            assert_eq!((t.rewards[k], t.versions[k]), (f64::from(rew), ver));
            assert_eq!(t.extras[1].values[k], seen, "extra `seen` of step {k}");
            // The probe's memory counts the episode's steps: the state after step k is k + 1.
            assert_eq!(t.states[k], k as f32 + 1.0);
        }
        assert_eq!(t.obs.len(), (e.length as usize + 1) * ob, "the final observation is kept");
        let (f, k) = frags
            .iter()
            .find_map(|f| f.finished.iter().position(|x| x.episode == e.run_index).map(|k| (f, k)))
            .expect("the fragment it ended in");
        let fin = &f.finished[k];
        assert_eq!(f.episode[fin.step * f.envs + fin.env], e.run_index, "finished names the step and slot it ended at");
        assert_eq!(
            &f.final_obs[k * ob..(k + 1) * ob],
            &t.obs[e.length as usize * ob..],
            "issue48: final_obs is the recorded last row, bit for bit"
        );
        assert_eq!(e.status, Status::Terminated, "CartPole pushed left falls");
        assert_eq!(t.extras.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["weight", "seen"]);
    }
    assert!(eps.iter().any(|e| e.trajectory.as_ref().unwrap().versions.windows(2).any(|w| w[0] != w[1])), "an episode spans versions");
}

#[test]
fn episodes_cut_by_env_faults_are_not_recorded() {
    let env = envs("Faulty-v0", &[("length", "5"), ("error_every", "13")]);
    let kept = Kept::default();
    let cfg = RolloutConfig { envs: 2, steps: 40, ..Default::default() };
    let mut r = Rollout::recording(cfg, env.clone(), agent("random", &env), Some(Box::new(kept.clone()))).unwrap();
    let f = r.collect().unwrap();
    drop(r);
    let eps = kept.0.lock().unwrap();
    assert!(f.stats.env_faults > 0);
    assert_eq!(eps.len(), f.finished.len(), "only the episodes that ended");
    assert!(eps.iter().all(|e| e.length == 5), "{:?}", eps.iter().map(|e| e.length).collect::<Vec<_>>());
}

/// An observer that refuses, as a writer whose disk is full does.
struct Refuses;

impl Observer for Refuses {
    fn on_episode(&mut self, _: EpisodeResult) -> Result<(), SinkError> {
        Err("disk full".into())
    }
}

#[test]
fn a_recorder_that_fails_ends_the_rollout_with_its_error() {
    let env = envs("CartPole-v1", &[]);
    let cfg = RolloutConfig { envs: 2, steps: 200, ..Default::default() };
    let mut r = Rollout::recording(cfg, env.clone(), agent("random", &env), Some(Box::new(Refuses))).unwrap();
    let e = r.collect().err().unwrap().to_string();
    assert!(e.contains("disk full"), "{e}");
}

/// Issue 32: a recorded episode's seed must reproduce it, so recording needs every
/// episode seeded; the refusal names the field.
#[test]
fn issue32_recording_needs_seed_each_episode() {
    let env = envs("CartPole-v1", &[]);
    let cfg = RolloutConfig { envs: 2, steps: 8, seed_each_episode: false, ..Default::default() };
    let record: Box<dyn Observer + Send> = Box::new(Kept::default());
    let err = Rollout::recording(cfg, env.clone(), agent("random", &env), Some(record)).err().expect("refused");
    assert!(err.to_string().contains("seed_each_episode"), "{err}");
}

/// A sink that hands each episode's observation buffer straight back, as a dataset
/// writer does once it has committed the episode, noting each buffer's address.
struct GivesBack(rollway_core::Recycler, Arc<Mutex<Vec<usize>>>);

impl Observer for GivesBack {
    fn on_episode(&mut self, e: EpisodeResult) -> Result<(), SinkError> {
        let t = e.trajectory.expect("recorded");
        self.1.lock().unwrap().push(t.obs.as_ptr() as usize);
        self.0.give(t.obs);
        Ok(())
    }
    fn recycler(&self) -> Option<rollway_core::Recycler> {
        Some(self.0.clone())
    }
}

#[test]
fn a_recording_builds_new_episodes_in_the_buffers_its_sink_hands_back() {
    let env = envs("CartPole-v1", &[]);
    let pool = rollway_core::Recycler::new();
    // One buffer large enough to be kept (CartPole's own would be left to the allocator),
    // taken and handed back, as a committed episode's is.
    let big = pool.take(rollway_core::Recycler::MIN_BYTES);
    let at = big.as_ptr() as usize;
    pool.give(big);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cfg = RolloutConfig { envs: 1, steps: 200, seed: 3, ..Default::default() };
    let sink = GivesBack(pool.clone(), seen.clone());
    let mut r = Rollout::recording(cfg, env.clone(), agent("random", &env), Some(Box::new(sink))).unwrap();
    r.collect().unwrap();
    drop(r);
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 3, "{} episodes", seen.len());
    assert!(seen.iter().all(|&p| p == at), "every episode of the one slot was built in the buffer handed back: {seen:x?} vs {at:x}");
}
