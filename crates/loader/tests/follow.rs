//! Follow mode: a loader sampling a dataset that a writer keeps filling (the replay
//! buffer of a training loop) — rounds take in new commits, and the capacity,
//! staleness and reuse bounds hold.

use std::collections::BTreeSet;

use rand::SeedableRng;
use rollway_core::{Array, DType, EpisodeResult, Layout, Params, RowMut, RowRef, Rows, StepColumn, Trajectory};
use rollway_loader::{Follow, Loader, LoaderConfig, Selection};
use rollway_store::{DatasetWriter, WriterConfig};

const LEN: usize = 12;
const CLIP: usize = 4;
/// Windows per episode: starts 0, 4, 8.
const WINS: usize = LEN / CLIP;

/// A writer of CartPole episodes of `LEN` random steps, each committed as it is written.
struct Buffer {
    w: DatasetWriter,
    env: Box<dyn rollway_core::Env>,
    next: u64,
}

impl Buffer {
    fn new(dir: &std::path::Path) -> Buffer {
        let env = rollway_envs::make("CartPole-v1", &Params::default()).unwrap();
        let w = DatasetWriter::create(dir, env.spec(), "policy", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
        Buffer { w, env, next: 0 }
    }

    /// Writes and commits one episode whose actions `version` chose (None: unversioned).
    fn add(&mut self, version: Option<u64>) -> u64 {
        let id = self.write(version);
        self.w.flush().unwrap();
        id
    }

    /// [`Buffer::add`] without the commit.
    fn write(&mut self, version: Option<u64>) -> u64 {
        let spec = self.env.spec().clone();
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(self.next);
        self.env.reset(Some(self.next), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
        let mut t = Trajectory { obs: obs.row(0).to_vec(), ..Default::default() };
        for k in 0..LEN {
            al.sample_row(&mut rng, act.row_mut(0));
            // CartPole may end early under random actions: the steps are recorded, not replayed.
            let _ = self.env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0)));
            t.obs.extend_from_slice(obs.row(0));
            t.actions.extend_from_slice(act.row(0));
            t.rewards.push(1.0);
            t.terminations.push(false);
            t.truncations.push(k + 1 == LEN);
        }
        let id = self.next;
        if let Some(v) = version {
            t.versions = vec![v; LEN];
            // Values that say where they were recorded: episode, step (and column).
            let logprob = (0..LEN).map(|k| (id * 100 + k as u64) as f32).collect();
            let logits = (0..2 * LEN).map(|k| -((id * 1000 + k as u64) as f32)).collect();
            t.extras = vec![
                StepColumn { name: "logprob".into(), shape: vec![], values: logprob },
                StepColumn { name: "logits".into(), shape: vec![2], values: logits },
            ];
        }
        self.w.write(EpisodeResult::from_trajectory(id, id, t)).unwrap();
        self.next += 1;
        id
    }
}

fn follower(dir: &std::path::Path, follow: Follow, select: Selection) -> Loader {
    let cfg = LoaderConfig {
        clip_len: CLIP,
        stride: CLIP,
        batch_size: 2,
        threads: 2,
        seed: 3,
        follow: Some(follow),
        select,
        ..Default::default()
    };
    Loader::open(dir, cfg).unwrap()
}

fn i64s(a: &Array) -> Vec<i64> {
    a.data.chunks_exact(8).map(|c| i64::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// The (episode id, first step) of every window of the next round; `None` when no
/// window is eligible. Reads exactly one round, so nothing of the next one is started.
fn round(l: &mut Loader) -> Option<Vec<(i64, i64)>> {
    let mut keys = Vec::new();
    let mut take = |b: &rollway_loader::Batch| keys.extend(i64s(&b.episode_id).into_iter().zip(i64s(&b.step)));
    take(l.next_batch().unwrap()?);
    for _ in 1..l.batches_per_epoch() {
        take(l.next_batch().unwrap().expect("a round runs to its end"));
    }
    Some(keys)
}

fn ids(keys: &[(i64, i64)]) -> BTreeSet<i64> {
    keys.iter().map(|k| k.0).collect()
}

#[test]
fn an_empty_buffer_gives_nothing_until_the_first_commit() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    let mut l = follower(d.path(), Follow::default(), Selection::default());
    assert!(l.next_batch().unwrap().is_none());
    assert!(l.next_batch().unwrap().is_none(), "asking again is fine");
    b.add(None);
    let r = round(&mut l).unwrap();
    assert_eq!(r.len(), WINS);
    assert_eq!(ids(&r), BTreeSet::from([0]));
}

#[test]
fn rounds_take_in_commits_as_they_land_and_cover_every_window_once() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    for _ in 0..3 {
        b.add(Some(0));
    }
    let mut l = follower(d.path(), Follow::default(), Selection::default());
    let r0 = round(&mut l).unwrap();
    assert_eq!(r0.len(), 3 * WINS);
    assert_eq!(r0.iter().collect::<BTreeSet<_>>().len(), r0.len(), "each window once a round");
    b.add(Some(1));
    b.add(Some(1));
    let r1 = round(&mut l).unwrap();
    assert_eq!(r1.len(), 5 * WINS);
    assert_eq!(ids(&r1), (0..5).collect());
    // Without a reuse bound rounds go on over the same windows, shuffled anew.
    let r2 = round(&mut l).unwrap();
    assert_eq!(r2.iter().collect::<BTreeSet<_>>(), r1.iter().collect::<BTreeSet<_>>());
    assert_ne!(r2, r1);
}

#[test]
fn capacity_keeps_only_the_newest_episodes_or_steps() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    for _ in 0..6 {
        b.add(Some(0));
    }
    let by_eps = Selection { last_episodes: Some(2), ..Default::default() };
    assert_eq!(ids(&round(&mut follower(d.path(), Follow::default(), by_eps)).unwrap()), BTreeSet::from([4, 5]));
    // 30 steps: the newest two episodes hold 24, so a third (the oldest kept) joins.
    let by_steps = Selection { last_steps: Some(30), ..Default::default() };
    let mut l = follower(d.path(), Follow::default(), by_steps);
    assert_eq!(ids(&round(&mut l).unwrap()), BTreeSet::from([3, 4, 5]));
    b.add(Some(0));
    assert_eq!(ids(&round(&mut l).unwrap()), BTreeSet::from([4, 5, 6]), "the capacity slides with new commits");
}

#[test]
fn the_staleness_bound_skips_episodes_older_than_the_learners_version_minus_the_lag() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    b.add(None); // counts as version 0
    for v in 0..4 {
        b.add(Some(v));
    }
    let mut l = follower(d.path(), Follow { max_version_lag: Some(1), ..Default::default() }, Selection::default());
    assert_eq!(ids(&round(&mut l).unwrap()), (0..5).collect(), "version 0 - 1 keeps everything");
    l.set_version(3);
    assert_eq!(ids(&round(&mut l).unwrap()), BTreeSet::from([3, 4]), "versions 2 and 3");
    l.set_version(9);
    assert!(l.next_batch().unwrap().is_none(), "everything is too old");
    b.add(Some(8));
    assert_eq!(ids(&round(&mut l).unwrap()), BTreeSet::from([5]));
}

#[test]
fn the_reuse_bound_delivers_each_window_in_at_most_that_many_rounds() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    for _ in 0..3 {
        b.add(Some(0));
    }
    let mut l = follower(d.path(), Follow { max_reuse: Some(2), ..Default::default() }, Selection::default());
    let (r0, r1) = (round(&mut l).unwrap(), round(&mut l).unwrap());
    assert_eq!((r0.len(), r1.len()), (3 * WINS, 3 * WINS));
    assert!(l.next_batch().unwrap().is_none(), "every window used twice");
    b.add(Some(0));
    assert_eq!(ids(&round(&mut l).unwrap()), BTreeSet::from([3]), "only the new episode's windows are left");
}

#[test]
fn round_windows_caps_a_round_and_with_single_use_covers_everything_once() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    for _ in 0..4 {
        b.add(Some(0));
    }
    let follow = Follow { max_reuse: Some(1), round_windows: Some(5), ..Default::default() };
    let mut l = follower(d.path(), follow, Selection::default());
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    while let Some(r) = round(&mut l) {
        sizes.push(r.len());
        seen.extend(r);
    }
    assert_eq!(sizes, [5, 5, 2]);
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 4 * WINS, "every window exactly once");
}

#[test]
fn issue72_round_windows_draws_each_round_from_every_eligible_window() {
    let (episodes, rounds, per_round) = (100, 50, 8);
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    for _ in 0..episodes {
        b.write(Some(0));
    }
    b.w.flush().unwrap();
    let follow = Follow { round_windows: Some(per_round), ..Default::default() };
    let mut l = follower(d.path(), follow, Selection::default());
    let mut seen = BTreeSet::new();
    for _ in 0..rounds {
        let r = round(&mut l).unwrap();
        assert_eq!(r.len(), per_round);
        seen.extend(ids(&r));
    }
    // Uniform draws of 400 windows over 100 equal episodes meet 100·(1 − 0.99^400) ≈ 98.2
    // distinct episodes (σ ≈ 1.3); the draw that kept the index's head met 8 or so.
    let draws = (rounds * per_round) as f64;
    let expected = episodes as f64 * (1.0 - (1.0 - 1.0 / episodes as f64).powf(draws));
    assert!(seen.len() as f64 >= expected - 8.0, "{} distinct episodes of {episodes}, ~{expected:.1} expected", seen.len());
}

#[test]
fn batches_carry_the_recorded_extras_and_policy_versions_zeroed_on_padding() {
    let d = tempfile::tempdir().unwrap();
    let mut b = Buffer::new(d.path());
    for v in [3, 4, 5] {
        b.add(Some(v));
    }
    let cfg =
        LoaderConfig { clip_len: 5, stride: 5, pad: true, batch_size: 4, seed: 1, follow: Some(Follow::default()), ..Default::default() };
    let mut l = Loader::open(d.path(), cfg).unwrap();
    let f32s = |a: &Array| a.data.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
    let mut padded = 0;
    l.next_batch().unwrap().unwrap();
    for i in 0..l.batches_per_epoch() {
        let batch = if i == 0 { l.current().unwrap() } else { l.next_batch().unwrap().unwrap() };
        let n = batch.len();
        let (logprob, logits) = (&batch.extras[0], &batch.extras[1]);
        assert_eq!((logprob.0.as_str(), &logprob.1.shape[..]), ("logprob", &[n, 5][..]));
        assert_eq!((logits.0.as_str(), &logits.1.shape[..], batch.policy_version.dtype), ("logits", &[n, 5, 2][..], DType::U64));
        let (lp, lg) = (f32s(&logprob.1), f32s(&logits.1));
        let versions: Vec<u64> = batch.policy_version.data.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).collect();
        for (w, (id, start)) in i64s(&batch.episode_id).into_iter().zip(i64s(&batch.step)).enumerate() {
            for k in 0..5 {
                let (step, real) = (start as usize + k, start as usize + k < LEN);
                padded += usize::from(!real);
                let want = if real { (id as u64 * 100 + step as u64) as f32 } else { 0.0 };
                assert_eq!(lp[w * 5 + k], want, "window {w} step {k}");
                let want = if real { -((id as u64 * 1000 + 2 * step as u64 + 1) as f32) } else { 0.0 };
                assert_eq!(lg[(w * 5 + k) * 2 + 1], want);
                assert_eq!(versions[w * 5 + k], if real { 3 + id as u64 } else { 0 });
            }
        }
    }
    assert_eq!(padded, 3 * 3, "each episode's last window is padded");
    // Episodes without them give batches without them.
    let plain = tempfile::tempdir().unwrap();
    Buffer::new(plain.path()).add(None);
    let mut l = Loader::open(plain.path(), LoaderConfig { clip_len: 4, batch_size: 2, ..Default::default() }).unwrap();
    let batch = l.next_batch().unwrap().unwrap();
    assert!(batch.extras.is_empty() && batch.policy_version.shape == [0]);
}

#[test]
fn following_with_replacement_is_refused() {
    let d = tempfile::tempdir().unwrap();
    Buffer::new(d.path()).add(None);
    let cfg = LoaderConfig { replacement: true, follow: Some(Follow::default()), ..Default::default() };
    let e = Loader::open(d.path(), cfg).err().unwrap().to_string();
    assert!(e.contains("replacement") && e.contains("max_reuse"), "{e}");
}
