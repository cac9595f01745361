//! The lag rule, in one place for every rollout that feeds a learner: this crate's
//! [`super::Rollout`] (a collecting thread) and `rollway.ray.Rollout` (actors on a
//! cluster, through the Python binding) count their permits and judge staleness
//! with this one type, so the two cannot drift apart.
//!
//! The rule, for `max_policy_lag = k`:
//! - **permits**: `k` fragments may start before the learner asks for any, and each
//!   fragment the learner asks for (or each stale one dropped) allows one more. At
//!   `k = 0` nothing starts while the learner trains; publishing once per collected
//!   fragment then keeps every fragment within the bound.
//! - **delivery**: a fragment is delivered only if its oldest step is at most `k`
//!   versions behind the learner's current one; an older fragment is dropped whole,
//!   counted, and never mixed in.
//!
//! It costs a few integer operations per fragment; it holds no lock of its own (the
//! caller's, if it is shared).

/// Permits and staleness for one learner (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LagGate {
    max_policy_lag: u64,
    permits: u64,
    dropped_steps: u64,
    dropped_fragments: u64,
}

impl LagGate {
    /// A gate for `max_policy_lag`, its first `max_policy_lag` permits granted.
    pub fn new(max_policy_lag: u64) -> LagGate {
        LagGate { max_policy_lag, permits: max_policy_lag, ..LagGate::default() }
    }

    /// The learner asks for `n` more fragments: `n` more may start.
    pub fn ask(&mut self, n: u64) {
        self.permits += n;
    }

    /// Takes a permit to start a fragment; false when none is left.
    pub fn take(&mut self) -> bool {
        let ok = self.permits > 0;
        self.permits -= u64::from(ok);
        ok
    }

    /// Permits not yet taken.
    pub fn permits(&self) -> u64 {
        self.permits
    }

    /// Judges a fragment arriving when the learner is at `current`, its oldest step
    /// acted by `oldest`, of `steps` steps: its lag if it may be delivered, else
    /// `None`: dropped, counted, and a permit granted for its replacement.
    pub fn admit(&mut self, oldest: u64, steps: u64, current: u64) -> Option<u64> {
        let lag = current.saturating_sub(oldest);
        if lag <= self.max_policy_lag {
            return Some(lag);
        }
        self.dropped_steps += steps;
        self.dropped_fragments += 1;
        self.permits += 1;
        None
    }

    /// Steps dropped for staleness so far.
    pub fn dropped_steps(&self) -> u64 {
        self.dropped_steps
    }

    /// Fragments dropped for staleness so far.
    pub fn dropped_fragments(&self) -> u64 {
        self.dropped_fragments
    }

    /// The bound.
    pub fn max_policy_lag(&self) -> u64 {
        self.max_policy_lag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_zero_starts_only_what_is_asked_for() {
        let mut g = LagGate::new(0);
        assert!(!g.take(), "nothing runs before the learner asks");
        g.ask(2);
        assert!(g.take() && g.take() && !g.take());
    }

    #[test]
    fn lag_k_runs_k_ahead_and_a_stale_fragment_is_replaced() {
        let mut g = LagGate::new(2);
        assert!(g.take() && g.take() && !g.take());
        assert_eq!(g.admit(3, 10, 5), Some(2), "two behind: within the bound");
        assert_eq!(g.admit(2, 10, 5), None, "three behind: dropped");
        assert_eq!((g.dropped_steps(), g.dropped_fragments()), (10, 1));
        assert!(g.take(), "the dropped fragment's permit comes back");
        assert_eq!(g.admit(7, 1, 5), Some(0), "a step ahead of the learner is not stale");
    }
}
