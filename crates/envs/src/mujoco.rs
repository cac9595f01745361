//! Gymnasium's MuJoCo locomotion tasks (`HalfCheetah-v5`, `Hopper-v5`,
//! `Walker2d-v5`) stepped by rollway: the physics is MuJoCo's own (`mj_step` of the
//! `mujoco` pip package's library, on the env's own model and data), the rest of a
//! step (the reward, the flags, the observation, the info) is done here, value for
//! value as Gymnasium's Python does it.
//!
//! Why: a HalfCheetah step is ~75 µs in Gymnasium, ~80% of it `mj_step`, which
//! releases the GIL in the `mujoco` binding but is wrapped in Python that holds it;
//! so Python envs use one core however many threads step them. Stepped here, the
//! whole step runs without the GIL and a rollout's worker threads step on every
//! core, as EnvPool's C++ threads do. The reset stays Gymnasium's (its noise draws
//! from the env's numpy generator), so a seed gives the same episode either way.
//!
//! Value for value means numpy's arithmetic, not the obvious one: the control cost
//! squares a float32 action and sums it in float32 in numpy's order ([`np_sum_f32`]),
//! and `weight * sum` stays float32 (NEP 50: a Python float is weak), so the reward
//! is `forward - f64::from(cost)`. The tests compare every value with Gymnasium's.

/// What a step needs of the physics: set the controls, advance `frame_skip`
/// frames (`mj_step` each, then `mj_rnePostConstraint`, as Gymnasium's
/// `MujocoEnv._step_mujoco_simulation`), read the state.
pub trait Physics {
    /// Sets `ctrl` from the action and advances the simulation one agent step.
    fn advance(&mut self, action: &[f32]);
    /// The joint positions, `nq`.
    fn qpos(&self) -> &[f64];
    /// The joint velocities, `nv`.
    fn qvel(&self) -> &[f64];
}

/// A task's kind: which Gymnasium class it reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `gymnasium.envs.mujoco.half_cheetah_v5.HalfCheetahEnv`.
    HalfCheetah,
    /// `gymnasium.envs.mujoco.hopper_v5.HopperEnv`.
    Hopper,
    /// `gymnasium.envs.mujoco.walker2d_v5.Walker2dEnv`.
    Walker2d,
}

/// The ids rollway steps itself, with the Gymnasium class each must be made as
/// (module, class): a `gym:` id made as anything else is left to Gymnasium.
pub const TASKS: &[(&str, &str, &str, Kind)] = &[
    ("HalfCheetah-v5", "gymnasium.envs.mujoco.half_cheetah_v5", "HalfCheetahEnv", Kind::HalfCheetah),
    ("Hopper-v5", "gymnasium.envs.mujoco.hopper_v5", "HopperEnv", Kind::Hopper),
    ("Walker2d-v5", "gymnasium.envs.mujoco.walker2d_v5", "Walker2dEnv", Kind::Walker2d),
];

/// The kind of a Gymnasium id rollway steps itself (`"HalfCheetah-v5"`), if it does.
pub fn kind(id: &str) -> Option<Kind> {
    TASKS.iter().find(|t| t.0 == id).map(|t| t.3)
}

/// A task's settings, read from the Gymnasium env after `gymnasium.make` (so its
/// keyword arguments are the env's own), named as its constructor names them.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// Which class.
    pub kind: Kind,
    /// `forward_reward_weight`.
    pub forward_reward_weight: f64,
    /// `ctrl_cost_weight`.
    pub ctrl_cost_weight: f64,
    /// `exclude_current_positions_from_observation`.
    pub exclude_x: bool,
    /// `model.opt.timestep * frame_skip`, as Gymnasium's `dt`.
    pub dt: f64,
    /// `healthy_reward` (Hopper, Walker2d).
    pub healthy_reward: f64,
    /// `terminate_when_unhealthy` (Hopper, Walker2d).
    pub terminate_when_unhealthy: bool,
    /// `healthy_state_range` (Hopper).
    pub healthy_state_range: (f64, f64),
    /// `healthy_z_range` (Hopper, Walker2d).
    pub healthy_z_range: (f64, f64),
    /// `healthy_angle_range` (Hopper, Walker2d).
    pub healthy_angle_range: (f64, f64),
    /// `init_qpos[1]`, for the info's `z_distance_from_origin` (Hopper, Walker2d).
    pub init_z: f64,
}

/// One step's outcome and the values of its info.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// The reward, as Gymnasium's (float64).
    pub reward: f64,
    /// The task's own termination (an unhealthy Hopper or Walker2d).
    pub terminated: bool,
    /// The info, in Gymnasium's key order.
    pub info: Vec<(&'static str, f64)>,
}

impl Task {
    /// Observation length for `nq` positions and `nv` velocities.
    pub fn obs_len(&self, nq: usize, nv: usize) -> usize {
        nq + nv - usize::from(self.exclude_x)
    }

    /// Plays `action` and writes the observation into `obs` (float64, native order).
    pub fn step<P: Physics>(&self, physics: &mut P, action: &[f32], obs: &mut [u8]) -> Step {
        let x_before = physics.qpos()[0];
        physics.advance(action);
        let (qpos, qvel) = (physics.qpos(), physics.qvel());
        let x_after = qpos[0];
        let x_velocity = (x_after - x_before) / self.dt;
        self.write_obs(qpos, qvel, obs);
        let forward = self.forward_reward_weight * x_velocity;
        // NEP 50: `float * np.float32` is float32.
        let ctrl_cost = (self.ctrl_cost_weight as f32) * np_sum_f32(action.len(), |i| action[i] * action[i]);
        let mut info = vec![("x_position", x_after)];
        if self.kind == Kind::HalfCheetah {
            info.extend([("x_velocity", x_velocity), ("reward_forward", forward), ("reward_ctrl", f64::from(-ctrl_cost))]);
            return Step { reward: forward - f64::from(ctrl_cost), terminated: false, info };
        }
        let healthy = self.is_healthy(qpos, qvel);
        let survive = if healthy { self.healthy_reward } else { 0.0 };
        info.extend([
            ("z_distance_from_origin", qpos[1] - self.init_z),
            ("x_velocity", x_velocity),
            ("reward_forward", forward),
            ("reward_ctrl", f64::from(-ctrl_cost)),
            ("reward_survive", survive),
        ]);
        Step { reward: (forward + survive) - f64::from(ctrl_cost), terminated: !healthy && self.terminate_when_unhealthy, info }
    }

    fn write_obs(&self, qpos: &[f64], qvel: &[f64], obs: &mut [u8]) {
        let positions = &qpos[usize::from(self.exclude_x)..];
        // Hopper and Walker2d clip the velocities they show (not the state).
        let clip = |v: f64| if self.kind == Kind::HalfCheetah { v } else { v.clamp(-10.0, 10.0) };
        let values = positions.iter().copied().chain(qvel.iter().map(|&v| clip(v)));
        for (out, v) in obs.chunks_exact_mut(8).zip(values) {
            out.copy_from_slice(&v.to_ne_bytes());
        }
    }

    fn is_healthy(&self, qpos: &[f64], qvel: &[f64]) -> bool {
        let within = |(lo, hi): (f64, f64), v: f64| lo < v && v < hi;
        let (z, angle) = (qpos[1], qpos[2]);
        let state_ok = self.kind != Kind::Hopper || qpos[2..].iter().chain(qvel).all(|&s| within(self.healthy_state_range, s));
        state_ok && within(self.healthy_z_range, z) && within(self.healthy_angle_range, angle)
    }
}

/// `np.sum` of the `n` float32 values `value(0..n)` as numpy adds them: its pairwise
/// summation, a plain sum below 8 values and eight accumulators up to 128 (numpy
/// splits longer runs in halves first, which no action here reaches: the tasks have 3
/// to 6 actuators). The values are computed in place (a step allocates nothing).
pub fn np_sum_f32(n: usize, value: impl Fn(usize) -> f32) -> f32 {
    if n < 8 {
        return (0..n).fold(0.0, |s, i| s + value(i));
    }
    let mut r: [f32; 8] = std::array::from_fn(&value);
    let whole = n - n % 8;
    for i in 8..whole {
        r[i % 8] += value(i);
    }
    let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for i in whole..n {
        res += value(i);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_order_differs_from_a_plain_sum_where_it_must() {
        // numpy's values (np.sum of these float32 arrays): from 8 values on, eight
        // accumulators keep the twos that a plain sum after 1e8 loses.
        let short = [1e8f32, 2.0, 2.0, 2.0, 2.0];
        assert_eq!(np_sum_f32(short.len(), |i| short[i]), 1e8);
        let long: Vec<f32> = std::iter::once(1e8).chain(std::iter::repeat_n(2.0, 12)).collect();
        assert_eq!(np_sum_f32(long.len(), |i| long[i]), 1e8 + 8.0);
        assert_eq!(long.iter().fold(0.0f32, |s, &x| s + x), 1e8);
        assert_eq!(np_sum_f32(0, |_| unreachable!()), 0.0);
    }

    #[test]
    fn every_task_id_is_found() {
        for (id, _, _, k) in TASKS {
            assert_eq!(kind(id), Some(*k));
        }
        assert_eq!(kind("Ant-v5"), None);
    }
}
