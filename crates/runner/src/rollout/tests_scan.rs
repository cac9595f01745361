//! A scanned rollout makes the fragments and the recording that a round-at-a-time
//! rollout makes when both act alike: here a [`Scan`] of real CartPole envs, each
//! stepped T times per call with the same rule as the policy the other rollout runs.

use std::sync::Arc;

use rollway_core::{ActBatch, Env, EnvFactory, Layout, RowMut, RowRef};

use super::scan::{Scan, Scanned};
use super::tests::envs;
use super::tests_record::Kept;
use super::*;

/// Push right while the pole leans right (CartPole's observation 2 is its angle).
fn rule(obs: &[u8]) -> u8 {
    let angle = f32::from_ne_bytes(obs[8..12].try_into().unwrap());
    u8::from(angle > 0.0)
}

struct Leaning;

impl Policy for Leaning {
    fn act(&mut self, batch: &mut ActBatch<'_>, _extras: &mut Vec<Extra>) -> rollway_core::Result<()> {
        let (ob, ab) = (batch.obs_layout.row_bytes(), batch.act_layout.row_bytes());
        for s in batch.segments.iter_mut() {
            for (o, a) in s.obs.chunks_exact(ob).zip(s.actions.chunks_exact_mut(ab)) {
                a.fill(0);
                a[0] = rule(o);
            }
        }
        Ok(())
    }
}

/// CartPole envs stepped a fragment at a time, acting by [`rule`].
struct Stepped {
    envs: Vec<Box<dyn Env>>,
    ol: Layout,
    al: Layout,
    obs: Vec<Vec<u8>>,
}

impl Scan for Stepped {
    fn begin(&mut self, seeds: &[u64]) -> rollway_core::Result<Vec<u8>> {
        let mut out = Vec::new();
        for (e, (&s, row)) in self.envs.iter_mut().zip(seeds.iter().zip(self.obs.iter_mut())) {
            e.reset(Some(s), None, RowMut::new(&self.ol, row))?;
            out.extend_from_slice(row);
        }
        Ok(out)
    }

    fn steps(&mut self, steps: usize, seeds: &[u64], seeded: bool, rows: &mut [u8]) -> rollway_core::Result<Scanned> {
        let (n, ob, ab) = (self.envs.len(), self.ol.row_bytes(), self.al.row_bytes());
        let mut s = Scanned::default();
        let mut at = n * ob;
        let mut started = vec![0; n];
        for _ in 0..steps {
            for (i, e) in self.envs.iter_mut().enumerate() {
                let mut action = vec![0; ab];
                action[0] = rule(&self.obs[i]);
                let out = e.step(RowRef::new(&self.al, &action), RowMut::new(&self.ol, &mut self.obs[i]))?;
                s.actions.extend_from_slice(&action);
                s.rewards.push(out.reward as f32);
                s.terminated.push(out.terminated);
                s.truncated.push(out.truncated);
                if out.terminated || out.truncated {
                    s.final_obs.extend_from_slice(&self.obs[i]);
                    s.infos.push(e.info());
                    let seed = seeded.then(|| seeds[started[i] * n + i]);
                    started[i] += 1;
                    e.reset(seed, None, RowMut::new(&self.ol, &mut self.obs[i]))?;
                }
                rows[at..at + ob].copy_from_slice(&self.obs[i]);
                at += ob;
            }
        }
        Ok(s)
    }
}

fn scanned(factory: &Arc<dyn EnvFactory>, n: usize) -> Box<dyn Scan> {
    let spec = factory.spec().unwrap();
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let envs = (0..n).map(|_| factory.make().unwrap()).collect();
    Box::new(Stepped { envs, obs: vec![vec![0; ol.row_bytes()]; n], ol, al })
}

fn both_ways(seed_each_episode: bool) {
    let factory = envs("CartPole-v1", &[]);
    let spec = factory.spec().unwrap();
    let cfg = RolloutConfig { envs: 5, steps: 40, seed: 11, seed_each_episode, ..Default::default() };
    let (kept_a, kept_b) = (Kept::default(), Kept::default());
    let record = |k: &Kept| seed_each_episode.then(|| Box::new(k.clone()) as Box<dyn crate::Observer + Send>);
    let mut a = Rollout::scanning(cfg.clone(), spec, scanned(&factory, 5), record(&kept_a)).unwrap();
    let mut b = Rollout::recording(cfg, factory.clone(), Box::new(Leaning), record(&kept_b)).unwrap();
    let mut ended = 0;
    for _ in 0..3 {
        let (fa, fb) = (a.collect().unwrap(), b.collect().unwrap());
        assert_eq!((fa.obs, fa.actions, fa.rewards), (fb.obs, fb.actions, fb.rewards));
        assert_eq!((fa.terminated, fa.truncated, fa.first, fa.episode), (fb.terminated, fb.truncated, fb.first, fb.episode));
        assert_eq!((fa.finished, fa.final_obs, fa.version), (fb.finished.clone(), fb.final_obs, fb.version));
        ended += fb.finished.len();
    }
    assert!(ended >= 5, "{ended} episodes ended");
    drop((a, b));
    let (ea, eb) = (kept_a.0.lock().unwrap().clone(), kept_b.0.lock().unwrap().clone());
    assert_eq!(ea.len(), eb.len());
    for (x, y) in ea.iter().zip(&eb) {
        let (tx, ty) = (x.trajectory.as_ref().unwrap(), y.trajectory.as_ref().unwrap());
        assert_eq!((x.run_index, x.seed, &x.info), (y.run_index, y.seed, &y.info));
        assert_eq!((&tx.obs, &tx.actions, &tx.rewards, &tx.terminations), (&ty.obs, &ty.actions, &ty.rewards, &ty.terminations));
    }
    assert_eq!(ea.is_empty(), !seed_each_episode, "recorded when seeded");
}

#[test]
fn a_scan_makes_the_fragments_and_the_recording_of_a_rollout_acting_alike() {
    both_ways(true);
}

#[test]
fn a_scan_whose_later_episodes_go_on_with_the_envs_stream_matches_too() {
    both_ways(false);
}

#[test]
fn a_scan_that_answers_the_wrong_sizes_ends_the_rollout_naming_them() {
    struct Short;
    impl Scan for Short {
        fn begin(&mut self, seeds: &[u64]) -> rollway_core::Result<Vec<u8>> {
            Ok(vec![0; seeds.len() * 16])
        }
        fn steps(&mut self, _: usize, _: &[u64], _: bool, _: &mut [u8]) -> rollway_core::Result<Scanned> {
            Ok(Scanned::default())
        }
    }
    let spec = envs("CartPole-v1", &[]).spec().unwrap();
    let cfg = RolloutConfig { envs: 2, steps: 4, ..Default::default() };
    let mut r = Rollout::scanning(cfg, spec, Box::new(Short), None).unwrap();
    let e = r.collect().unwrap_err().to_string();
    assert!(e.contains("the scan's actions"), "{e}");
}
