//! Episodes made by hand for the store tests.

#![allow(dead_code)]

use std::path::Path;

use rand::SeedableRng;
use rollway_core::{EnvSpec, EpisodeResult, Layout, Params, RowMut, RowRef, Rows, Trajectory};
use rollway_store::{DatasetWriter, WriterConfig};

/// Runs `n` random episodes of `env_id` by hand, returning what was recorded.
pub fn episodes(env_id: &str, params: &str, n: u64, max_len: u64) -> (EnvSpec, Vec<EpisodeResult>) {
    let mut env = rollway_envs::make(env_id, &Params::parse(params).unwrap()).unwrap();
    let spec = env.spec().clone();
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
    let mut out = Vec::new();
    for i in 0..n {
        env.reset(Some(i), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
        let mut t = Trajectory { obs: obs.row(0).to_vec(), infos: vec![env.info()], ..Default::default() };
        for k in 0..max_len {
            al.sample_row(&mut rng, act.row_mut(0));
            let o = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
            t.obs.extend_from_slice(obs.row(0));
            t.actions.extend_from_slice(act.row(0));
            t.rewards.push(o.reward);
            t.terminations.push(o.terminated);
            t.truncations.push(o.truncated || (k + 1 == max_len && !o.terminated));
            t.infos.push(env.info());
            if o.terminated || o.truncated || k + 1 == max_len {
                break;
            }
        }
        // Status, length, return and final info follow from the steps.
        out.push(EpisodeResult::from_trajectory(i, i, t));
    }
    (spec, out)
}

pub fn write_all(dir: &Path, spec: &EnvSpec, eps: &[EpisodeResult], cfg: WriterConfig) {
    let w = DatasetWriter::create(dir, spec, "random", 0, serde_json::json!({"k": 1}), cfg).unwrap();
    for e in eps {
        w.write(e.clone()).unwrap();
    }
    w.finish().unwrap();
}
