//! The `onnx:` agent: a network exported to ONNX (`torch.onnx.export`) acting
//! inside rollway's batched inference, with no Python in the loop.
//!
//! `--agent onnx:policy.onnx` (or `rollway.run(agent="onnx:policy.onnx")`, or a
//! Ray run) builds an [`OnnxAgents`] factory; each agent it makes loads the model,
//! binds its inputs and outputs to the env's spaces by name (`binding`: refused
//! before the run, both shapes named, when they do not fit) and then makes one
//! model call per batch (`agent`), so `--batch MIN:MAX`, `--max-wait`, sync and
//! async modes, fault accounting and recording are those of any agent.
//!
//! # Engines
//! - **ONNX Runtime** (`backend=ort`), loaded at run time, never at build time:
//!   from `runtime=PATH`, else `$ORT_DYLIB_PATH`, else the `onnxruntime` pip
//!   package of the run's Python ([`runtime`]). It runs every standard operator,
//!   on `threads` intra-op threads (default: the cores the envs leave while it
//!   runs: all of them in sync mode, where every env waits for the batch), and on a GPU with the CUDA execution provider (`device=cuda`, or
//!   `device=auto` when the runtime has it: `pip install onnxruntime-gpu`). A model
//!   that the CUDA provider cannot take is an error, not a quiet CPU run.
//! - **tract** (`backend=tract`), pure Rust, compiled in with the `tract` feature
//!   (the wheel has it; a source build leaves it out unless asked, as it is 40% of
//!   a cold build): the fallback of `backend=auto` where no runtime is found or the
//!   one found cannot run the model (the summary then says why). CPU, one thread;
//!   MLP, CNN and recurrent operators (`tract_backend` lists them). Without it, a
//!   run that would need it is refused before it starts, saying how to get either
//!   engine ([`ENGINES`] lists this build's).
//!
//! The run's summary says which engine ran, on what device, with how many
//! threads, and how long the model's calls took (`OnnxAgent::about`).

#![forbid(unsafe_code)]

mod agent;
pub mod backend;
mod binding;
mod ort_backend;
pub mod runtime;
#[cfg(feature = "tract")]
mod tract_backend;

use std::path::PathBuf;

use rollway_core::{Agent, AgentFactory, EnvSpec, Error, Layout, Params, Result};

pub use agent::OnnxAgent;
use backend::Backend;

/// The agent-name prefix of ONNX models: `onnx:PATH`.
pub const PREFIX: &str = "onnx:";

/// One line for `rollway agents`.
pub const SUMMARY: &str = "a network exported to ONNX (torch.onnx.export), one call per batch: inputs obs/<leaf>, first, state…; outputs action or logits, state…_out, extras";

/// The engines this build can run a model with (`rollway._rollway.ONNX_ENGINES` in Python;
/// `rollway agents` says it in the `backend` help).
#[cfg(feature = "tract")]
pub const ENGINES: &[&str] = &["ort", "tract"];
/// The engines this build can run a model with (`rollway._rollway.ONNX_ENGINES` in Python;
/// `rollway agents` says it in the `backend` help).
#[cfg(not(feature = "tract"))]
pub const ENGINES: &[&str] = &["ort"];

#[cfg(feature = "tract")]
const BACKEND_HELP: &str = "auto (ONNX Runtime if found, else tract), ort or tract";
#[cfg(not(feature = "tract"))]
const BACKEND_HELP: &str = "auto or ort: ONNX Runtime (this build has no tract: the wheel has it, or build with --features tract)";

/// Why a build without the `tract` feature cannot fall back to it, for messages.
#[cfg(not(feature = "tract"))]
const NO_TRACT: &str = "this rollway was built without tract, the pure-Rust engine: pip install onnxruntime, \
     or use the wheel (it has tract), or build with `--features tract`";

/// The agent parameters `onnx:` takes, with their help (`rollway agents` lists them).
pub const PARAMS: &[(&str, &str)] = &[
    ("backend", BACKEND_HELP),
    ("runtime", "path of libonnxruntime.so (or its folder); default $ORT_DYLIB_PATH, else the run's Python's onnxruntime package"),
    ("device", "auto (CUDA when the runtime has it), cpu or cuda (an error when CUDA cannot run the model)"),
    ("threads", "intra-op threads of ONNX Runtime (default: the cores the envs leave while it runs: all in sync mode, those the workers leave in async mode)"),
    ("sample", "false: argmax of discrete logits; true: sample them with the episode's seeded stream"),
    ("extras", "outputs to record beside the actions: one (value), several ([value,logprob]: brackets keep the commas in one --agent-opt), or all"),
];

/// True for agent names `onnx:PATH`.
pub fn is_onnx(agent: &str) -> bool {
    agent.starts_with(PREFIX)
}

/// `agent` with an `onnx:` model's path made absolute (from the current
/// directory), so that the name a dataset stores finds the model again from
/// wherever the run is resumed, and from a Ray actor's own working directory.
/// Other names come back as they are.
pub fn absolute(agent: &str) -> String {
    match agent.strip_prefix(PREFIX).map(std::path::absolute) {
        Some(Ok(p)) => format!("{PREFIX}{}", p.display()),
        _ => agent.to_string(),
    }
}

/// Which engine runs the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Auto,
    Ort,
    Tract,
}

/// Where ONNX Runtime runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// CUDA when the runtime has it, else the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// CUDA, or an error.
    Cuda,
}

/// An `onnx:` agent's settings, from its parameters.
#[derive(Clone, Debug)]
struct Options {
    engine: Engine,
    runtime: Option<PathBuf>,
    device: Device,
    threads: usize,
    sample: bool,
    extras: Vec<String>,
}

impl Options {
    fn parse(p: &Params, busy: usize) -> Result<Options> {
        p.expect_only(&PARAMS.iter().map(|(k, _)| *k).collect::<Vec<_>>())?;
        let bad = |name: &str, message: String| Error::Param { name: name.into(), message };
        let engine = match p.raw("backend").unwrap_or("auto") {
            "auto" => Engine::Auto,
            "ort" | "onnxruntime" => Engine::Ort,
            "tract" => Engine::Tract,
            other => return Err(bad("backend", format!("`{other}`: use auto, ort or tract"))),
        };
        let device = match p.raw("device").unwrap_or("auto") {
            "auto" => Device::Auto,
            "cpu" => Device::Cpu,
            "cuda" | "gpu" => Device::Cuda,
            other => return Err(bad("device", format!("`{other}`: use auto, cpu or cuda"))),
        };
        if engine == Engine::Tract && device == Device::Cuda {
            return Err(bad("device", "tract runs on the CPU only: use backend=ort (onnxruntime-gpu) for CUDA".into()));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = p.get("threads", cores.saturating_sub(busy).max(1))?;
        if threads == 0 {
            return Err(bad("threads", "must be at least 1".into()));
        }
        let list = |s: &str| s.trim().trim_start_matches('[').trim_end_matches(']').to_string();
        let extras = p.raw("extras").map(|s| list(s).split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect());
        Ok(Options {
            engine,
            runtime: p.raw("runtime").map(PathBuf::from),
            device,
            threads,
            sample: p.get("sample", false)?,
            extras: extras.unwrap_or_default(),
        })
    }
}

/// Builds `onnx:PATH` agents: each loads the model and binds it to the env.
pub struct OnnxAgents {
    name: String,
    path: PathBuf,
    params: Params,
    busy: usize,
    python: PathBuf,
}

impl OnnxAgents {
    /// The factory of agent `name` (`onnx:PATH`) with `params`, for a run whose envs
    /// keep `busy` cores busy while the model runs (0 in sync mode: they wait for
    /// it); `python` is the interpreter whose `onnxruntime` package is looked for.
    pub fn new(name: &str, params: Params, busy: usize, python: PathBuf) -> OnnxAgents {
        let path = PathBuf::from(name.strip_prefix(PREFIX).unwrap_or(name));
        OnnxAgents { name: name.to_string(), path, params, busy, python }
    }

    fn backend(&self, o: &Options) -> Result<Box<dyn Backend>> {
        let input = |message: String| Error::Param { name: "agent".into(), message };
        if !self.path.is_file() {
            return Err(input(format!("{}: no such model file (onnx:PATH names an .onnx file)", self.path.display())));
        }
        let lib = match o.engine {
            Engine::Tract => Err(String::new()),
            _ => runtime::find(o.runtime.as_deref(), &self.python),
        };
        #[cfg(feature = "tract")]
        let tract = |why: Option<String>| -> Result<Box<dyn Backend>> {
            let mut t = tract_backend::Tract::load(&self.path).map_err(input)?;
            t.why = why;
            Ok(Box::new(t))
        };
        #[cfg(not(feature = "tract"))]
        let tract = |why: Option<String>| -> Result<Box<dyn Backend>> {
            Err(input(match why {
                Some(why) => format!("{why}; {NO_TRACT}"),
                None => format!("backend=tract: {NO_TRACT}"),
            }))
        };
        match (o.engine, lib) {
            (Engine::Ort, Err(why)) => Err(input(format!("backend=ort: {why}"))),
            (Engine::Auto, Err(why)) if o.device == Device::Cuda => Err(input(format!("device=cuda needs ONNX Runtime: {why}"))),
            (Engine::Tract, _) => tract(None),
            (Engine::Auto, Err(why)) => tract(Some(why)),
            (engine, Ok(lib)) => match ort_backend::Ort::load(&lib, &self.path, o.threads, o.device) {
                Ok(b) => Ok(Box::new(b)),
                // A runtime that is there but cannot run the model (too old, an operator it
                // lacks): `auto` tries tract, and the summary says why.
                Err(why) if engine == Engine::Auto && o.device != Device::Cuda && cfg!(feature = "tract") => {
                    tract(Some(why.clone())).map_err(|e| input(format!("{why}; tract could not run it either: {e}")))
                }
                Err(why) => Err(input(why)),
            },
        }
    }

    fn build(&self, spec: &EnvSpec) -> Result<OnnxAgent> {
        let o = Options::parse(&self.params, self.busy)?;
        let backend = self.backend(&o)?;
        let misfit = |m: String| Error::Param { name: "agent".into(), message: format!("{}: {m}", self.path.display()) };
        let plan = binding::plan(backend.inputs(), backend.outputs(), spec, &o.extras).map_err(misfit)?;
        Ok(OnnxAgent {
            name: self.name.clone(),
            backend,
            plan,
            ol: Layout::of(&spec.observation_space),
            al: Layout::of(&spec.action_space),
            sample: o.sample,
            extras: Vec::new(),
            calls: 0,
            model_time: std::time::Duration::ZERO,
            agent_time: std::time::Duration::ZERO,
        })
    }
}

impl AgentFactory for OnnxAgents {
    fn name(&self) -> &str {
        &self.name
    }

    fn make(&self, spec: &EnvSpec) -> Result<Box<dyn Agent>> {
        Ok(Box::new(self.build(spec)?))
    }
}
