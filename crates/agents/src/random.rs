//! `random`: samples the action space, from each episode's own seeded stream.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Params, Result};

/// Registry entry.
pub static ENTRY: AgentEntry =
    AgentEntry { name: "random", summary: "uniform samples of the action space (seeded per episode)", envs: &[], params: &[], make };

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&[])?;
    Ok(Box::new(Random))
}

struct Random;

impl Agent for Random {
    #[inline]
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        let layout = batch.act_layout;
        batch.for_each_row(|mut row| {
            layout.sample_row(row.rng, row.action.bytes_mut());
            Ok(())
        })
    }
}
