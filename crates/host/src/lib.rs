//! Envs written in Python, hosted for the rollway generator: [`PythonEnvs`] is an
//! [`EnvFactory`] whose envs live in worker processes running Python.
//!
//! # Design
//! Each block of a worker's env slots is one OS process (`python -m
//! rollway._host`) holding that many Gymnasium envs. The worker thread runs a
//! round by writing ops (step or reset), actions and seeds into a shared memory
//! region laid out in rollway's own row format ([`shm`]), and sending one byte
//! down a pipe; the process runs every op, writes observations, rewards and flags
//! back into the region, and answers with one frame ([`proto`]). Nothing is
//! pickled per step, and a round costs one pipe round trip however many envs the
//! block holds, so the cost of hosting is a few microseconds per round plus
//! well under a microsecond per env (the loop inside the process is Rust, in the
//! `rollway._rollway` extension, calling `env.step` directly).
//!
//! Infos travel only when asked for: the final info of each episode (filters read
//! it), or every info with `record_infos`.
//!
//! # Faults
//! An exception in `make`, `reset` or `step` fails that slot's op; the process
//! closes that env and builds a new one at the slot's next reset. A process that
//! dies (segfault, `os._exit`, SIGKILL) or takes longer than `step_timeout` for a
//! round (then it is killed) fails every op of that round, counted as one restart,
//! and a fresh process takes over at the next round. Either way the generator
//! books each failed op as a failed attempt and re-runs the episode from its seed,
//! so nothing is lost and nothing is counted twice.
//!
//! # Processes
//! Processes are reaped on every path: a block stops its process when dropped
//! (asking first, killing after a grace period), a dead or timed-out one is
//! reaped at once, a run that ends while an env hangs kills its processes
//! ([`EnvFactory::interrupt`]), and every process dies with the run's process
//! (`PR_SET_PDEATHSIG`, from one forking thread), so a killed run leaves no
//! orphans either.
//!
//! The process that reads a factory's spec (before any block) is kept and becomes
//! the first block's: a run starts one process per block, not one more.

mod block;
mod process;
pub mod proto;
pub mod shm;
mod target;

use std::path::PathBuf;
use std::sync::Arc;

use rollway_core::{BlockOptions, Env, EnvBlock, EnvFactory, EnvSpec, Error, Params, Result};

use crate::target::Target;

/// True for env names a Python process hosts: `gym:ID` and `module:callable`
/// (built-in env ids have no colon).
pub fn is_hosted(name: &str) -> bool {
    name.contains(':')
}

/// An [`EnvFactory`] for envs written in Python: `gym:ID` (any registered
/// Gymnasium id, `params` as keyword arguments of `gymnasium.make`),
/// `module:callable` (called with `params`), or a pickled callable (from the
/// Python package). Each block of env slots runs in a process of its own.
pub struct PythonEnvs {
    target: Arc<Target>,
}

impl PythonEnvs {
    /// Envs `name` (`gym:ID` or `module:callable`) with `params`, hosted by `python`
    /// (default: `$ROLLWAY_PYTHON`, else `python3`; it must have the `rollway`
    /// package installed).
    pub fn new(name: &str, params: &Params, python: Option<PathBuf>) -> PythonEnvs {
        PythonEnvs::with_target(name, params, python, None)
    }

    /// Envs made by a callable pickled with cloudpickle; `name` is what runs record.
    pub fn pickled(name: &str, params: &Params, python: Option<PathBuf>, factory: Vec<u8>) -> PythonEnvs {
        PythonEnvs::with_target(name, params, python, Some(factory))
    }

    fn with_target(name: &str, params: &Params, python: Option<PathBuf>, pickled: Option<Vec<u8>>) -> PythonEnvs {
        let python = python.unwrap_or_else(default_python);
        let params = params.0.clone();
        PythonEnvs { target: Arc::new(Target::new(name.into(), python, params, pickled)) }
    }
}

/// `$ROLLWAY_PYTHON`, else `python3`: the interpreter every front hosts Python
/// with when the caller names none (the `rollway` wheel's CLI sets the variable to
/// its own interpreter).
pub fn default_python() -> PathBuf {
    std::env::var_os("ROLLWAY_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

impl EnvFactory for PythonEnvs {
    fn name(&self) -> &str {
        self.target.name()
    }

    fn make(&self) -> Result<Box<dyn Env>> {
        Err(Error::Env {
            env: self.target.name().to_string(),
            message: "envs hosted in Python processes are stepped in blocks, not one by one".into(),
        })
    }

    fn spec(&self) -> Result<EnvSpec> {
        self.target.spec()
    }

    fn block(&self, n: usize, options: BlockOptions) -> Option<Box<dyn EnvBlock>> {
        Some(Box::new(block::Hosted::new(self.target.clone(), n, options)))
    }

    fn steps_in_worker(&self) -> bool {
        false
    }

    fn interrupt(&self) {
        self.target.kill_all();
    }
}
