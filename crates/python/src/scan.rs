//! A Python scan (`rollway.batched_scan.JaxScan`: a JAX env and a JAX policy stepped
//! T times in one jitted call) as the engine's [`Scan`]: its arrays (`[T × N, …]`,
//! time-major) are copied once, from numpy into the fragment's vectors.

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rollway_core::Error;
use rollway_runner::rollout::scan::{Scan, Scanned};
use rollway_runner::rollout::Extra;

/// The scan's own exception is kept for `collect` to raise as it is (see `rollout.rs`).
pub(crate) struct PyScan {
    pub scan: Py<PyAny>,
    pub raised: crate::errors::Raised,
}

/// What `JaxScan.steps` answers: obs rows, final obs rows, actions, rewards, flags, extras, infos.
type Answer<'py> = (
    PyReadonlyArray2<'py, u8>,
    PyReadonlyArray2<'py, u8>,
    PyReadonlyArray2<'py, u8>,
    PyReadonlyArray1<'py, f32>,
    PyReadonlyArray1<'py, u8>,
    Vec<(String, PyReadonlyArray1<'py, f32>, Vec<usize>)>,
    Bound<'py, PyAny>,
);

fn bytes_of(seeds: &[u64]) -> Vec<u8> {
    seeds.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn slice<'a>(a: &'a PyReadonlyArray2<'_, u8>, what: &str) -> PyResult<&'a [u8]> {
    a.as_slice().map_err(|_| crate::errors::input_error(format!("the scan's {what} are not one contiguous array")))
}

fn rows(a: &PyReadonlyArray2<'_, u8>, what: &str) -> PyResult<Vec<u8>> {
    slice(a, what).map(<[u8]>::to_vec)
}

impl PyScan {
    fn fail(&self, e: PyErr) -> Error {
        crate::errors::stash(&self.raised, e)
    }
}

impl Scan for PyScan {
    fn begin(&mut self, seeds: &[u64]) -> rollway_core::Result<Vec<u8>> {
        Python::attach(|py| -> PyResult<Vec<u8>> {
            let obs = self.scan.bind(py).call_method1("begin", (PyBytes::new(py, &bytes_of(seeds)),))?;
            rows(&obs.extract::<PyReadonlyArray2<u8>>()?, "first observations")
        })
        .map_err(|e| self.fail(e))
    }

    fn steps(&mut self, steps: usize, seeds: &[u64], seeded: bool, into: &mut [u8]) -> rollway_core::Result<Scanned> {
        Python::attach(|py| -> PyResult<Scanned> {
            let answer = self.scan.bind(py).call_method1("steps", (steps, PyBytes::new(py, &bytes_of(seeds)), seeded))?;
            let (obs, final_obs, actions, rewards, flags, extras, infos): Answer<'_> = answer.extract()?;
            let flags = flags.as_slice()?;
            let ended = flags.iter().filter(|&&f| f != 0).count();
            let infos = crate::info_columns::infos_of(&infos, ended).map_err(|e| crate::errors::input_error(format!("the scan's {e}")))?;
            let extras = extras
                .into_iter()
                .map(|(name, values, shape)| Ok(Extra { name, shape, values: values.as_slice()?.to_vec() }))
                .collect::<PyResult<Vec<Extra>>>()?;
            // After the fragment's first N rows, the scanner's: one copy.
            let src = slice(&obs, "observations")?;
            let first = into.len() / (steps + 1);
            if first + src.len() != into.len() {
                let msg = format!("the scan's observations: {} bytes for {} bytes of the fragment's rows", src.len(), into.len() - first);
                return Err(crate::errors::input_error(msg));
            }
            into[first..].copy_from_slice(src);
            Ok(Scanned {
                final_obs: rows(&final_obs, "final observations")?,
                actions: rows(&actions, "actions")?,
                rewards: rewards.as_slice()?.to_vec(),
                terminated: flags.iter().map(|&f| f & 1 != 0).collect(),
                truncated: flags.iter().map(|&f| f & 2 != 0).collect(),
                extras,
                infos,
            })
        })
        .map_err(|e| self.fail(e))
    }
}
