//! `Acrobot-v1`: Gymnasium 1.x's acrobot ("book" dynamics), step for step.
//!
//! The state `(theta1, theta2, dtheta1, dtheta2)` is float64 after a step; a reset
//! draws each element uniformly from `[-0.1, 0.1)` and rounds it to float32, as
//! Gymnasium does (reset options `low`/`high` change the range; the stream is
//! numpy's, so `reset(seed=s)` gives Gymnasium's start state exactly). A step
//! integrates one RK4 step of 0.2 s with the torque held, wraps the angles into
//! `[-pi, pi]` and bounds the velocities. The rollway-only reset option `state`
//! (four numbers) starts from an exact state.
//!
//! One known difference: on the reset observation Gymnasium takes cos/sin of the
//! float32 state with numpy's float32 routines, which are not correctly rounded;
//! we round the float64 result, so reset observations can differ by one float32
//! ulp. Every step observation is computed in float64 by both and matches exactly.

use std::f64::consts::PI;

use rollway_core::{DType, Env, EnvEntry, EnvSpec, Info, Params, Result, RowMut, RowRef, Space, StepOutcome};

use crate::classic::{self, np_pow2, Classic};

/// Registry entry.
pub static ENTRY: EnvEntry =
    EnvEntry { id: "Acrobot-v1", summary: "Gymnasium acrobot swing-up (exact RK4 dynamics; Discrete(3), 500 steps)", params: &[], make };

fn make(p: &Params) -> Result<Box<dyn Env>> {
    p.expect_only(&[])?;
    Ok(Box::new(Acrobot::new()?))
}

/// Integration step in seconds.
const DT: f64 = 0.2;
const LINK_LENGTH_1: f64 = 1.0;
const LINK_MASS_1: f64 = 1.0;
const LINK_MASS_2: f64 = 1.0;
const LINK_COM_POS_1: f64 = 0.5;
const LINK_COM_POS_2: f64 = 0.5;
const LINK_MOI: f64 = 1.0;
const MAX_VEL_1: f64 = 4.0 * PI;
const MAX_VEL_2: f64 = 9.0 * PI;
const AVAIL_TORQUE: [f64; 3] = [-1.0, 0.0, 1.0];

/// The acrobot env. `pub` so tests can set and read the physical state.
pub struct Acrobot {
    c: Classic<4>,
}

impl Acrobot {
    /// An acrobot.
    pub fn new() -> Result<Acrobot> {
        let high = classic::f32_values(&[1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2]);
        let low = high.iter().map(|h| -h).collect();
        let (obs, act) = (Space::box_with(DType::F32, &[6], low, high)?, Space::discrete(3, 0)?);
        Ok(Acrobot { c: Classic::new(ENTRY.id, obs, act, (500, 15, Some(-100.0))) })
    }

    classic::physical_state!(4, "(theta1, theta2, dtheta1, dtheta2)");

    fn write_obs(s: &[f64; 4], mut obs: RowMut<'_>) {
        let vals = [s[0].cos(), s[0].sin(), s[1].cos(), s[1].sin(), s[2], s[3]];
        for (o, v) in obs.leaf_mut::<f32>(0).iter_mut().zip(vals) {
            *o = v as f32;
        }
    }
}

/// Time derivative of `(theta1, theta2, dtheta1, dtheta2, torque)`. Written in
/// Gymnasium's operation order, with numpy's `pow` for squares of state values,
/// so every intermediate has the same bits.
#[inline]
fn dsdt(s: &[f64; 5]) -> [f64; 5] {
    const M1: f64 = LINK_MASS_1;
    const M2: f64 = LINK_MASS_2;
    const L1: f64 = LINK_LENGTH_1;
    const LC1: f64 = LINK_COM_POS_1;
    const LC2: f64 = LINK_COM_POS_2;
    const I1: f64 = LINK_MOI;
    const I2: f64 = LINK_MOI;
    const G: f64 = 9.8;
    let [theta1, theta2, dtheta1, dtheta2, a] = *s;
    let cos2 = theta2.cos();
    let sin2 = theta2.sin();
    let d1 = M1 * (LC1 * LC1) + M2 * (L1 * L1 + LC2 * LC2 + 2.0 * L1 * LC2 * cos2) + I1 + I2;
    let d2 = M2 * (LC2 * LC2 + L1 * LC2 * cos2) + I2;
    let phi2 = M2 * LC2 * G * (theta1 + theta2 - PI / 2.0).cos();
    let phi1 = -M2 * L1 * LC2 * np_pow2(dtheta2) * sin2 - 2.0 * M2 * L1 * LC2 * dtheta2 * dtheta1 * sin2
        + (M1 * LC1 + M2 * L1) * G * (theta1 - PI / 2.0).cos()
        + phi2;
    let ddtheta2 = (a + d2 / d1 * phi1 - M2 * L1 * LC2 * np_pow2(dtheta1) * sin2 - phi2) / (M2 * (LC2 * LC2) + I2 - np_pow2(d2) / d1);
    let ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    [dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0]
}

/// One classical Runge-Kutta step of length `DT`, elementwise like numpy.
#[inline]
fn rk4(y0: [f64; 5]) -> [f64; 5] {
    let dt2 = DT / 2.0;
    let shifted = |k: &[f64; 5], h: f64| std::array::from_fn(|i| y0[i] + h * k[i]);
    let k1 = dsdt(&y0);
    let k2 = dsdt(&shifted(&k1, dt2));
    let k3 = dsdt(&shifted(&k2, dt2));
    let k4 = dsdt(&shifted(&k3, DT));
    std::array::from_fn(|i| y0[i] + DT / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
}

/// Gymnasium's `wrap`: shifts `x` by whole periods into `[m, big_m]`.
#[inline]
fn wrap(mut x: f64, m: f64, big_m: f64) -> f64 {
    let diff = big_m - m;
    while x > big_m {
        x -= diff;
    }
    while x < m {
        x += diff;
    }
    x
}

/// Gymnasium's `bound` (Python's `min(max(x, m), big_m)`).
#[inline]
fn bound(x: f64, m: f64, big_m: f64) -> f64 {
    let y = if m > x { m } else { x };
    if big_m < y {
        big_m
    } else {
        y
    }
}

impl Env for Acrobot {
    fn spec(&self) -> &EnvSpec {
        &self.c.spec
    }

    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        let state = self.c.reset(seed, options, |rng, id| {
            let (low, high) = classic::reset_bounds(options, -0.1, 0.1, id)?;
            // Drawn as float32, as Gymnasium's `np_random.uniform(...).astype(np.float32)`.
            Ok(std::array::from_fn(|_| f64::from(classic::uniform(rng, low, high) as f32)))
        })?;
        Self::write_obs(&state, obs);
        Ok(())
    }

    #[inline]
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        let a = classic::discrete_action(action, 3, &self.c.spec.id)?;
        let s = self.c.current()?;
        let ns = rk4([s[0], s[1], s[2], s[3], AVAIL_TORQUE[a as usize]]);
        let state = [wrap(ns[0], -PI, PI), wrap(ns[1], -PI, PI), bound(ns[2], -MAX_VEL_1, MAX_VEL_1), bound(ns[3], -MAX_VEL_2, MAX_VEL_2)];
        self.c.state = Some(state);
        // The free end is more than one link length above the pivot.
        let terminated = -state[0].cos() - (state[1] + state[0]).cos() > 1.0;
        Self::write_obs(&state, obs);
        Ok(StepOutcome { reward: if terminated { 0.0 } else { -1.0 }, terminated, truncated: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::{Layout, Rows};

    #[test]
    fn reset_range_seeding_and_bad_actions() {
        let mut env = crate::make("Acrobot-v1", &Params::new()).unwrap();
        let (ol, al) = (Layout::of(&env.spec().observation_space), Layout::of(&env.spec().action_space));
        let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let mut reset = |env: &mut Box<dyn Env>, seed| {
            env.reset(seed, None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
            RowRef::new(&ol, obs.row(0)).leaf::<f32>(0).to_vec()
        };
        let a = reset(&mut env, Some(5));
        assert!(a[0] >= 0.1f64.cos() as f32 && a[4].abs() <= 0.1 && a[5].abs() <= 0.1, "{a:?}");
        assert_ne!(reset(&mut env, None), a);
        assert_eq!(reset(&mut env, Some(5)), a);
        for bad in [-1i64, 3] {
            act.row_mut(0).copy_from_slice(&bad.to_ne_bytes());
            let err = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap_err();
            assert!(err.to_string().contains("Discrete(3)"), "{err}");
        }
    }

    #[test]
    fn reset_state_is_float32() {
        let mut env = Acrobot::new().unwrap();
        let ol = Layout::of(&env.spec().observation_space);
        let mut obs = Rows::new(ol.row_bytes(), 1);
        env.reset(Some(9), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
        let s = env.state().unwrap();
        assert!(s.iter().all(|&v| f64::from(v as f32) == v && v.abs() <= 0.1));
    }

    #[test]
    fn wrap_and_bound() {
        assert_eq!(wrap(3.5, -PI, PI), 3.5 - 2.0 * PI);
        assert_eq!(wrap(-7.0, -PI, PI), -7.0 + 2.0 * PI);
        assert_eq!(wrap(13.0, -PI, PI), 13.0 - 2.0 * PI - 2.0 * PI);
        assert_eq!(bound(20.0, -MAX_VEL_1, MAX_VEL_1), MAX_VEL_1);
        assert_eq!(bound(-0.5, -1.0, 1.0), -0.5);
    }
}
