//! Golden tests: our classic-control envs against transitions recorded from the
//! real Gymnasium (`tests/golden/make_golden.py`).
//!
//! Each recorded episode is replayed from Gymnasium's exact start state (the
//! `state` reset option) with the recorded actions, twice: once through
//! `rollway_envs::make` (what users get, time limit included), checking
//! observations, rewards and flags; once through the concrete env in a
//! `TimeLimit`, also checking the float64 physical state after every step. All
//! comparisons are exact. The one allowance: Acrobot's reset observation, where
//! numpy evaluates cos/sin in float32 with its own (not correctly rounded) code,
//! may differ by one float32 ulp (see `acrobot.rs`).

use crate::common;
use rollway_core::{DType, Env, Info, Layout, Params, RowMut, RowRef, Rows, Space, TimeLimit};
use rollway_envs::{acrobot::Acrobot, cartpole::CartPole, mountain_car::MountainCar, pendulum::Pendulum};

use common::{f64_of, f64s, load};
use serde_json::Value as Json;

/// Float32 values written as JSON numbers: any parse error is far below float32 precision.
fn f32s(j: &Json) -> Vec<f32> {
    j.as_array().expect("list").iter().map(|x| x.as_f64().expect("number") as f32).collect()
}

fn check_space(ours: &Space, theirs: &Json, what: &str) {
    match (ours, theirs["type"].as_str()) {
        (Space::Discrete { n, start }, Some("Discrete")) => {
            assert_eq!(Some(*n), theirs["n"].as_u64(), "{what}: n");
            assert_eq!(Some(*start), theirs["start"].as_i64(), "{what}: start");
        }
        (Space::Box(b), Some("Box")) => {
            assert_eq!(Some(b.dtype), theirs["dtype"].as_str().and_then(|d| DType::parse(d).ok()), "{what}: dtype");
            let shape: Vec<usize> = theirs["shape"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect();
            assert_eq!(b.shape, shape, "{what}: shape");
            assert_eq!(b.low, f64s(&theirs["low"]), "{what}: low");
            assert_eq!(b.high, f64s(&theirs["high"]), "{what}: high");
        }
        _ => panic!("{what}: ours {} vs gymnasium {theirs}", ours.describe()),
    }
}

/// True when `a` and `b` are at most one float32 ulp apart.
fn within_one_ulp(a: f32, b: f32) -> bool {
    a == b || (a.signum() == b.signum() && a.to_bits().abs_diff(b.to_bits()) <= 1)
}

/// Replays every episode of `golden` on envs from `new_env`; `state_of` reads the
/// physical state when the env type allows it.
fn replay<E: Env>(golden: &Json, mut new_env: impl FnMut() -> E, state_of: impl Fn(&E) -> Option<Vec<f64>>) -> usize {
    let id = golden["env_id"].as_str().unwrap();
    let mut checked = 0;
    for ep in golden["episodes"].as_array().unwrap() {
        let name = format!("{id} episode `{}`", ep["name"].as_str().unwrap());
        let mut env = new_env();
        let spec = env.spec().clone();
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let start = f64s(&ep["reset_state"]);
        let mut options = Info::new();
        options.insert("state", start.clone());
        env.reset(ep["seed"].as_u64(), Some(&options), RowMut::new(&ol, obs.row_mut(0))).unwrap();
        if let Some(state) = state_of(&env) {
            assert_eq!(state, start, "{name}: start state");
        }
        if !ep["reset_obs"].is_null() {
            let ours = RowRef::new(&ol, obs.row(0)).leaf::<f32>(0).to_vec();
            let theirs = f32s(&ep["reset_obs"]);
            let ok = if id == "Acrobot-v1" { ours.iter().zip(&theirs).all(|(a, b)| within_one_ulp(*a, *b)) } else { ours == theirs };
            assert!(ok, "{name}: reset obs {ours:?} vs {theirs:?}");
        }
        for (t, step) in ep["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name}, step {t}");
            if let Some(state) = state_of(&env) {
                assert_eq!(state, f64s(&step["s"]), "{at}: state before");
            }
            let mut row = RowMut::new(&al, act.row_mut(0));
            match &step["a"] {
                Json::Array(_) => row.leaf_mut::<f32>(0).copy_from_slice(&f32s(&step["a"])),
                a => row.set_discrete(0, a.as_i64().unwrap()),
            }
            let out = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
            if let Some(state) = state_of(&env) {
                assert_eq!(state, f64s(&step["s2"]), "{at}: state after");
            }
            assert_eq!(RowRef::new(&ol, obs.row(0)).leaf::<f32>(0), f32s(&step["obs"]).as_slice(), "{at}: obs");
            assert_eq!(out.reward, f64_of(&step["r"]), "{at}: reward");
            assert_eq!(out.terminated, step["term"].as_bool().unwrap(), "{at}: terminated");
            assert_eq!(out.truncated, step["trunc"].as_bool().unwrap(), "{at}: truncated");
            checked += 1;
        }
    }
    checked
}

/// Checks spec and spaces, then replays through `make` and through the concrete env.
fn golden<E: Env>(id: &str, new_env: impl Fn() -> E, state_of: impl Fn(&E) -> Option<Vec<f64>>) {
    let g = load(id);
    let made = rollway_envs::make(id, &Params::new()).unwrap();
    let spec = made.spec().clone();
    assert_eq!(spec.id, id);
    assert_eq!(spec.max_episode_steps, g["max_episode_steps"].as_u64(), "{id}: max_episode_steps");
    assert_eq!(spec.reward_threshold, g["reward_threshold"].as_f64(), "{id}: reward_threshold");
    assert_eq!(spec.render_fps.map(u64::from), g["render_fps"].as_u64(), "{id}: render_fps");
    check_space(&spec.observation_space, &g["observation_space"], &format!("{id} observation space"));
    check_space(&spec.action_space, &g["action_space"], &format!("{id} action space"));

    let through_make = replay(&g, || rollway_envs::make(id, &Params::new()).unwrap(), |_| None);
    let max = spec.max_episode_steps.unwrap();
    let direct = replay(&g, || TimeLimit::new(new_env(), max), |e| state_of(e.inner()));
    assert_eq!(through_make, direct);
    assert!(direct > 300, "{id}: only {direct} transitions checked");
}

#[test]
fn cartpole_matches_gymnasium() {
    golden("CartPole-v1", || CartPole::new(false).unwrap(), |e| e.state().map(Vec::from));
}

#[test]
fn mountain_car_matches_gymnasium() {
    golden("MountainCar-v0", || MountainCar::new(0.0).unwrap(), |e| e.state().map(Vec::from));
}

#[test]
fn acrobot_matches_gymnasium() {
    golden("Acrobot-v1", || Acrobot::new().unwrap(), |e| e.state().map(Vec::from));
}

#[test]
fn pendulum_matches_gymnasium() {
    golden("Pendulum-v1", || Pendulum::new(10.0).unwrap(), |e| e.state().map(Vec::from));
}
