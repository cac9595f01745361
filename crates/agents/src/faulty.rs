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
        ("bad_action_every", "write action 7 (outside a Discrete(2) space) for the last row on every N-th act call (0 = never)"),
    ],
    make,
};

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&["panic_every", "error_every", "bad_action_every"])?;
    let every = |k| p.get(k, 0u64);
    Ok(Box::new(Faulty {
        panic_every: every("panic_every")?,
        error_every: every("error_every")?,
        bad_action_every: every("bad_action_every")?,
        calls: 0,
    }))
}

struct Faulty {
    panic_every: u64,
    error_every: u64,
    bad_action_every: u64,
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
        if self.bad_action_every > 0 && self.calls.is_multiple_of(self.bad_action_every) {
            let ab = layout.row_bytes();
            let last = batch.segments.iter_mut().rev().find(|s| !s.actions.is_empty()).expect("a batch has rows");
            let n = last.actions.len();
            last.actions[n - ab..n - ab + 8].copy_from_slice(&7i64.to_ne_bytes());
        }
        Ok(())
    }
}
