//! Issue 48: `next_observations` gives the observation after every step of a window,
//! an episode's final observation at its last step, for numeric and frame leaves, in
//! padded windows and from a following loader; and changes nothing else in a batch.

use std::path::Path;

use rollway_core::{Array, Params, Value};
use rollway_loader::{Batch, Follow, Loader, LoaderConfig};
use rollway_store::{Collector, Dataset, DatasetWriter, WriterConfig};

fn record(dir: &Path, env_id: &str, params: &str, act: impl Fn(u64, i64) -> Value, lengths: impl Fn(u64) -> i64) {
    let env = rollway_envs::make(env_id, &Params::parse(params).unwrap()).unwrap();
    let cfg = WriterConfig { max_buffer_episodes: Some(3), ..Default::default() };
    let w = DatasetWriter::create(dir, env.spec(), "t", 0, serde_json::json!({}), cfg).unwrap();
    let mut c = Collector::new(env, w);
    for s in 0..8u64 {
        c.reset(Some(s)).unwrap();
        for t in 0..lengths(s) {
            let (_, out) = c.step(&act(s, t)).unwrap();
            if out.terminated || out.truncated {
                break;
            }
        }
    }
    c.close().unwrap();
}

fn i64s(a: &Array) -> Vec<i64> {
    a.data.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// Checks every window of `b` against the recorded episodes; returns (steps checked, episode ends seen).
fn check(ds: &Dataset, b: &Batch, l: usize) -> (usize, usize) {
    let (mut steps, mut ends) = (0, 0);
    assert_eq!(b.next_observations.len(), b.observations.len());
    for (wi, (&id, &s)) in i64s(&b.episode_id).iter().zip(&i64s(&b.step)).enumerate() {
        let ep = ds.read_episode(id as u64).unwrap();
        let (s, t) = (s as usize, ep.rewards.len());
        for ((name, next), (name2, rec)) in b.next_observations.iter().zip(&ep.observations) {
            assert_eq!(name, name2);
            let w = rec.data.len() / (t + 1);
            assert_eq!(next.shape, b.observations.iter().find(|(n, _)| n == name).unwrap().1.shape);
            for k in 0..l {
                let got = &next.data[(wi * l + k) * w..(wi * l + k + 1) * w];
                if s + k < t {
                    assert_eq!(got, &rec.data[(s + k + 1) * w..(s + k + 2) * w], "{name} episode {id} step {}", s + k);
                    steps += 1;
                    ends += usize::from(s + k + 1 == t);
                } else {
                    assert!(got.iter().all(|&x| x == 0), "padding is zeroed");
                }
            }
        }
    }
    (steps, ends)
}

fn all_batches(ds: &Dataset, cfg: LoaderConfig) -> (usize, usize) {
    let l = cfg.clip_len;
    let (mut plain, mut with) =
        (Loader::new(ds, LoaderConfig { next_observations: false, ..cfg.clone() }).unwrap(), Loader::new(ds, cfg).unwrap());
    let (mut steps, mut ends) = (0, 0);
    while let Some(b) = with.next_batch().unwrap() {
        let (s, e) = check(ds, b, l);
        (steps, ends) = (steps + s, ends + e);
        let b = b.clone();
        let p = plain.next_batch().unwrap().unwrap();
        assert!(p.next_observations.is_empty(), "nothing asked, nothing made");
        assert_eq!((&p.observations, &p.actions, &p.rewards, &p.mask), (&b.observations, &b.actions, &b.rewards, &b.mask));
    }
    (steps, ends)
}

#[test]
fn issue48_next_observations_of_a_numeric_dataset_end_with_the_final_observation() {
    let d = tempfile::tempdir().unwrap();
    // CartPole balanced a while, then pushed one way until it falls: lengths vary.
    let act = |s: u64, t: i64| Value::Array(Array::scalar_i64(if t < 3 + s as i64 { (s as i64 + t) % 2 } else { 1 }));
    record(d.path(), "CartPole-v1", "", act, |_| 1000);
    let ds = Dataset::open(d.path()).unwrap();
    let cfg = LoaderConfig { clip_len: 5, stride: 2, pad: true, batch_size: 3, next_observations: true, ..Default::default() };
    let (steps, ends) = all_batches(&ds, cfg);
    assert!(steps > 40 && ends >= 8, "{steps} steps, {ends} ends");
}

#[test]
fn issue48_next_observations_of_frames_are_decoded_one_frame_on() {
    let d = tempfile::tempdir().unwrap();
    record(d.path(), "PixelMine-v0", "size=16,max_steps=9", |_, t| Value::Array(Array::scalar_i64(1 + t % 5)), |s| 4 + s as i64);
    let ds = Dataset::open(d.path()).unwrap();
    let cfg = LoaderConfig { clip_len: 3, stride: 1, pad: true, batch_size: 4, next_observations: true, ..Default::default() };
    let (steps, ends) = all_batches(&ds, cfg);
    assert!(steps > 20 && ends >= 8, "{steps} steps, {ends} ends");
}

#[test]
fn issue48_a_following_loader_gives_next_observations_too() {
    let d = tempfile::tempdir().unwrap();
    record(d.path(), "CartPole-v1", "", |s, t| Value::Array(Array::scalar_i64(i64::from(t >= s as i64) | (t % 2))), |_| 1000);
    let ds = Dataset::open(d.path()).unwrap();
    let follow = Follow { max_version_lag: None, max_reuse: Some(1), round_windows: None };
    let cfg = LoaderConfig { clip_len: 4, stride: 4, batch_size: 2, next_observations: true, follow: Some(follow), ..Default::default() };
    let mut l = Loader::open(d.path(), cfg).unwrap();
    let (mut steps, mut ends) = (0, 0);
    while let Some(b) = l.next_batch().unwrap() {
        let (s, e) = check(&ds, b, 4);
        (steps, ends) = (steps + s, ends + e);
    }
    assert!(steps >= 40 && ends > 0, "{steps} steps, {ends} ends");
}
