//! `faulty`: random actions, but panics (or errors) on every N-th batch — for
//! testing that a failing policy costs episode attempts, not the run.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Error, Params, Result};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "faulty",
    summary: "random actions that panic/error on every N-th batch (for fault-injection tests)",
    envs: &[],
    params: &[
        ("panic_every", "panic on every N-th act call (0 = never)"),
        ("error_every", "return an error on every N-th act call (0 = never)"),
    ],
    make,
};

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&["panic_every", "error_every"])?;
    Ok(Box::new(Faulty { panic_every: p.get("panic_every", 0)?, error_every: p.get("error_every", 0)?, calls: 0 }))
}

struct Faulty {
    panic_every: u64,
    error_every: u64,
    calls: u64,
}

impl Agent for Faulty {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        self.calls += 1;
        let layout = batch.act_layout;
        // Write the actions first so a failure leaves a half-acted batch behind, the hard case.
        batch.for_each_row(|mut row| {
            layout.sample_row(row.rng, row.action.bytes_mut());
            Ok(())
        })?;
        if self.panic_every > 0 && self.calls.is_multiple_of(self.panic_every) {
            panic!("faulty agent: injected panic on call {}", self.calls);
        }
        if self.error_every > 0 && self.calls.is_multiple_of(self.error_every) {
            return Err(Error::Agent { agent: "faulty".into(), message: format!("injected error on call {}", self.calls) });
        }
        Ok(())
    }
}
