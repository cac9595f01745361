//! The envs of `rollway.make_vec` for ids a Python process hosts (`gym:ID`,
//! `atari:GAME`, `module:callable`): env blocks, stepped by a rollout's own
//! [`Envs`] (one part per worker, parts after the first on threads of their own).
//!
//! Either one block in the caller's thread (the in-process host: no pipe round
//! trip, the GIL held while the envs step) or one env process per worker, each
//! with a contiguous share of the slots, stepped at once. The threads live as long
//! as the vector env; an env process goes when its block is dropped, or with this
//! process (the host's parent-death signal).
//!
//! Autoreset is the vector env's (`vec_env.rs`): an ended env's unseeded reset is
//! one more op, in the next round or a round of its own. A failed op is the
//! caller's error, naming the env.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use rollway_core::{BlockOptions, EnvFactory, EnvSpec, Info, InfoNeed, Layout, Op, Params, Rows};
use rollway_runner::rollout::envs::Envs;

use crate::errors::{failed, input_error};
use crate::inline_host::InlineEnvs;

/// N hosted envs in blocks.
pub(crate) struct Blocks {
    envs: Envs,
    spec: EnvSpec,
    inline: bool,
    name: String,
}

/// What one env did in a round.
pub(crate) struct Done {
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
}

impl Blocks {
    /// `n` envs `name` with `params` over `workers` env processes (hosted by
    /// `python`), or in this thread when `inline`.
    pub fn new(
        py: Python<'_>,
        name: &str,
        params: &Params,
        n: usize,
        workers: usize,
        inline: bool,
        python: Option<PathBuf>,
    ) -> PyResult<Blocks> {
        let factory: Arc<dyn EnvFactory> = if inline {
            Arc::new(InlineEnvs::new(py, name, params, None, false)?)
        } else {
            Arc::new(rollway_host::PythonEnvs::new(name, params, python))
        };
        let spec = py.detach(|| factory.spec()).map_err(|e| input_error(format!("env {name}: {e}")))?;
        let (ol, al) = (Arc::new(Layout::of(&spec.observation_space)), Arc::new(Layout::of(&spec.action_space)));
        // Inline Python envs take turns at the GIL: one part. Envs that step without it (the
        // MuJoCo tasks rollway steps) get a thread per worker, as a rollout's do.
        let workers = if inline && !rollway_engine::steps_without_gil(name) { 1 } else { workers.clamp(1, n) };
        let options = BlockOptions { infos: InfoNeed::All, step_timeout: None, cut: None };
        let envs = Envs::new(&factory, n, workers, &ol, &al, options, false).map_err(|e| failed(e.to_string()))?;
        Ok(Blocks { envs, spec, inline, name: name.into() })
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// One round: env `i` runs `ops[i]` (none: it sits the round out), a step reading
    /// `act.row(i)`; observations into `obs`. What each env that ran did, by env.
    pub fn round(&mut self, py: Python<'_>, ops: &[Option<Op>], act: &Rows, obs: &mut Rows) -> PyResult<Vec<Option<Done>>> {
        for part in &mut self.envs.parts {
            part.ops.clear();
            for local in 0..part.len() {
                let i = part.offset + local;
                if let Some(op) = ops[i] {
                    part.ops.push((local, op));
                    part.act.row_mut(local).copy_from_slice(act.row(i));
                }
            }
        }
        let envs = &mut self.envs;
        // One inline part steps in this thread, the GIL held; parts on threads of their own (env
        // processes, or inline envs that step without the GIL) take it when they need it, so it is let go.
        let ran = if self.inline && envs.parts.len() == 1 { envs.round() } else { py.detach(move || envs.round()) };
        ran.map_err(|e| failed(e.to_string()))?;
        let mut done: Vec<Option<Done>> = (0..ops.len()).map(|_| None).collect();
        for part in &mut self.envs.parts {
            for (&(local, _), result) in part.ops.iter().zip(part.results.drain(..)) {
                let i = part.offset + local;
                let o = result.map_err(|f| failed(format!("env {} (vector env {i}): {}", self.name, f.error)))?;
                obs.row_mut(i).copy_from_slice(part.obs.row(local));
                done[i] = Some(Done { reward: o.reward, terminated: o.terminated, truncated: o.truncated });
            }
        }
        Ok(done)
    }

    /// Each env's info from the last round.
    pub fn infos(&mut self) -> Vec<Info> {
        self.envs.parts.iter_mut().flat_map(|p| (0..p.len()).map(|l| p.block.info(l)).collect::<Vec<_>>()).collect()
    }
}
