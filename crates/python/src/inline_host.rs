//! Python envs stepped in the engine's own thread, under the GIL, with no process:
//! the in-process host. Each op is a direct call of `env.step`/`env.reset`
//! ([`SlotEnvs`], the same loop the env processes run), so a round of N envs costs N
//! calls and no pipe round trip. It pays where a process's round trip (~50 µs on a
//! 2-core VM) is most of a round: few, cheap envs, as in CleanRL-style loops with
//! 4-8 envs. Its price: the envs step one at a time while holding the GIL, so a
//! Python thread (a learner) waits meanwhile, and an env that crashes the
//! interpreter or hangs takes the run with it (no process to kill). Both hosts
//! give the same observations for the same seeds.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rollway_core::{BlockOptions, Env, EnvBlock, EnvFactory, EnvSpec, Error, Failure, Info, Op, Params, Result, Rows, SlotResult};
use rollway_host::proto::{Setup, SpecJson};

use crate::host::slot_envs;
use crate::slots::SlotEnvs;

/// An [`EnvFactory`] whose blocks step Python envs in the calling thread.
pub struct InlineEnvs {
    name: String,
    setup: String,
    pickled: Vec<u8>,
    /// As `prepare` reported it (each block's envs read their layouts), and parsed.
    spec_json: SpecJson,
    spec: EnvSpec,
    /// What one step of the spec's env took (`rollway._host.step_cost`), when asked
    /// and the env is a plain Python env (not one rollway steps itself).
    step_cost: Option<f64>,
}

impl InlineEnvs {
    /// Envs `name` (`gym:ID`, `module:callable`, or a display name with `pickled`,
    /// a cloudpickled factory) with `params`, resolved as the env processes do; with
    /// `weigh`, one step's cost measured on the env made for the spec ([`Self::step_cost`]).
    pub fn new(py: Python<'_>, name: &str, params: &Params, pickled: Option<Vec<u8>>, weigh: bool) -> PyResult<InlineEnvs> {
        let setup = Setup {
            target: name.into(),
            params: params.0.clone(),
            pickled: pickled.is_some(),
            n: 0,
            shm: None,
            infos: "none".into(),
            cut: None,
        };
        let setup = serde_json::to_string(&setup).expect("setups serialize");
        let pickled = pickled.unwrap_or_default();
        // As the process host reports it: the env named, the Python error's text.
        let made = prepare(py, &setup, &pickled).map_err(|e| crate::errors::input_error(format!("env {name}: {e}")))?;
        let spec_json: SpecJson = serde_json::from_str(&made.get_item(2)?.extract::<String>()?)
            .map_err(|e| crate::errors::input_error(format!("env spec: {e}")))?;
        // Only a plain Python env (packers given) is stepped by Python; the spec's env is thrown away next.
        let plain = !made.get_item(3)?.is_none();
        let weighed = if weigh && plain {
            py.import("rollway._host")?.getattr("step_cost")?.call1((made.get_item(1)?,))
        } else {
            Ok(py.None().into_bound(py))
        };
        // A probe that fails tells nothing: the env's own steps report what is wrong with it.
        let step_cost = weighed.ok().and_then(|c| c.extract::<f64>().ok());
        let _ = made.get_item(1)?.call_method0("close");
        let spec = spec_json.to_spec(name).map_err(|e| crate::errors::input_error(e.to_string()))?;
        Ok(InlineEnvs { name: name.into(), setup, pickled, spec_json, spec, step_cost })
    }

    /// One step's cost in seconds, when it was weighed.
    pub fn step_cost(&self) -> Option<f64> {
        self.step_cost
    }
}

fn prepare<'py>(py: Python<'py>, setup: &str, pickled: &[u8]) -> PyResult<Bound<'py, PyTuple>> {
    let prepare = py.import("rollway._host")?.getattr("prepare")?;
    Ok(prepare.call1((setup, PyBytes::new(py, pickled)))?.cast_into::<PyTuple>()?)
}

impl EnvFactory for InlineEnvs {
    fn name(&self) -> &str {
        &self.name
    }

    fn make(&self) -> Result<Box<dyn Env>> {
        Err(Error::Env { env: self.name.clone(), message: "in-process Python envs are stepped in blocks, not one by one".into() })
    }

    fn spec(&self) -> Result<EnvSpec> {
        Ok(self.spec.clone())
    }

    fn block(&self, n: usize, options: BlockOptions) -> Option<Box<dyn EnvBlock>> {
        let made = Python::attach(|py| {
            prepare(py, &self.setup, &self.pickled).and_then(|t| slot_envs(&t, &self.spec_json, n, (options.infos, options.cut)))
        });
        Some(Box::new(match made {
            Ok(envs) => Inline { envs: Some(envs), infos: vec![Info::new(); n], error: None },
            // Every op of the block fails with why; the run counts and reports it like any env failure.
            Err(e) => Inline { envs: None, infos: Vec::new(), error: Some(e.to_string()) },
        }))
    }
}

/// One block of in-process envs.
struct Inline {
    envs: Option<Box<dyn SlotEnvs>>,
    infos: Vec<Info>,
    error: Option<String>,
}

impl EnvBlock for Inline {
    fn run(&mut self, ops: &[(usize, Op)], act: &Rows, obs: &mut Rows, out: &mut Vec<SlotResult>) {
        out.clear();
        let Some(envs) = self.envs.as_mut() else {
            let error = self.error.clone().unwrap_or_default();
            out.extend(ops.iter().map(|_| Err(Failure { error: error.clone(), restarted: true })));
            return;
        };
        let mut results = Vec::with_capacity(ops.len());
        Python::attach(|py| envs.round(py, ops, act.bytes(), obs.bytes_mut(), &mut results));
        for (&(slot, _), res) in ops.iter().zip(results) {
            out.push(match res {
                Ok((outcome, info)) => {
                    if let Some(info) = info {
                        self.infos[slot] = info;
                    }
                    Ok(outcome)
                }
                Err(error) => Err(Failure { error, restarted: true }),
            });
        }
    }

    fn info(&mut self, slot: usize) -> Info {
        self.infos.get(slot).cloned().unwrap_or_default()
    }
}

impl Drop for Inline {
    fn drop(&mut self) {
        if let Some(mut envs) = self.envs.take() {
            Python::attach(|py| envs.close(py));
        }
    }
}
