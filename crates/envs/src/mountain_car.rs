//! `MountainCar-v0`: Gymnasium 1.x's discrete mountain car, step for step.
//!
//! The state `(position, velocity)` is float64, the observation its float32
//! rounding. Reset puts the car at a uniform position in `[-0.6, -0.4)` (reset
//! options `low`/`high` change that) at rest, drawn from numpy's random stream so
//! `reset(seed=s)` starts exactly where Gymnasium's does. The rollway-only reset
//! option `state` (two numbers) starts from an exact state.

use rollway_core::{DType, Env, EnvEntry, EnvSpec, Info, Params, Result, RowMut, RowRef, Space, StepOutcome};

use crate::classic::{self, Classic};

/// Registry entry.
pub static ENTRY: EnvEntry = EnvEntry {
    id: "MountainCar-v0",
    summary: "Gymnasium mountain car (exact dynamics; Discrete(3), 200 steps)",
    params: &[("goal_velocity", "minimum velocity at the goal to terminate (default 0)")],
    make,
};

fn make(p: &Params) -> Result<Box<dyn Env>> {
    p.expect_only(&["goal_velocity"])?;
    Ok(Box::new(MountainCar::new(p.get("goal_velocity", 0.0)?)?))
}

const MIN_POSITION: f64 = -1.2;
const MAX_POSITION: f64 = 0.6;
const MAX_SPEED: f64 = 0.07;
const GOAL_POSITION: f64 = 0.5;
const FORCE: f64 = 0.001;
const GRAVITY: f64 = 0.0025;

/// The mountain-car env. `pub` so tests can set and read the physical state.
pub struct MountainCar {
    c: Classic<2>,
    goal_velocity: f64,
}

impl MountainCar {
    /// A mountain car that terminates at the goal with at least `goal_velocity`.
    pub fn new(goal_velocity: f64) -> Result<MountainCar> {
        let low = classic::f32_values(&[MIN_POSITION, -MAX_SPEED]);
        let high = classic::f32_values(&[MAX_POSITION, MAX_SPEED]);
        let (obs, act) = (Space::box_with(DType::F32, &[2], low, high)?, Space::discrete(3, 0)?);
        Ok(MountainCar { c: Classic::new(ENTRY.id, obs, act, (200, 30, Some(-110.0))), goal_velocity })
    }

    classic::physical_state!(2, "(position, velocity)");

    fn write_obs(state: &[f64; 2], mut obs: RowMut<'_>) {
        let o = obs.leaf_mut::<f32>(0);
        o[0] = state[0] as f32;
        o[1] = state[1] as f32;
    }
}

/// numpy's `clip` for scalars.
#[inline]
fn clip(x: f64, lo: f64, hi: f64) -> f64 {
    x.max(lo).min(hi)
}

impl Env for MountainCar {
    fn spec(&self) -> &EnvSpec {
        &self.c.spec
    }

    fn reset(&mut self, seed: Option<u64>, options: Option<&Info>, obs: RowMut<'_>) -> Result<()> {
        let state = self.c.reset(seed, options, |rng, id| {
            let (low, high) = classic::reset_bounds(options, -0.6, -0.4, id)?;
            Ok([classic::uniform(rng, low, high), 0.0])
        })?;
        Self::write_obs(&state, obs);
        Ok(())
    }

    #[inline]
    fn step(&mut self, action: RowRef<'_>, obs: RowMut<'_>) -> Result<StepOutcome> {
        let a = classic::discrete_action(action, 3, &self.c.spec.id)?;
        let [mut position, mut velocity] = self.c.current()?;
        velocity += (a - 1) as f64 * FORCE + (3.0 * position).cos() * (-GRAVITY);
        velocity = clip(velocity, -MAX_SPEED, MAX_SPEED);
        position += velocity;
        position = clip(position, MIN_POSITION, MAX_POSITION);
        // The left wall is inelastic: the car stops there.
        if position == MIN_POSITION && velocity < 0.0 {
            velocity = 0.0;
        }
        let terminated = position >= GOAL_POSITION && velocity >= self.goal_velocity;
        let state = [position, velocity];
        self.c.state = Some(state);
        Self::write_obs(&state, obs);
        Ok(StepOutcome { reward: -1.0, terminated, truncated: false })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::{Layout, Rows};

    fn setup() -> (Box<dyn Env>, Layout, Layout, Rows, Rows) {
        let env = crate::make("MountainCar-v0", &Params::new()).unwrap();
        let (ol, al) = (Layout::of(&env.spec().observation_space), Layout::of(&env.spec().action_space));
        let (obs, act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        (env, ol, al, obs, act)
    }

    #[test]
    fn reset_range_seeding_and_bad_actions() {
        let (mut env, ol, al, mut obs, mut act) = setup();
        let mut first = vec![];
        for i in 0..20 {
            env.reset(Some(i), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
            let o = RowRef::new(&ol, obs.row(0)).leaf::<f32>(0).to_vec();
            assert!((-0.6..-0.4).contains(&o[0]) && o[1] == 0.0, "{o:?}");
            first.push(o[0]);
        }
        env.reset(Some(0), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
        assert_eq!(RowRef::new(&ol, obs.row(0)).leaf::<f32>(0)[0], first[0]);
        act.row_mut(0).copy_from_slice(&3i64.to_ne_bytes());
        assert!(env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).is_err());
    }

    #[test]
    fn left_wall_stops_the_car() {
        let (mut env, ol, al, mut obs, mut act) = setup();
        let mut opts = Info::new();
        opts.insert("state", serde_json::json!([-1.19, -0.05]));
        env.reset(Some(0), Some(&opts), RowMut::new(&ol, obs.row_mut(0))).unwrap();
        act.row_mut(0).copy_from_slice(&0i64.to_ne_bytes());
        let out = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
        let o = RowRef::new(&ol, obs.row(0)).leaf::<f32>(0).to_vec();
        assert_eq!(o, [-1.2, 0.0]);
        assert_eq!((out.reward, out.terminated), (-1.0, false));
    }
}
