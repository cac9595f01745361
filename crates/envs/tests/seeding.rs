//! Seeding tests: our numpy-exact random stream and seeded env resets against
//! vectors recorded from the real numpy and Gymnasium (`tests/golden/make_seeding.py`).
//!
//! For every recorded seed: the raw PCG64 outputs of `SeedSequence(seed)`, a
//! sequence of `Generator.uniform` calls, and for each classic-control env the
//! observation and float64 state after `reset(seed, options)`, `reset(seed)` and a
//! following unseeded `reset()` (which continues the stream), plus 20 CartPole
//! steps from the seeded start. All comparisons are exact; the one allowance is
//! Acrobot's reset observation (cos/sin of the float32 state, see `acrobot.rs`),
//! which may be one float32 ulp off while its state matches exactly.

use crate::common;
use rollway_core::{Env, Info, Layout, Params, RowMut, RowRef, Rows};
use rollway_envs::np_random::{seed_words, NpRandom};
use rollway_envs::{acrobot::Acrobot, cartpole::CartPole, mountain_car::MountainCar, pendulum::Pendulum};

use common::{f64_of, f64s, load};
use serde_json::Value as Json;

/// Float32 observation values, written as the `repr` of their exact float64 widening.
fn f32s(j: &Json) -> Vec<f32> {
    f64s(j).into_iter().map(|x| x as f32).collect()
}

fn u64_of(j: &Json) -> u64 {
    j.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a u64 string: {j}"))
}

fn words(j: &Json) -> Vec<u32> {
    j.as_array().expect("list").iter().map(|w| u32::try_from(w.as_u64().unwrap()).unwrap()).collect()
}

fn seeds(g: &Json) -> impl Iterator<Item = (u64, &Json)> {
    g["seeds"].as_array().unwrap().iter().map(|s| (u64_of(&s["seed"]), s))
}

#[test]
fn raw_outputs_match_numpy() {
    let g = load("seeding");
    for (seed, s) in seeds(&g) {
        assert_eq!(seed_words(seed), words(&s["words"]), "seed {seed}: entropy words");
        let mut r = NpRandom::new(seed);
        let ours: Vec<u64> = s["next_uint64"].as_array().unwrap().iter().map(|_| r.next_u64()).collect();
        let theirs: Vec<u64> = s["next_uint64"].as_array().unwrap().iter().map(u64_of).collect();
        assert_eq!(ours, theirs, "seed {seed}");
    }
    for b in g["big_entropy"].as_array().unwrap() {
        let mut r = NpRandom::from_entropy_words(&words(&b["words"]));
        let theirs: Vec<u64> = b["next_uint64"].as_array().unwrap().iter().map(u64_of).collect();
        let ours: Vec<u64> = theirs.iter().map(|_| r.next_u64()).collect();
        assert_eq!(ours, theirs, "entropy {}", b["entropy"]);
    }
}

#[test]
fn uniform_draws_match_numpy() {
    let g = load("seeding");
    for (seed, s) in seeds(&g) {
        let mut r = NpRandom::new(seed);
        for (k, call) in s["uniform"].as_array().unwrap().iter().enumerate() {
            let (low, high) = (f64s(&call["low"]), f64s(&call["high"]));
            let theirs = f64s(&call["values"]);
            // Scalar bounds repeat for every element; array bounds go element by element.
            let ours: Vec<f64> = (0..theirs.len()).map(|i| r.uniform(low[i % low.len()], high[i % high.len()])).collect();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&ours), bits(&theirs), "seed {seed}, uniform call {k}: {ours:?} vs {theirs:?}");
        }
    }
}

/// True when `a` and `b` are at most one float32 ulp apart.
fn within_one_ulp(a: f32, b: f32) -> bool {
    a == b || (a.signum() == b.signum() && a.to_bits().abs_diff(b.to_bits()) <= 1)
}

/// One env under test: built through `make` (what users get) and concrete (for its state).
struct Probe<E: Env> {
    made: Box<dyn Env>,
    env: E,
    ol: Layout,
    al: Layout,
    obs: Rows,
    act: Rows,
}

impl<E: Env> Probe<E> {
    fn new(id: &str, env: E) -> Probe<E> {
        let made = rollway_envs::make(id, &Params::new()).unwrap();
        let (ol, al) = (Layout::of(&env.spec().observation_space), Layout::of(&env.spec().action_space));
        let (obs, act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        Probe { made, env, ol, al, obs, act }
    }

    /// Resets both envs alike; returns the concrete env's observation after
    /// checking that `make`'s is bit-identical.
    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>) -> Vec<f32> {
        self.made.reset(seed, options, RowMut::new(&self.ol, self.obs.row_mut(0))).unwrap();
        let via_make = RowRef::new(&self.ol, self.obs.row(0)).leaf::<f32>(0).to_vec();
        self.env.reset(seed, options, RowMut::new(&self.ol, self.obs.row_mut(0))).unwrap();
        let direct = RowRef::new(&self.ol, self.obs.row(0)).leaf::<f32>(0).to_vec();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&via_make), bits(&direct), "make and concrete env disagree");
        direct
    }

    fn step(&mut self, a: i64) -> (Vec<f32>, f64, bool) {
        RowMut::new(&self.al, self.act.row_mut(0)).set_discrete(0, a);
        let out = self.env.step(RowRef::new(&self.al, self.act.row(0)), RowMut::new(&self.ol, self.obs.row_mut(0))).unwrap();
        (RowRef::new(&self.ol, self.obs.row(0)).leaf::<f32>(0).to_vec(), out.reward, out.terminated)
    }
}

fn options_of(j: &Json) -> Info {
    let mut o = Info::new();
    for (k, v) in j.as_object().unwrap() {
        o.insert(k, v.clone());
    }
    o
}

/// Checks one env's three recorded resets for every seed; returns how many
/// reset observations needed the one-ulp allowance.
fn check_env<E: Env>(id: &str, new_env: impl Fn() -> E, state_of: impl Fn(&E) -> Vec<f64>) -> usize {
    let g = load("seeding");
    let mut ulp_off = 0;
    for (seed, s) in seeds(&g) {
        let rec = &s["envs"][id];
        assert!(rec.is_object(), "{id}: no record for seed {seed}");
        let mut p = Probe::new(id, new_env());
        let opts = options_of(&rec["with_options"]["options"]);
        let cases = [("with_options", Some(seed), Some(&opts)), ("seeded", Some(seed), None), ("unseeded_after", None, None)];
        for (name, seed_arg, options) in cases {
            let at = format!("{id}, seed {seed}, {name}");
            let ours = p.reset(seed_arg, options);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&state_of(&p.env)), bits(&f64s(&rec[name]["state"])), "{at}: state");
            let theirs = f32s(&rec[name]["obs"]);
            if id == "Acrobot-v1" && ours != theirs {
                assert!(ours.iter().zip(&theirs).all(|(a, b)| within_one_ulp(*a, *b)), "{at}: obs {ours:?} vs {theirs:?}");
                ulp_off += 1;
            } else {
                assert_eq!(ours, theirs, "{at}: obs");
            }
        }
    }
    ulp_off
}

#[test]
fn cartpole_resets_match_gymnasium() {
    check_env("CartPole-v1", || CartPole::new(false).unwrap(), |e| e.state().unwrap().to_vec());
}

#[test]
fn mountain_car_resets_match_gymnasium() {
    check_env("MountainCar-v0", || MountainCar::new(0.0).unwrap(), |e| e.state().unwrap().to_vec());
}

#[test]
fn acrobot_resets_match_gymnasium() {
    let off = check_env("Acrobot-v1", || Acrobot::new().unwrap(), |e| e.state().unwrap().to_vec());
    // The allowance is for rare float32 cos/sin roundings, not a blanket pass.
    assert!(off <= 3, "{off} Acrobot reset observations were one ulp off");
}

#[test]
fn pendulum_resets_match_gymnasium() {
    check_env("Pendulum-v1", || Pendulum::new(10.0).unwrap(), |e| e.state().unwrap().to_vec());
}

#[test]
fn cartpole_episodes_match_gymnasium_from_the_seed() {
    let g = load("seeding");
    for (seed, s) in seeds(&g) {
        let mut p = Probe::new("CartPole-v1", CartPole::new(false).unwrap());
        p.reset(Some(seed), None);
        for (t, step) in s["cartpole_steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("CartPole-v1, seed {seed}, step {t}");
            let (obs, reward, terminated) = p.step(step["a"].as_i64().unwrap());
            assert_eq!(p.env.state().unwrap().to_vec(), f64s(&step["state"]), "{at}: state");
            assert_eq!(obs, f32s(&step["obs"]), "{at}: obs");
            assert_eq!(reward, f64_of(&step["r"]), "{at}: reward");
            assert_eq!(terminated, step["term"].as_bool().unwrap(), "{at}: terminated");
        }
    }
}

#[test]
fn unseeded_default_is_seed_zero() {
    // Gymnasium seeds from OS entropy here; rollway keeps runs reproducible.
    let mut a = Probe::new("CartPole-v1", CartPole::new(false).unwrap());
    let first = a.reset(None, None);
    assert_eq!(first, a.reset(Some(0), None));
}
