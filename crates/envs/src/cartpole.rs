//! `CartPole-v1`: Gymnasium 1.x's cart-pole, step for step.
//!
//! The physical state `(x, x_dot, theta, theta_dot)` is kept in float64 and the
//! observation is its float32 rounding, exactly like Gymnasium. Reset draws each
//! state element uniformly from `[-0.05, 0.05)` (reset options `low`/`high` change
//! the range, as in Gymnasium) with numpy's random stream, so `reset(seed=s)` starts
//! exactly where `gymnasium.make("CartPole-v1").reset(seed=s)` does. The
//! rollway-only reset option `state` (four numbers) starts from an exact state.

use rollway_core::{DType, Env, EnvEntry, EnvSpec, Info, Params, Result, RowMut, RowRef, Space, StepOutcome};

use crate::classic::{self, Classic};

/// Registry entry.
pub static ENTRY: EnvEntry = EnvEntry {
    id: "CartPole-v1",
    summary: "Gymnasium cart-pole balancing (exact dynamics; Discrete(2), 500 steps)",
    params: &[
        ("sutton_barto_reward", "true: reward 0 per step and -1 on failure (default false)"),
        ("velocities", "false: observe only (x, theta), a partially observed task only a recurrent policy solves (default true)"),
    ],
    make,
};

fn make(p: &Params) -> Result<Box<dyn Env>> {
    p.expect_only(&["sutton_barto_reward", "velocities"])?;
    let mut env = CartPole::new(p.get("sutton_barto_reward", false)?)?;
    if !p.get("velocities", true)? {
        env.hide_velocities()?;
    }
    Ok(Box::new(env))
}

const GRAVITY: f64 = 9.8;
const MASSCART: f64 = 1.0;
const MASSPOLE: f64 = 0.1;
const TOTAL_MASS: f64 = MASSPOLE + MASSCART;
/// Half the pole's length, as in Gymnasium.
const LENGTH: f64 = 0.5;
const POLEMASS_LENGTH: f64 = MASSPOLE * LENGTH;
const FORCE_MAG: f64 = 10.0;
/// Seconds per step.
const TAU: f64 = 0.02;
/// Pole angle beyond which the episode terminates (12 degrees), computed in
/// Gymnasium's operation order so the threshold has the same bits.
const THETA_THRESHOLD: f64 = 12.0 * 2.0 * std::f64::consts::PI / 360.0;
const X_THRESHOLD: f64 = 2.4;

/// The cart-pole env. `pub` so tests can set and read the physical state.
pub struct CartPole {
    c: Classic<4>,
    sutton_barto: bool,
    /// Only `(x, theta)` are observed.
    hidden_velocities: bool,
    /// Steps taken after termination (`None` until the pole falls), for Gymnasium's
    /// reward of 0 on steps past the end.
    steps_beyond_terminated: Option<u64>,
}

impl CartPole {
    /// A cart-pole; `sutton_barto` selects the 0 / -1 reward variant.
    pub fn new(sutton_barto: bool) -> Result<CartPole> {
        // Observation bounds: twice the termination thresholds, stored as float32.
        let high = classic::f32_values(&[X_THRESHOLD * 2.0, f64::INFINITY, THETA_THRESHOLD * 2.0, f64::INFINITY]);
        let low = high.iter().map(|h| -h).collect();
        let (obs, act) = (Space::box_with(DType::F32, &[4], low, high)?, Space::discrete(2, 0)?);
        let c = Classic::new(ENTRY.id, obs, act, (500, 50, Some(475.0)));
        Ok(CartPole { c, sutton_barto, hidden_velocities: false, steps_beyond_terminated: None })
    }

    /// Observes `(x, theta)` only (the `velocities=false` parameter): the
    /// observation space becomes those two elements of the full one.
    pub fn hide_velocities(&mut self) -> Result<()> {
        let high = classic::f32_values(&[X_THRESHOLD * 2.0, THETA_THRESHOLD * 2.0]);
        let low = high.iter().map(|h| -h).collect();
        self.c.spec.observation_space = Space::box_with(DType::F32, &[2], low, high)?;
        self.hidden_velocities = true;
        Ok(())
    }

    classic::physical_state!(4, "(x, x_dot, theta, theta_dot)");

    fn write_obs(&self, state: &[f64; 4], mut obs: RowMut<'_>) {
        let o = obs.leaf_mut::<f32>(0);
        if self.hidden_velocities {
            (o[0], o[1]) = (state[0] as f32, state[2] as f32);
            return;
        }
        for (o, s) in o.iter_mut().zip(state) {
            *o = *s as f32;
        }
    }
}

impl Env for CartPole {
    fn spec(&self) -> &EnvSpec {
        &self.c.spec
    }

    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        let state = self.c.reset(seed, options, |rng, id| {
            let (low, high) = classic::reset_bounds(options, -0.05, 0.05, id)?;
            Ok(std::array::from_fn(|_| classic::uniform(rng, low, high)))
        })?;
        self.steps_beyond_terminated = None;
        self.write_obs(&state, obs);
        Ok(())
    }

    #[inline]
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        let a = classic::discrete_action(action, 2, &self.c.spec.id)?;
        let [mut x, mut x_dot, mut theta, mut theta_dot] = self.c.current()?;
        let force = if a == 1 { FORCE_MAG } else { -FORCE_MAG };
        let costheta = theta.cos();
        let sintheta = theta.sin();
        // Same operation order as Gymnasium (np.square is x * x), so results match bit for bit.
        let temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS;
        let thetaacc = (GRAVITY * sintheta - costheta * temp) / (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
        let xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
        // Explicit Euler, Gymnasium's default integrator.
        x += TAU * x_dot;
        x_dot += TAU * xacc;
        theta += TAU * theta_dot;
        theta_dot += TAU * thetaacc;
        let state = [x, x_dot, theta, theta_dot];
        self.c.state = Some(state);

        let terminated = !(-X_THRESHOLD..=X_THRESHOLD).contains(&x) || !(-THETA_THRESHOLD..=THETA_THRESHOLD).contains(&theta);
        let fail_reward = if self.sutton_barto { -1.0 } else { 1.0 };
        let reward = if !terminated {
            if self.sutton_barto {
                0.0
            } else {
                1.0
            }
        } else if let Some(n) = self.steps_beyond_terminated.as_mut() {
            // Stepping past the end is undefined in Gymnasium; it pays 0 (or -1).
            *n += 1;
            if self.sutton_barto {
                -1.0
            } else {
                0.0
            }
        } else {
            self.steps_beyond_terminated = Some(0);
            fail_reward
        };
        self.write_obs(&state, obs);
        Ok(StepOutcome { reward, terminated, truncated: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::{Layout, Rows};

    struct Harness {
        env: Box<dyn Env>,
        ol: Layout,
        al: Layout,
        obs: Rows,
        act: Rows,
    }

    impl Harness {
        fn new() -> Harness {
            let env = crate::make("CartPole-v1", &Params::new()).unwrap();
            let (ol, al) = (Layout::of(&env.spec().observation_space), Layout::of(&env.spec().action_space));
            let (obs, act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
            Harness { env, ol, al, obs, act }
        }
        fn reset(&mut self, seed: Option<u64>) -> Vec<f32> {
            self.env.reset(seed, None, RowMut::new(&self.ol, self.obs.row_mut(0))).unwrap();
            RowRef::new(&self.ol, self.obs.row(0)).leaf::<f32>(0).to_vec()
        }
        fn step(&mut self, a: i64) -> Result<StepOutcome> {
            self.act.row_mut(0).copy_from_slice(&a.to_ne_bytes());
            self.env.step(RowRef::new(&self.al, self.act.row(0)), RowMut::new(&self.ol, self.obs.row_mut(0)))
        }
    }

    #[test]
    fn hidden_velocities_observe_x_and_theta_of_the_same_dynamics() {
        let mut full = Harness::new();
        let env = crate::make("CartPole-v1", &Params(std::iter::once(("velocities".to_string(), "false".to_string())).collect())).unwrap();
        let (ol, al) = (Layout::of(&env.spec().observation_space), Layout::of(&env.spec().action_space));
        assert_eq!(ol.leaves()[0].shape, vec![2]);
        let mut part = Harness { env, obs: Rows::new(ol.row_bytes(), 1), ol, act: Rows::new(al.row_bytes(), 1), al };
        let (a, b) = (full.reset(Some(5)), part.reset(Some(5)));
        assert_eq!(b, vec![a[0], a[2]]);
        for k in 0..30 {
            let (x, y) = (full.step(k % 2).unwrap(), part.step(k % 2).unwrap());
            assert_eq!(x, y);
            let (a, b) = (
                RowRef::new(&full.ol, full.obs.row(0)).leaf::<f32>(0).to_vec(),
                RowRef::new(&part.ol, part.obs.row(0)).leaf::<f32>(0).to_vec(),
            );
            assert_eq!(b, vec![a[0], a[2]]);
        }
    }

    #[test]
    fn reset_is_in_range_and_seeded() {
        let mut h = Harness::new();
        let a = h.reset(Some(3));
        assert!(a.iter().all(|v| (-0.05..0.05).contains(v)), "{a:?}");
        let b = h.reset(None);
        assert_ne!(a, b, "unseeded reset continues the stream");
        assert_eq!(h.reset(Some(3)), a);
    }

    #[test]
    fn invalid_action_is_an_error() {
        let mut h = Harness::new();
        assert!(h.step(1).is_err(), "step before reset");
        h.reset(Some(0));
        let err = h.step(2).unwrap_err().to_string();
        assert!(err.contains("outside the action space"), "{err}");
        assert!(h.step(-1).is_err());
        assert!(h.step(0).is_ok());
    }

    #[test]
    fn falls_and_pays_zero_after_the_end() {
        let mut h = Harness::new();
        h.reset(Some(1));
        let mut n = 0;
        loop {
            n += 1;
            let out = h.step(1).unwrap();
            assert_eq!(out.reward, 1.0);
            if out.terminated {
                break;
            }
        }
        assert!(n < 50, "always pushing right fails fast");
        assert_eq!(h.step(1).unwrap().reward, 0.0);
    }

    #[test]
    fn spaces_match_gymnasium() {
        let env = CartPole::new(false).unwrap();
        let Space::Box(b) = &env.spec().observation_space else { panic!() };
        assert_eq!(b.high[0], 4.8f32 as f64);
        assert_eq!(b.high[2], 0.41887903f32 as f64);
        assert_eq!(b.low[1], f64::NEG_INFINITY);
    }
}
