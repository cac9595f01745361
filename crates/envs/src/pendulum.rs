//! `Pendulum-v1`: Gymnasium 1.x's inverted pendulum swing-up, step for step.
//!
//! The state `(theta, theta_dot)` is float64; the observation is
//! `(cos theta, sin theta, theta_dot)` rounded to float32. Reset draws theta from
//! `[-pi, pi)` and theta_dot from `[-1, 1)` (reset options `x_init`/`y_init` change
//! the half-widths, as in Gymnasium; the stream is numpy's, so `reset(seed=s)` gives
//! Gymnasium's start state exactly). The rollway-only reset option `state` (two
//! numbers) starts from an exact state.
//!
//! Like Gymnasium, out-of-range torques are clipped to `[-2, 2]` rather than
//! refused; only NaN torques are an error, since they would poison the state.
//! Gymnasium mixes float32 and float64 here (numpy 2 keeps `python_float * float32`
//! in float32), and so do we: the torque terms are computed in float32.

use rollway_core::{DType, Env, EnvEntry, EnvSpec, Info, Params, Result, RowMut, RowRef, Space, StepOutcome};

use crate::classic::{self, np_pow2, np_pow2_f32, Classic};

/// Registry entry.
pub static ENTRY: EnvEntry = EnvEntry {
    id: "Pendulum-v1",
    summary: "Gymnasium pendulum swing-up (exact dynamics; Box(float32, [1]) torque, 200 steps)",
    params: &[("g", "gravitational acceleration (default 10.0)")],
    make,
};

fn make(p: &Params) -> Result<Box<dyn Env>> {
    p.expect_only(&["g"])?;
    Ok(Box::new(Pendulum::new(p.get("g", 10.0)?)?))
}

const MAX_SPEED: f64 = 8.0;
const MAX_TORQUE: f32 = 2.0;
/// Seconds per step.
const DT: f64 = 0.05;
const MASS: f64 = 1.0;
const LENGTH: f64 = 1.0;
const DEFAULT_X: f64 = std::f64::consts::PI;
const DEFAULT_Y: f64 = 1.0;

/// The pendulum env. `pub` so tests can set and read the physical state.
pub struct Pendulum {
    c: Classic<2>,
    g: f64,
}

impl Pendulum {
    /// A pendulum under gravity `g` (Gymnasium's default is 10).
    pub fn new(g: f64) -> Result<Pendulum> {
        let high = classic::f32_values(&[1.0, 1.0, MAX_SPEED]);
        let low = high.iter().map(|h| -h).collect();
        let max_torque = f64::from(MAX_TORQUE);
        let obs = Space::box_with(DType::F32, &[3], low, high)?;
        let act = Space::boxed(DType::F32, &[1], -max_torque, max_torque)?;
        Ok(Pendulum { c: Classic::new(ENTRY.id, obs, act, (200, 30, None)), g })
    }

    classic::physical_state!(2, "(theta, theta_dot)");

    fn write_obs(state: &[f64; 2], mut obs: RowMut<'_>) {
        let o = obs.leaf_mut::<f32>(0);
        o[0] = state[0].cos() as f32;
        o[1] = state[0].sin() as f32;
        o[2] = state[1] as f32;
    }
}

/// Gymnasium's `angle_normalize`: maps `x` into `[-pi, pi)` with numpy's float modulo.
#[inline]
fn angle_normalize(x: f64) -> f64 {
    use std::f64::consts::PI;
    classic::np_mod(x + PI, 2.0 * PI) - PI
}

impl Env for Pendulum {
    fn spec(&self) -> &EnvSpec {
        &self.c.spec
    }

    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        let state = self.c.reset(seed, options, |rng, id| {
            let x = classic::option_f64(options, "x_init", DEFAULT_X, id)?;
            let y = classic::option_f64(options, "y_init", DEFAULT_Y, id)?;
            // Bounds are `[-x, x]` and `[-y, y]`: numpy refuses negative or non-finite widths.
            classic::uniform_bounds(-x, x, id)?;
            classic::uniform_bounds(-y, y, id)?;
            Ok([classic::uniform(rng, -x, x), classic::uniform(rng, -y, y)])
        })?;
        Self::write_obs(&state, obs);
        Ok(())
    }

    #[inline]
    // numpy's `clip` order (max, then min) is kept as written: bit-exactness is the point here.
    #[allow(clippy::manual_clamp)]
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        let raw = action.leaf::<f32>(0)[0];
        if raw.is_nan() {
            return Err(classic::env_error(&self.c.spec.id, "action torque is NaN"));
        }
        let [th, thdot] = self.c.current()?;
        let u = raw.max(-MAX_TORQUE).min(MAX_TORQUE);
        // Cost of the pre-step state; `0.001 * u**2` is a float32 product in numpy 2.
        let torque_cost = f64::from(0.001f32 * np_pow2_f32(u));
        let costs = np_pow2(angle_normalize(th)) + 0.1 * np_pow2(thdot) + torque_cost;

        // `3.0 / (m * l**2) * u` is float32 too; the gravity term is float64.
        let torque_acc = f64::from((3.0 / (MASS * (LENGTH * LENGTH))) as f32 * u);
        let gravity_acc = 3.0 * self.g / (2.0 * LENGTH) * th.sin();
        let newthdot = (thdot + (gravity_acc + torque_acc) * DT).max(-MAX_SPEED).min(MAX_SPEED);
        let newth = th + newthdot * DT;
        let state = [newth, newthdot];
        self.c.state = Some(state);
        Self::write_obs(&state, obs);
        Ok(StepOutcome { reward: -costs, terminated: false, truncated: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::{Layout, Rows};

    fn run(env: &mut Box<dyn Env>, state: [f64; 2], torque: f32) -> Result<(Vec<f32>, StepOutcome)> {
        let (ol, al) = (Layout::of(&env.spec().observation_space), Layout::of(&env.spec().action_space));
        let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let mut opts = Info::new();
        opts.insert("state", serde_json::json!(state));
        env.reset(Some(0), Some(&opts), RowMut::new(&ol, obs.row_mut(0)))?;
        act.row_mut(0)[..4].copy_from_slice(&torque.to_ne_bytes());
        let out = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0)))?;
        Ok((RowRef::new(&ol, obs.row(0)).leaf::<f32>(0).to_vec(), out))
    }

    #[test]
    fn reset_range_and_seeding() {
        let mut env = crate::make("Pendulum-v1", &Params::new()).unwrap();
        let ol = Layout::of(&env.spec().observation_space);
        let mut obs = Rows::new(ol.row_bytes(), 1);
        let mut seen = vec![];
        for seed in [1, 2, 1] {
            env.reset(Some(seed), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
            let o = RowRef::new(&ol, obs.row(0)).leaf::<f32>(0).to_vec();
            assert!((o[0] * o[0] + o[1] * o[1] - 1.0).abs() < 1e-5 && o[2].abs() <= 1.0, "{o:?}");
            seen.push(o);
        }
        assert_eq!(seen[0], seen[2]);
        assert_ne!(seen[0], seen[1]);
    }

    #[test]
    fn torque_is_clipped_and_nan_refused() {
        let mut env = crate::make("Pendulum-v1", &Params::new()).unwrap();
        let (o_big, r_big) = run(&mut env, [0.5, 0.0], 7.0).unwrap();
        let (o_max, r_max) = run(&mut env, [0.5, 0.0], 2.0).unwrap();
        assert_eq!((o_big, r_big), (o_max, r_max));
        let err = run(&mut env, [0.5, 0.0], f32::NAN).unwrap_err();
        assert!(err.to_string().contains("NaN"), "{err}");
    }

    #[test]
    fn reward_uses_the_pre_step_state() {
        let mut env = crate::make("Pendulum-v1", &Params::new()).unwrap();
        let (_, out) = run(&mut env, [0.0, 0.0], 0.0).unwrap();
        assert_eq!(out.reward, 0.0);
        let (_, out) = run(&mut env, [std::f64::consts::PI, 0.0], 0.0).unwrap();
        assert!((out.reward + std::f64::consts::PI.powi(2)).abs() < 1e-12, "{}", out.reward);
        assert!(!out.terminated && !out.truncated);
    }
}
