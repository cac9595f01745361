//! `pendulum-swingup`: energy-based swing-up with a PD balancer for `Pendulum-v1`.
//!
//! The torque limit (2) is too weak to lift the pendulum directly against gravity,
//! so away from the top it pumps energy: full torque along the angular velocity
//! while the energy `theta_dot^2 / 2 + 15 cos theta` is below the upright value 15
//! (against it when above). Near the top (`cos theta > 0.95`) a PD law holds the
//! pendulum up. The constant 15 is `3 g / (2 l)` for Gymnasium's default `g = 10`.
//! Uses only the observation, so it is deterministic.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Params, Result};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "pendulum-swingup",
    summary: "energy-pumping swing-up plus PD balance for Pendulum",
    envs: &["Pendulum-v1"],
    params: &[],
    make,
};

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&[])?;
    Ok(Box::new(SwingUp))
}

const MAX_TORQUE: f32 = 2.0;
/// Angular acceleration per unit `sin theta` from gravity (`3 g / 2 l`).
const GRAVITY_GAIN: f32 = 15.0;
/// `cos theta` above which the PD balancer takes over.
const BALANCE_COS: f32 = 0.95;
const KP: f32 = 10.0;
const KD: f32 = 2.0;

/// The torque for observation `(cos theta, sin theta, theta_dot)`.
#[inline]
fn torque(c: f32, s: f32, thdot: f32) -> f32 {
    let u = if c > BALANCE_COS {
        -(KP * s.atan2(c) + KD * thdot)
    } else {
        let energy = 0.5 * thdot * thdot + GRAVITY_GAIN * c;
        // At rest at the bottom the product is 0: push anyway to start swinging.
        if (GRAVITY_GAIN - energy) * thdot >= 0.0 {
            MAX_TORQUE
        } else {
            -MAX_TORQUE
        }
    };
    u.clamp(-MAX_TORQUE, MAX_TORQUE)
}

struct SwingUp;

impl Agent for SwingUp {
    #[inline]
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        batch.for_each_row(|mut row| {
            let o = row.obs.leaf::<f32>(0);
            let u = torque(o[0], o[1], o[2]);
            row.action.leaf_mut::<f32>(0)[0] = u;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{mean, run};

    #[test]
    fn beats_random_by_far() {
        let eps = run("Pendulum-v1", "pendulum-swingup", 0..10);
        let ret = mean(&eps, |e| e.ret);
        let random = mean(&run("Pendulum-v1", "random", 0..10), |e| e.ret);
        assert!(ret > -400.0 && ret > random + 600.0, "swing-up {ret}, random {random}");
        assert!(eps.iter().all(|e| e.len == 200 && !e.terminated));
    }

    #[test]
    fn holds_the_top() {
        assert_eq!(super::torque(1.0, 0.0, 0.0), 0.0);
        assert!(super::torque(0.99, 0.1, 0.0) < 0.0);
    }
}
