//! `cartpole-balance`: a linear state-feedback controller for `CartPole-v1`.
//!
//! Pushes right when `0.05 x + 0.2 x_dot + theta + 0.3 theta_dot > 0`. The angle
//! terms keep the pole up; the small cart terms stop the slow drift towards the
//! track's edge that a pure angle controller accumulates over 500 steps. Uses only
//! the observation, so it is deterministic.

use rollway_core::{ActBatch, Agent, AgentEntry, EnvSpec, Params, Result};

/// Registry entry.
pub static ENTRY: AgentEntry = AgentEntry {
    name: "cartpole-balance",
    summary: "state-feedback balancer for CartPole (reaches the 500-step cap)",
    envs: &["CartPole-v1"],
    params: &[],
    make,
};

fn make(_spec: &EnvSpec, p: &Params) -> Result<Box<dyn Agent>> {
    p.expect_only(&[])?;
    Ok(Box::new(Balance))
}

/// Feedback gains on `(x, x_dot, theta, theta_dot)`.
const GAINS: [f32; 4] = [0.05, 0.2, 1.0, 0.3];

struct Balance;

impl Agent for Balance {
    #[inline]
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        batch.for_each_row(|mut row| {
            let o = row.obs.leaf::<f32>(0);
            let u: f32 = o.iter().zip(GAINS).map(|(x, k)| x * k).sum();
            row.action.set_discrete(0, i64::from(u > 0.0));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::{mean, run};

    #[test]
    fn balances_to_the_time_limit() {
        let eps = run("CartPole-v1", "cartpole-balance", 0..10);
        let len = mean(&eps, |e| e.len as f64);
        assert!(len >= 450.0, "mean length {len}: {eps:?}");
        let random = mean(&run("CartPole-v1", "random", 0..10), |e| e.len as f64);
        assert!(random < 100.0, "random mean length {random}");
    }

    #[test]
    fn is_refused_for_other_envs() {
        let env = rollway_envs::make("Pendulum-v1", &rollway_core::Params::new()).unwrap();
        assert!(crate::make("cartpole-balance", env.spec(), &rollway_core::Params::new()).is_err());
    }
}
