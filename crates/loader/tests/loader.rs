//! Coverage, resume equivalence, rank sharding, padding, `first` flags and equality
//! of loaded values with what was recorded.

use std::collections::BTreeSet;
use std::path::Path;

use rollway_core::{Array, Params, Value};
use rollway_loader::{Batch, Loader, LoaderConfig, LoaderState, Selection};
use rollway_store::{Collector, Dataset, DatasetWriter, WriterConfig};

/// A collector recording `env_id` (with `params`) into `dir`, committing a shard
/// every `per_shard` episodes when given.
fn collector(dir: &Path, env_id: &str, params: &str, per_shard: Option<usize>) -> Collector {
    let env = rollway_envs::make(env_id, &Params::parse(params).unwrap()).unwrap();
    let cfg = WriterConfig { max_buffer_episodes: per_shard, ..Default::default() };
    let w = DatasetWriter::create(dir, env.spec(), "t", 0, serde_json::json!({}), cfg).unwrap();
    Collector::new(env, w)
}

/// Episodes of varied lengths, several shards.
fn cartpole(dir: &Path) {
    let mut c = collector(dir, "CartPole-v1", "", Some(5));
    for s in 0..23u64 {
        c.reset(Some(s)).unwrap();
        let mut t = 0i64;
        // Alternating keeps the pole up for a while; pushing one way ends it: lengths vary.
        while !c.step_discrete(if t < 10 + s as i64 { t % 2 } else { 1 }).unwrap().terminated {
            t += 1;
        }
    }
    c.close().unwrap();
}

fn keys(b: &Batch) -> Vec<(i64, i64)> {
    i64s(&b.episode_id).into_iter().zip(i64s(&b.step)).collect()
}

fn i64s(a: &Array) -> Vec<i64> {
    assert_eq!(a.dtype, rollway_core::DType::I64);
    a.data.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap())).collect()
}

fn epoch(l: &mut Loader) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    while let Some(b) = l.next_batch().unwrap() {
        out.extend(keys(b));
    }
    out
}

fn cfg(batch: usize) -> LoaderConfig {
    LoaderConfig { clip_len: 6, stride: 3, batch_size: batch, threads: 3, prefetch_batches: 2, seed: 5, ..Default::default() }
}

#[test]
fn every_window_exactly_once_per_epoch_and_epochs_differ() {
    let d = tempfile::tempdir().unwrap();
    cartpole(d.path());
    let mut l = Loader::open(d.path(), cfg(7)).unwrap();
    let all: BTreeSet<(i64, i64)> = l.windows().iter().map(|w| (l.episodes()[w.episode as usize].id as i64, w.start as i64)).collect();
    assert_eq!(all.len(), l.num_windows());
    let e0 = epoch(&mut l);
    assert_eq!(e0.len(), l.num_windows());
    assert_eq!(e0.iter().copied().collect::<BTreeSet<_>>(), all);
    let e1 = epoch(&mut l);
    assert_eq!(e1.iter().copied().collect::<BTreeSet<_>>(), all);
    assert_ne!(e0, e1, "a new epoch is a new shuffle");
    assert_eq!(l.state(), LoaderState { epoch: 2, batches: 0 });
    // Windows never cross an episode's end without padding.
    for w in l.windows() {
        assert!(w.start as usize + 6 <= l.episodes()[w.episode as usize].length);
    }
}

#[test]
fn interrupted_and_restored_equals_uninterrupted() {
    let d = tempfile::tempdir().unwrap();
    cartpole(d.path());
    let mut a = Loader::open(d.path(), cfg(4)).unwrap();
    let _ = epoch(&mut a);
    let full = epoch(&mut a); // epoch 1
    let mut b = Loader::open(d.path(), cfg(4)).unwrap();
    b.restore(LoaderState { epoch: 1, batches: 0 });
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.extend(keys(b.next_batch().unwrap().unwrap()));
    }
    let saved = b.state();
    assert_eq!(saved, LoaderState { epoch: 1, batches: 5 });
    drop(b);
    let mut c = Loader::open(d.path(), cfg(4)).unwrap();
    c.restore(saved);
    seen.extend(epoch(&mut c));
    assert_eq!(seen, full);
}

#[test]
fn ranks_are_disjoint_and_cover_the_epoch() {
    let d = tempfile::tempdir().unwrap();
    cartpole(d.path());
    let n = Loader::open(d.path(), cfg(5)).unwrap().num_windows();
    let mut union = Vec::new();
    for rank in 0..3 {
        let mut l = Loader::open(d.path(), LoaderConfig { rank, world_size: 3, ..cfg(5) }).unwrap();
        union.extend(epoch(&mut l));
    }
    let set: BTreeSet<_> = union.iter().copied().collect();
    assert_eq!((union.len(), set.len()), (n, n));
    assert!(Loader::open(d.path(), LoaderConfig { rank: 3, world_size: 3, ..cfg(5) }).is_err());
}

#[test]
fn loaded_values_equal_recorded_values_with_padding_and_first_flags() {
    let d = tempfile::tempdir().unwrap();
    cartpole(d.path());
    let ds = Dataset::open(d.path()).unwrap();
    let mut l = Loader::new(&ds, LoaderConfig { clip_len: 8, stride: 8, pad: true, batch_size: 3, ..Default::default() }).unwrap();
    let mut checked = 0;
    let mut padded = 0;
    while let Some(b) = l.next_batch().unwrap() {
        let (ids, steps) = (i64s(&b.episode_id), i64s(&b.step));
        for (wi, (&id, &s)) in ids.iter().zip(&steps).enumerate() {
            let ep = ds.read_episode(id as u64).unwrap();
            let (s, t) = (s as usize, ep.rewards.len());
            for k in 0..8 {
                let i = wi * 8 + k;
                let real = s + k < t;
                assert_eq!(b.mask.data[i] == 1, real);
                assert_eq!(b.first.data[i] == 1, s + k == 0);
                let obs = &b.observations[0].1.data[i * 16..(i + 1) * 16];
                let act = &b.actions[0].1.data[i * 8..(i + 1) * 8];
                let rew = f64::from_ne_bytes(b.rewards.data[i * 8..(i + 1) * 8].try_into().unwrap());
                if real {
                    assert_eq!(obs, &ep.observations[0].1.data[(s + k) * 16..(s + k + 1) * 16]);
                    assert_eq!(act, &ep.actions[0].1.data[(s + k) * 8..(s + k + 1) * 8]);
                    assert_eq!(rew, ep.rewards[s + k]);
                    assert_eq!(b.terminated.data[i] == 1, ep.terminations[s + k]);
                } else {
                    padded += 1;
                    assert!(obs.iter().chain(act).all(|&x| x == 0) && rew == 0.0, "padding is zeroed");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, l.num_windows());
    assert!(padded > 0);
}

#[test]
fn frames_whole_episodes_replacement_and_selection() {
    let d = tempfile::tempdir().unwrap();
    let mut c = collector(d.path(), "PixelMine-v0", "size=16,max_steps=9", Some(2));
    for s in 0..5u64 {
        c.reset(Some(s)).unwrap();
        for a in 0..(5 + s as i64) {
            c.step(&Value::Array(Array::scalar_i64(1 + a % 5))).unwrap();
        }
    }
    c.close().unwrap();
    let ds = Dataset::open(d.path()).unwrap();
    // Whole episodes: one window each, padded to the longest; rgb frames decoded from LZ4.
    let mut l = Loader::new(&ds, LoaderConfig { clip_len: 0, batch_size: 2, shuffle: false, ..Default::default() }).unwrap();
    assert_eq!((l.num_windows(), l.clip_len()), (5, 9));
    let rgb_bytes = 16 * 16 * 3;
    let mut n = 0;
    while let Some(b) = l.next_batch().unwrap() {
        let (name, rgb) = &b.observations[1];
        assert_eq!(name, "observations/rgb");
        assert_eq!(rgb.shape, [b.len(), 9, 16, 16, 3]);
        for (wi, &id) in i64s(&b.episode_id).iter().enumerate() {
            let ep = ds.read_episode(id as u64).unwrap();
            let t = ep.rewards.len();
            let want = &ep.observations[1].1.data[..t * rgb_bytes];
            assert_eq!(&rgb.data[wi * 9 * rgb_bytes..wi * 9 * rgb_bytes + t * rgb_bytes], want);
            // The numeric leaf beside the frames (int32[8]) comes out of the row table intact.
            let (name, inv) = &b.observations[0];
            assert_eq!((name.as_str(), &inv.shape[..]), ("observations/inventory", &[b.len(), 9, 8][..]));
            assert_eq!(&inv.data[wi * 9 * 32..wi * 9 * 32 + t * 32], &ep.observations[0].1.data[..t * 32]);
            assert!(inv.data[wi * 9 * 32 + t * 32..(wi + 1) * 9 * 32].iter().all(|&x| x == 0));
            n += 1;
        }
    }
    assert_eq!(n, 5);
    let mut r = Loader::new(&ds, LoaderConfig { clip_len: 3, batch_size: 4, replacement: true, ..Default::default() }).unwrap();
    assert_eq!(epoch(&mut r).len(), r.num_windows());
    let only_long = Loader::new(
        &ds,
        LoaderConfig { clip_len: 3, select: Selection { min_length: Some(8), ..Default::default() }, ..Default::default() },
    )
    .unwrap();
    assert!(only_long.episodes().iter().all(|e| e.length >= 8) && only_long.episodes().len() == 2);
}

#[test]
fn a_dataset_without_windows_ends_every_epoch_at_once() {
    let d = tempfile::tempdir().unwrap();
    cartpole(d.path());
    let mut l = Loader::open(d.path(), LoaderConfig { clip_len: 10_000, ..cfg(4) }).unwrap();
    assert_eq!((l.num_windows(), l.batches_per_epoch()), (0, 0));
    for e in 1..=3 {
        assert!(l.next_batch().unwrap().is_none());
        assert_eq!(l.state(), LoaderState { epoch: e, batches: 0 });
    }
}

#[test]
fn epochs_follow_each_other_from_one_pool() {
    let d = tempfile::tempdir().unwrap();
    cartpole(d.path());
    for drop_last in [false, true] {
        let c = LoaderConfig { drop_last, prefetch_batches: 1, threads: 2, ..cfg(5) };
        let mut l = Loader::open(d.path(), c.clone()).unwrap();
        let per_epoch = l.batches_per_epoch();
        let mut epochs = Vec::new();
        for e in 0..4u64 {
            let mut batches = 0;
            let mut seen = Vec::new();
            while let Some(b) = l.next_batch().unwrap() {
                assert_eq!(b.index, batches);
                seen.extend(keys(b));
                batches += 1;
            }
            assert_eq!(batches, per_epoch, "epoch {e}");
            assert_eq!(l.state(), LoaderState { epoch: e + 1, batches: 0 });
            epochs.push(seen);
        }
        // Each epoch equals a fresh loader's delivery of it: running ahead into the next
        // epoch while the consumer finishes one changes nothing that is delivered.
        for (e, seen) in epochs.iter().enumerate() {
            let mut fresh = Loader::open(d.path(), c.clone()).unwrap();
            fresh.restore(LoaderState { epoch: e as u64, batches: 0 });
            assert_eq!(&epoch(&mut fresh), seen);
            let want = if drop_last { l.num_windows() / 5 * 5 } else { l.num_windows() };
            assert_eq!(seen.len(), want);
            // And equals the published order of that epoch.
            let published: Vec<(i64, i64)> = l
                .epoch_order(e as u64)
                .iter()
                .map(|&i| l.windows()[i as usize])
                .map(|w| (l.episodes()[w.episode as usize].id as i64, w.start as i64))
                .collect();
            assert_eq!(&published[..want], &seen[..]);
        }
    }
}

/// Issue 4: fields are kept narrower in memory when their values allow (int64 actions
/// in a byte, float64 rewards as float32 when exact), and must come out bit for bit as
/// recorded — and stay wide when one value does not fit.
#[test]
fn issue4_narrowed_fields_come_out_bit_exact() {
    for (env_id, continuous) in [("Pendulum-v1", true), ("MountainCar-v0", false), ("Acrobot-v1", false)] {
        let d = tempfile::tempdir().unwrap();
        let mut c = collector(d.path(), env_id, "", Some(2));
        for s in 0..3u64 {
            c.reset(Some(s)).unwrap();
            for i in 0..40i64 {
                // Pendulum's rewards are arbitrary float64s (kept wide); the others' are
                // -1.0/0.0 (kept as float32) and their Discrete actions fit a byte.
                let a = if continuous {
                    Value::Array(Array::from_f32(&[1], &[((i * 7 + s as i64) % 5) as f32 * 0.37 - 0.7]))
                } else {
                    Value::Array(Array::scalar_i64((i + s as i64) % 3))
                };
                let (_, o) = c.step(&a).unwrap();
                if o.terminated || o.truncated {
                    break;
                }
            }
        }
        c.close().unwrap();
        let ds = Dataset::open(d.path()).unwrap();
        let mut l = Loader::new(&ds, LoaderConfig { clip_len: 8, stride: 5, batch_size: 3, ..Default::default() }).unwrap();
        let mut checked = 0;
        while let Some(b) = l.next_batch().unwrap() {
            for (wi, (&id, &s)) in i64s(&b.episode_id).iter().zip(&i64s(&b.step)).enumerate() {
                let ep = ds.read_episode(id as u64).unwrap();
                let s = s as usize;
                for (got, want) in b.observations.iter().zip(&ep.observations).chain(b.actions.iter().zip(&ep.actions)) {
                    let row = got.1.data.len() / (b.len() * 8);
                    assert_eq!(&got.1.data[wi * 8 * row..(wi + 1) * 8 * row], &want.1.data[s * row..(s + 8) * row], "{env_id} {}", got.0);
                }
                for k in 0..8 {
                    let r = f64::from_ne_bytes(b.rewards.data[(wi * 8 + k) * 8..(wi * 8 + k + 1) * 8].try_into().unwrap());
                    assert_eq!(r.to_bits(), ep.rewards[s + k].to_bits(), "{env_id} reward");
                }
                checked += 1;
            }
        }
        assert!(checked > 5, "{env_id}: {checked} windows");
    }
}

/// A dataset still being written: the loader sees what is committed, and `refresh`
/// takes in what was committed since — from the next epoch, so the epoch in progress
/// still delivers each of its windows exactly once.
#[test]
fn refresh_takes_in_episodes_committed_since_from_the_next_epoch() {
    let d = tempfile::tempdir().unwrap();
    let mut c = collector(d.path(), "CartPole-v1", "", None);
    let episodes = |c: &mut Collector, seeds: std::ops::Range<u64>| {
        for s in seeds {
            c.reset(Some(s)).unwrap();
            let mut t = 0i64;
            while !c.step_discrete(if t < 12 { t % 2 } else { 1 }).unwrap().terminated {
                t += 1;
            }
        }
        c.save().unwrap();
    };
    episodes(&mut c, 0..6);
    let mut l = Loader::open(d.path(), cfg(4)).unwrap();
    assert_eq!(l.episodes().len(), 6);
    let before: BTreeSet<(i64, i64)> = l.windows().iter().map(|w| (l.episodes()[w.episode as usize].id as i64, w.start as i64)).collect();
    // Half an epoch, then more episodes are committed (the writer stays open) and seen.
    let mut first = Vec::new();
    for _ in 0..3 {
        first.extend(keys(l.next_batch().unwrap().unwrap()));
    }
    episodes(&mut c, 6..10);
    assert_eq!(l.refresh().unwrap(), 4);
    first.extend(epoch(&mut l));
    assert_eq!(first.len(), before.len());
    assert_eq!(first.iter().copied().collect::<BTreeSet<_>>(), before, "the epoch in progress keeps its windows");
    assert_eq!(l.episodes().len(), 10);
    let after = epoch(&mut l);
    assert_eq!(after.len(), l.num_windows());
    let all: BTreeSet<_> = after.iter().copied().collect();
    assert_eq!(all.len(), after.len());
    assert!(all.is_superset(&before) && all.len() > before.len());
    c.close().unwrap();
    // At an epoch boundary a refresh applies at once; with nothing new it adds nothing.
    assert_eq!(l.refresh().unwrap(), 0);
    assert_eq!(epoch(&mut l).len(), l.num_windows());
}

/// Recorded agent states come back with the episode, and each window carries the
/// state going into its first step: the one left after the step before, zeros at an
/// episode's start (and for an agent that kept none).
#[test]
fn windows_carry_the_recorded_recurrent_state_going_in() {
    use rollway_core::{EpisodeResult, Layout, RowMut, RowRef, Rows, Trajectory};
    let d = tempfile::tempdir().unwrap();
    let mut env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
    let spec = env.spec().clone();
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let w = DatasetWriter::create(d.path(), &spec, "t", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
    // Episode 0 keeps a 3-float state; 1 keeps none; 2 starts keeping one at its third step.
    let state = |i: u64, k: usize| -> Vec<f32> {
        match i {
            1 => vec![],
            2 if k < 2 => vec![],
            _ => vec![k as f32, i as f32 * 10.0, 0.5],
        }
    };
    for i in 0..3u64 {
        env.reset(Some(i), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
        let mut t = Trajectory { obs: obs.row(0).to_vec(), ..Default::default() };
        for k in 0..20 {
            act.row_mut(0).copy_from_slice(&((k % 2) as i64).to_ne_bytes());
            let o = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
            t.obs.extend_from_slice(obs.row(0));
            t.actions.extend_from_slice(act.row(0));
            t.rewards.push(o.reward);
            t.terminations.push(o.terminated);
            t.truncations.push(!o.terminated && k == 19);
            t.push_state(&state(i, k));
            if o.terminated {
                break;
            }
        }
        w.write(EpisodeResult::from_trajectory(i, i, t)).unwrap();
    }
    w.finish().unwrap();
    let ds = Dataset::open(d.path()).unwrap();
    assert!(ds.read_episode(0).unwrap().agent_state.is_some());
    let f32s = |a: &Array| a.data.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect::<Vec<f32>>();
    let want = |i: u64, k: usize| -> Vec<f32> {
        let mut s = state(i, k);
        s.resize(3, 0.0);
        s
    };
    for i in 0..3u64 {
        let ep = ds.read_episode(i).unwrap();
        // A shard where no agent kept a state stores none: read as zeros.
        let t = ep.rewards.len();
        let got = match &ep.agent_state {
            Some(st) => {
                assert_eq!(st.shape, [t, 3]);
                f32s(st)
            }
            None => vec![0.0; t * 3],
        };
        for k in 0..ep.rewards.len() {
            assert_eq!(&got[k * 3..k * 3 + 3], &want(i, k)[..], "episode {i} step {k}");
        }
    }
    let mut l = Loader::new(&ds, LoaderConfig { clip_len: 4, stride: 3, batch_size: 5, ..Default::default() }).unwrap();
    let mut n = 0;
    while let Some(b) = l.next_batch().unwrap() {
        assert_eq!(b.state.shape, [b.len(), 3]);
        let got = f32s(&b.state);
        for (wi, (&id, &s)) in i64s(&b.episode_id).iter().zip(&i64s(&b.step)).enumerate() {
            let going_in = if s == 0 { vec![0.0; 3] } else { want(id as u64, s as usize - 1) };
            assert_eq!(&got[wi * 3..wi * 3 + 3], &going_in[..], "episode {id} window at {s}");
            n += 1;
        }
    }
    assert_eq!(n, l.num_windows());
    // A dataset without agent states: an empty state field.
    let c = tempfile::tempdir().unwrap();
    cartpole(c.path());
    let mut l = Loader::open(c.path(), cfg(4)).unwrap();
    let b = l.next_batch().unwrap().unwrap();
    assert_eq!((b.state.shape.clone(), b.state.data.len()), (vec![4, 0], 0));
}

/// Lent batches (what Python's numpy views hold) are never reused while held, come
/// back to the pool when dropped, and deliver the same epoch as `next_batch`.
#[test]
fn lent_batches_are_never_overwritten_while_held() {
    let dir = tempfile::tempdir().unwrap();
    cartpole(dir.path());
    let cfg = LoaderConfig { prefetch_batches: 1, threads: 1, ..cfg(4) };
    let mut plain = Loader::open(dir.path(), cfg.clone()).unwrap();
    let want = epoch(&mut plain);
    let mut l = Loader::open(dir.path(), cfg).unwrap();
    let mut held = Vec::new();
    while let Some(b) = l.next_lent().unwrap() {
        let copy = keys(&b);
        held.push((b, copy));
    }
    assert!(held.len() > 3, "more batches held than the pool has buffers");
    for (b, copy) in &held {
        assert_eq!(&keys(b), copy, "a held batch was overwritten");
    }
    assert_eq!(held.iter().flat_map(|(_, k)| k.clone()).collect::<Vec<_>>(), want);
    drop(held);
    // Dropped batches went back: the next epoch runs on the pool's own buffers.
    let mut seen = BTreeSet::new();
    while let Some(b) = l.next_lent().unwrap() {
        seen.insert(b.rewards.data.as_ptr() as usize);
    }
    assert!(seen.len() <= 3, "{} distinct buffers for a pool of 3", seen.len());
}
