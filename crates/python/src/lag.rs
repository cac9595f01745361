//! `rollway._rollway.LagGate`: the engine's lag rule (`rollway_runner::rollout::LagGate`)
//! for `rollway.ray.Rollout`, whose learner dispatches fragments to actors itself.
//! The rule is the local rollout's, so the two fronts cannot drift apart.

use pyo3::prelude::*;
use rollway_runner::rollout::LagGate;

/// Permits and staleness for one learner at `max_policy_lag`.
#[pyclass(module = "rollway._rollway", name = "LagGate")]
pub struct PyLagGate(LagGate);

#[pymethods]
impl PyLagGate {
    #[new]
    fn new(max_policy_lag: u64) -> Self {
        PyLagGate(LagGate::new(max_policy_lag))
    }

    /// The learner asks for `n` more fragments.
    fn ask(&mut self, n: u64) {
        self.0.ask(n)
    }

    /// Takes a permit to start a fragment; False when none is left.
    fn take(&mut self) -> bool {
        self.0.take()
    }

    /// A fragment's lag if it may be delivered, else None (dropped, counted, a permit back).
    fn admit(&mut self, oldest: u64, steps: u64, current: u64) -> Option<u64> {
        self.0.admit(oldest, steps, current)
    }

    #[getter]
    fn permits(&self) -> u64 {
        self.0.permits()
    }

    #[getter]
    fn dropped_steps(&self) -> u64 {
        self.0.dropped_steps()
    }

    #[getter]
    fn dropped_fragments(&self) -> u64 {
        self.0.dropped_fragments()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLagGate>()
}
