//! `mountaincar-energy`: pushes the car the way it is already moving.
//!
//! Pushing along the velocity adds energy on every swing, so the car rocks higher
//! each time until it clears the right hill (about 120 steps from any start,
//! well inside the 200-step limit). At rest it pushes right. Uses only the
//! observation, so it is deterministic.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Params, Result};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "mountaincar-energy",
    summary: "energy pumping for MountainCar: push along the velocity (reaches the goal)",
    envs: &["MountainCar-v0"],
    params: &[],
    make,
};

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&[])?;
    Ok(Box::new(Energy))
}

struct Energy;

impl Agent for Energy {
    #[inline]
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        batch.for_each_row(|mut row| {
            let velocity = row.obs.leaf::<f32>(0)[1];
            // Actions: 0 push left, 1 coast, 2 push right.
            row.action.set_discrete(0, if velocity >= 0.0 { 2 } else { 0 });
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{mean, run};

    #[test]
    fn reaches_the_goal() {
        let eps = run("MountainCar-v0", "mountaincar-energy", 0..10);
        assert!(eps.iter().all(|e| e.terminated && e.len < 160), "{eps:?}");
        let random = run("MountainCar-v0", "random", 0..10);
        assert!(random.iter().all(|e| !e.terminated), "random reached the goal: {random:?}");
        assert!(mean(&eps, |e| e.ret) > -140.0);
    }
}
