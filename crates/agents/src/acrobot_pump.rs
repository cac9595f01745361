//! `acrobot-pump`: bang-bang energy pumping for `Acrobot-v1`.
//!
//! Applies torque along `dtheta2 - 0.25 dtheta1`: driving the elbow with its own
//! motion, relative to the shoulder's, feeds energy into the swing, so the tip
//! rises above the bar in well under 150 steps (usually about 80). Uses only the
//! observation, so it is deterministic.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Params, Result};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "acrobot-pump",
    summary: "energy-pumping swing-up for Acrobot (reaches the goal in ~80 steps)",
    envs: &["Acrobot-v1"],
    params: &[],
    make,
};

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&[])?;
    Ok(Box::new(Pump))
}

/// Weight of the shoulder velocity against the elbow velocity.
const SHOULDER_WEIGHT: f32 = 0.25;

struct Pump;

impl Agent for Pump {
    #[inline]
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        batch.for_each_row(|mut row| {
            // Observation: cos/sin of both angles, then the two angular velocities.
            let o = row.obs.leaf::<f32>(0);
            let u = o[5] - SHOULDER_WEIGHT * o[4];
            // Actions: 0, 1, 2 apply torque -1, 0, +1.
            let a = if u > 0.0 {
                2
            } else if u < 0.0 {
                0
            } else {
                1
            };
            row.action.set_discrete(0, a);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{mean, run};

    #[test]
    fn swings_up_early() {
        let eps = run("Acrobot-v1", "acrobot-pump", 0..10);
        assert!(eps.iter().filter(|e| e.terminated && e.len < 250).count() >= 9, "{eps:?}");
        let len = mean(&eps, |e| e.len as f64);
        assert!(len < 150.0, "mean length {len}");
        let random = mean(&run("Acrobot-v1", "random", 0..10), |e| e.len as f64);
        assert!(random > 2.0 * len, "random mean length {random}");
    }
}
