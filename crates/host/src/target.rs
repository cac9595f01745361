//! What every process of one env factory hosts, how a process is started and
//! greeted, and the spec they all share (read once, by a process of its own).
//!
//! The process that read the spec is kept, idle, as the factory's spare, and the
//! first block launched takes it over: importing the env's modules and making its
//! first env is most of a process's start (gymnax imports for ~4 s, Craftax makes
//! its textures), and a run would otherwise pay it once more before its first round.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use rollway_core::{EnvSpec, Error, Layout, Result};

use crate::process::{self, Process};
use crate::proto::{Hello, Setup};

/// How long a new process may take to import its modules and make its first env.
const SETUP_TIMEOUT: Duration = Duration::from_secs(300);

/// What every process of a factory hosts, and the spec they share.
pub(crate) struct Target {
    name: String,
    python: PathBuf,
    params: BTreeMap<String, String>,
    pickled: Option<Vec<u8>>,
    spec: Mutex<Option<EnvSpec>>,
    /// The process that read the spec, waiting for a block's setup (see the module docs).
    spare: Mutex<Option<Process>>,
    live: process::Live,
}

impl Target {
    pub fn new(name: String, python: PathBuf, params: BTreeMap<String, String>, pickled: Option<Vec<u8>>) -> Target {
        Target { name, python, params, pickled, spec: Mutex::new(None), spare: Mutex::new(None), live: Default::default() }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Kills every live process of this factory (see `EnvFactory::interrupt`).
    pub fn kill_all(&self) {
        process::kill_all(&self.live);
    }

    /// Starts a process for `n` slots and reads its hello.
    pub fn open(&self, n: usize, shm: Option<&str>, infos: &str, cut: Option<u64>) -> std::result::Result<(Process, Hello), String> {
        let mut p = self.launch(n, shm, infos, cut)?;
        let hello = self.greet(&mut p)?;
        Ok((p, hello))
    }

    /// Starts a process for `n` slots and sends its setup, not waiting for it to import
    /// and make its envs: several blocks' processes do that at once ([`Target::greet`] waits).
    /// The spare, where there is one, is taken instead of a new process.
    pub fn launch(&self, n: usize, shm: Option<&str>, infos: &str, cut: Option<u64>) -> std::result::Result<Process, String> {
        let setup = Setup {
            target: self.name.clone(),
            params: self.params.clone(),
            pickled: self.pickled.is_some(),
            n,
            shm: shm.map(str::to_string),
            infos: infos.into(),
            cut,
        };
        let setup = serde_json::to_vec(&setup).expect("setups serialize");
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut p) = spare {
            // It has its factory already; one that died idle is replaced by a new process.
            if p.send(&setup).is_ok() {
                return Ok(p);
            }
        }
        let mut p = Process::spawn(&self.python, &self.live).map_err(|e| e.to_string())?;
        p.send(&setup).map_err(|g| self.not_started(g))?;
        if let Some(bytes) = &self.pickled {
            p.send(bytes).map_err(|g| self.not_started(g))?;
        }
        Ok(p)
    }

    /// Reads a launched process's hello: its spec, or the error that kept it from making its envs.
    pub fn greet(&self, p: &mut Process) -> std::result::Result<Hello, String> {
        let frame = p.recv(Some(SETUP_TIMEOUT)).map_err(|g| self.not_started(g))?;
        let hello: Hello = serde_json::from_slice(&frame).map_err(|e| format!("malformed hello from the env process: {e}"))?;
        match hello.error {
            Some(e) => Err(e),
            None => Ok(hello),
        }
    }

    fn not_started(&self, gone: process::Gone) -> String {
        format!("the env process did not start: {gone} (is the `rollway` package installed for {}?)", self.python.display())
    }

    pub fn spec(&self) -> Result<EnvSpec> {
        let mut cached = self.spec.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = &*cached {
            return Ok(s.clone());
        }
        let env_err = |message: String| Error::Env { env: self.name.clone(), message };
        let (process, hello) = self.open(0, None, "none", None).map_err(env_err)?;
        let s = hello.spec.ok_or_else(|| env_err("the env process sent no spec".into()))?;
        let spec = s.to_spec(&self.name)?;
        *cached = Some(spec.clone());
        *self.spare.lock().unwrap_or_else(|e| e.into_inner()) = Some(process);
        Ok(spec)
    }

    /// (action, observation) row bytes (the spec is cached once a run has been checked).
    pub fn row_bytes(&self) -> std::result::Result<(usize, usize), String> {
        let spec = self.spec().map_err(|e| e.to_string())?;
        Ok((Layout::of(&spec.action_space).row_bytes(), Layout::of(&spec.observation_space).row_bytes()))
    }
}
