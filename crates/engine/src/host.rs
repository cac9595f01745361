//! Where a run's or a rollout's envs and agent come from, and where Python envs
//! step: the env and agent factories resolved from their names (built-in
//! registries, Python envs hosted in processes, `onnx:` models) or brought by the
//! caller ([`Sources`]), and the [`Host`] choice. Runs (`execute.rs`), rollouts
//! (`rollout/`) and the host measurement (`host_choice.rs`) all take them from here.

use std::path::PathBuf;
use std::sync::Arc;

use rollway_core::{AgentFactory, EnvFactory, Params};
use serde::{Deserialize, Serialize};

/// Why `host="inline"` and a `step_timeout` do not go together, for a run and a rollout alike.
pub(crate) const INLINE_CANNOT_TIME_OUT: &str = "host=\"inline\" steps the envs in this thread, where a hung env cannot be \
     stopped: step_timeout needs host=\"process\" (or \"auto\", which then keeps env processes)";

/// Where a rollout's Python envs step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum Host {
    /// Inline where [`Host::auto_inline`] says (one worker at lag 0, or envs that step
    /// without the GIL) and no `step_timeout` is set; processes otherwise.
    #[default]
    Auto,
    /// In the rollout's own thread, under the caller's interpreter (the front brings the factory).
    Inline,
    /// In env processes, `workers` of them.
    Process,
}

impl Host {
    /// The workers `asked` for `num_envs` envs `env`, else one, except for `atari:` envs
    /// away from `Inline` and envs that step without the GIL ([`steps_without_gil`]):
    /// one per core (see [`RolloutRequest::workers`](crate::RolloutRequest::workers)). A
    /// rollout and `rollway.make_vec` decide it here alike.
    pub fn workers(self, env: &str, asked: Option<usize>, num_envs: usize) -> usize {
        let per_core = || std::thread::available_parallelism().map_or(1, |n| n.get()).min(num_envs.max(1));
        match asked {
            Some(w) => w,
            None if env.starts_with("atari:") && self != Host::Inline => per_core(),
            None if steps_without_gil(env) => per_core(),
            None => 1,
        }
    }

    /// Whether `"auto"` steps `env`'s `workers` blocks inline, behind a learner up to
    /// `max_policy_lag` versions ahead: envs that step without the GIL always (their
    /// worker threads use every core with no process at all), others with one worker at
    /// lag 0 (a process would only add its round trip; at a higher lag the learner's
    /// Python would wait on the envs' GIL). A rollout adds only: no `step_timeout`.
    pub fn auto_inline(env: &str, workers: usize, max_policy_lag: u64) -> bool {
        steps_without_gil(env) || (workers == 1 && max_policy_lag == 0)
    }
}

/// Whether `env`'s steps run without the GIL: the MuJoCo tasks whose steps are
/// rollway's (`gym:HalfCheetah-v5`, …: `rollway_envs::mujoco::TASKS`), unless
/// `ROLLWAY_MUJOCO=python` leaves them to Gymnasium (as `rollway/_mujoco.py` reads it).
pub fn steps_without_gil(env: &str) -> bool {
    env.strip_prefix("gym:").and_then(rollway_envs::mujoco::kind).is_some() && std::env::var("ROLLWAY_MUJOCO").as_deref() != Ok("python")
}

impl TryFrom<String> for Host {
    type Error = String;

    fn try_from(s: String) -> std::result::Result<Host, String> {
        match s.as_str() {
            "auto" => Ok(Host::Auto),
            "inline" => Ok(Host::Inline),
            "process" => Ok(Host::Process),
            _ => Err(format!("host must be \"auto\", \"inline\" or \"process\", got {s:?}")),
        }
    }
}

/// Env and agent factories a caller brings itself (a Python callable, say), and
/// the Python that hosts `gym:`/`module:` envs. Each factory's name must be the
/// run's `env`/`agent` setting, which is what the dataset records.
#[derive(Default)]
pub struct Sources {
    /// The run's envs, instead of resolving `env`.
    pub envs: Option<Arc<dyn EnvFactory>>,
    /// A Python env factory pickled with cloudpickle (`rollway.run(env=callable)`):
    /// hosted in Python processes, called with `env_params`; `env` names it.
    pub env_pickle: Option<Vec<u8>>,
    /// The run's agent, instead of resolving `agent`.
    pub agents: Option<Arc<dyn AgentFactory>>,
    /// The interpreter for hosted envs (default: `$ROLLWAY_PYTHON`, else `python3`).
    pub python: Option<PathBuf>,
    /// The run's Python envs stepped in the front's own process (the Python
    /// binding's inline host): offered beside env processes, taken where `host` says.
    pub inline: Option<Arc<dyn EnvFactory>>,
    /// Where Python envs step when `inline` is offered (or `Process`, asked for
    /// Python envs without offering it); `Auto` measures both and takes the faster
    /// (see `host_choice.rs`).
    pub host: Host,
}

/// The factory of env `name` for runs and rollouts alike: `given` when the caller
/// brings one; a pickled callable or a `gym:`/`module:` name hosted in Python
/// processes; else a built-in env.
pub(crate) fn env_factory(
    name: &str,
    params: &Params,
    given: Option<Arc<dyn EnvFactory>>,
    pickle: Option<Vec<u8>>,
    python: Option<PathBuf>,
) -> Arc<dyn EnvFactory> {
    match (given, pickle) {
        (Some(f), _) => f,
        (None, Some(p)) => Arc::new(rollway_host::PythonEnvs::pickled(name, params, python, p)),
        (None, None) if rollway_host::is_hosted(name) => Arc::new(rollway_host::PythonEnvs::new(name, params, python)),
        (None, None) => Arc::new(rollway_envs::Registered::new(name, params.clone())),
    }
}

/// The factory of agent `name`: an `onnx:PATH` model (its ONNX Runtime found
/// through `python`, default [`rollway_host::default_python`]; the model gets the
/// cores that the `busy` ones the envs use while it runs leave), else a built-in agent.
pub fn agent_factory(name: &str, params: &Params, busy: usize, python: Option<PathBuf>) -> Arc<dyn AgentFactory> {
    if rollway_onnx::is_onnx(name) {
        let python = python.unwrap_or_else(rollway_host::default_python);
        return Arc::new(rollway_onnx::OnnxAgents::new(name, params.clone(), busy, python));
    }
    Arc::new(rollway_agents::Registered::new(name, params.clone()))
}
