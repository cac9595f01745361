//! A training loop's rollout, asked for as a typed [`RolloutRequest`] (settings
//! declared once, as a run's are in [`crate::RunOptions`]) and assembled here for
//! every front: the Python package passes its keyword arguments as one mapping,
//! `rollway.ray`'s actors the same mapping with their episode numbering, and a Rust
//! learner builds the request itself (`examples/rollout.rs`).
//!
//! Assembling is what a run does too, with the same pieces: the env factory chosen
//! from the env's name (`host.rs`'s choice: built-in, Python hosted in
//! processes, or one the caller brings, as the Python binding brings its inline
//! host), the agent factory for a policy given by name ([`crate::agent_factory`]),
//! and the dataset created, joined, or refused as a run's `--out` is. What differs
//! is the engine: [`rollway_runner::rollout::Rollout`], kept up between updates.
//!
//! [`RolloutPlan::new`] reads the env's spec (one env made and closed) before any
//! envs start, so a front can build a policy for those spaces (Python's adapter)
//! and a refusal costs nothing; [`RolloutPlan::start`] then starts them.
//!
//! Its parts: `request.rs`, what is asked and its checks; `replay.rs`, the dataset it
//! records into (new, joined, or resumed with each env slot's episodes numbered on);
//! here, the plan and the started rollout, which closes itself ([`StartedRollout::close`]).

use std::path::PathBuf;
use std::sync::Arc;

use rollway_core::{EnvFactory, EnvSpec, Params};
use rollway_runner::rollout::scan::Scan;
use rollway_runner::rollout::{AgentPolicy, Policy, Rollout, RolloutConfig};
use rollway_store::DatasetWriter;

use crate::error::{Error, InputContext, Result};
use crate::rollout::request::stored;
use crate::target::Target;

mod by_cost;
mod replay;
mod request;

pub use by_cost::{by_cost, ByCost};
pub use replay::Resumed;
pub use request::{RolloutRequest, RENAMED};

/// What a front brings besides the request: the envs, when not from the env's name
/// (the Python binding's inline host), a pickled env callable, the interpreter that
/// hosts Python envs.
#[derive(Default)]
pub struct RolloutSources {
    /// The envs, instead of resolving `env`.
    pub envs: Option<Arc<dyn EnvFactory>>,
    /// A cloudpickled env callable, hosted in Python processes.
    pub env_pickle: Option<Vec<u8>>,
    /// The interpreter for hosted envs and ONNX Runtime.
    pub python: Option<PathBuf>,
}

/// A checked request with its envs chosen and their spec read; nothing running yet.
pub struct RolloutPlan {
    request: RolloutRequest,
    cfg: RolloutConfig,
    envs: Arc<dyn EnvFactory>,
    spec: EnvSpec,
    python: Option<PathBuf>,
}

/// A started rollout and the dataset it records into, which [`StartedRollout::close`] closes.
pub struct StartedRollout {
    rollout: Rollout,
    /// The dataset writer, with `out`: the collecting thread holds the other reference until the rollout drops.
    writer: Option<Arc<DatasetWriter>>,
    /// With `out`: where the writer writes (on an object store, what pushes its shards there).
    target: Option<Target>,
    /// The run summary's settings, when the rollout owns its run (`out` without
    /// `join`: a joined run's driver stores the summary of all its writers).
    summary: Option<serde_json::Value>,
    /// With `resume`: what the replay held.
    resumed: Option<Resumed>,
}

impl StartedRollout {
    /// The engine.
    pub fn rollout(&self) -> &Rollout {
        &self.rollout
    }

    /// The engine, to collect from.
    pub fn rollout_mut(&mut self) -> &mut Rollout {
        &mut self.rollout
    }

    /// With `resume`: what the replay held.
    pub fn resumed(&self) -> Option<&Resumed> {
        self.resumed.as_ref()
    }

    /// With `out` on an object store: what is wrong with the store now, if anything.
    pub fn store_trouble(&self) -> Option<String> {
        self.target.as_ref().and_then(Target::trouble)
    }

    /// Stops the rollout (its envs and thread) and closes its dataset as a run closes
    /// one: the run's summary stored (the settings, with what the rollout delivered:
    /// [`rollway_runner::rollout::RolloutTotals`]), so that a report tells a rollout
    /// that closed from one that was killed, then everything committed and, on an
    /// object store, pushed.
    pub fn close(self) -> Result<()> {
        let StartedRollout { rollout, writer, target, summary, .. } = self;
        let totals = rollout.totals();
        // The collecting thread held the writer's other reference: it ends here.
        drop(rollout);
        let Some(Ok(w)) = writer.map(Arc::try_unwrap) else { return Ok(()) };
        if let Some(mut s) = summary {
            if let (Some(m), serde_json::Value::Object(t)) = (s.as_object_mut(), serde_json::to_value(&totals).expect("totals serialize")) {
                m.extend(t);
            }
            // A writer that failed says so from `finish`, with its own error.
            let _ = w.set_summary(s);
        }
        let committed = w.finish().map(drop).map_err(|source| Error::Store { op: "committing the dataset", source });
        let pushed = target.map(Target::finish);
        committed?;
        pushed.unwrap_or(Ok(()))
    }
}

impl RolloutPlan {
    /// Checks `request`, chooses its envs and reads their spec (making one env).
    pub fn new(request: RolloutRequest, sources: RolloutSources) -> Result<RolloutPlan> {
        let cfg = request.config()?;
        request.commit_age()?;
        let params = Params(request.env_params.clone());
        let envs = crate::host::env_factory(&request.env, &params, sources.envs, sources.env_pickle, sources.python.clone());
        let spec = envs.spec().map_err(core)?;
        Ok(RolloutPlan { request, cfg, envs, spec, python: sources.python })
    }

    /// Env slots of the episode numbering this rollout shares (`episode_ids`' slots, or its own envs).
    fn slots(&self) -> u64 {
        self.request.episode_ids.map_or(self.request.num_envs as u64, |e| e.2)
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The request.
    pub fn request(&self) -> &RolloutRequest {
        &self.request
    }

    /// The policy the request names, made for the env's spaces; `None` when it names none.
    pub fn named_policy(&self) -> Result<Option<Box<dyn Policy>>> {
        let Some(name) = &self.request.agent else {
            if !self.request.agent_params.is_empty() {
                bad!("agent_params= is for an agent given by name (onnx:PATH, a built-in agent), not a callable");
            }
            return Ok(None);
        };
        let params = Params(self.request.agent_params.clone());
        // Each step's envs wait for the policy's call: the model may take every core.
        let agent = crate::agent_factory(name, &params, 0, self.python.clone()).make(&self.spec).map_err(core)?;
        Ok(Some(Box::new(AgentPolicy(agent))))
    }

    /// Creates (or joins, or with `resume` continues) the dataset the request records
    /// into, then starts the envs and the engine with `policy`. A dataset directory
    /// that already holds one is refused before anything is written, unless resumed.
    pub fn start(self, policy: Box<dyn Policy>) -> Result<StartedRollout> {
        self.start_with(|cfg, envs, _, record| Rollout::recording(cfg, envs, policy, record))
    }

    /// [`RolloutPlan::start`] for fragments that `scan` makes whole, its policy inside
    /// it (`rollway_runner::rollout::scan`): the envs the plan chose are not started.
    pub fn start_scan(self, scan: Box<dyn Scan>) -> Result<StartedRollout> {
        self.start_with(|cfg, _, spec, record| Rollout::scanning(cfg, spec, scan, record))
    }

    fn start_with(
        mut self,
        make: impl FnOnce(
            RolloutConfig,
            Arc<dyn EnvFactory>,
            EnvSpec,
            Option<Box<dyn rollway_runner::Observer + Send>>,
        ) -> rollway_runner::Result<Rollout>,
    ) -> Result<StartedRollout> {
        let opened = crate::rollout::replay::open(&self.request, &self.spec, self.slots())?;
        if let Some(r) = &opened.resumed {
            let (offset, n) = (self.request.episode_ids.map_or(0, |e| e.1) as usize, self.cfg.envs);
            self.cfg.episode_starts = r.starts[offset..offset + n].to_vec();
        }
        let writer = opened.writer.map(Arc::new);
        let record = writer.clone().map(|w| Box::new(Recorder(w)) as Box<dyn rollway_runner::Observer + Send>);
        let rollout = make(self.cfg, self.envs, self.spec.clone(), record).map_err(Error::Run)?;
        let owns_run = writer.is_some() && self.request.join.is_none();
        let summary = owns_run.then(|| serde_json::json!({ "kind": "rollout", "config": stored(&self.request) }));
        Ok(StartedRollout { rollout, writer, target: opened.target, summary, resumed: opened.resumed })
    }

    /// Creates the dataset of `out` and its run (with `resume`, a run continuing the
    /// recorded one), and closes it again, unstarted: the run that
    /// `rollway.ray.Rollout`'s actors then join, made without starting envs. Returns
    /// the run's number and, resumed, the episodes each of the stream's slots has
    /// taken (`episode_ids`' slots of them; `None` unless resumed).
    pub fn prepare_dataset(&self) -> Result<(u32, Option<Resumed>)> {
        if let Some(dir) = self.request.out.as_ref().filter(|d| crate::target::on_store(d)) {
            bad!(
                "out={}: a distributed rollout's dataset on an object store is prepared by its driver (rollway.ray.Rollout), \
                 which holds the dataset's lease while its actors write",
                dir.display()
            );
        }
        let opened = crate::rollout::replay::open(&self.request, &self.spec, self.slots())?;
        let w = opened.writer.input(|| "preparing a rollout's dataset needs out=".into())?;
        let run = w.run().run;
        w.finish().map(drop).map_err(|source| Error::Store { op: "committing the dataset", source })?;
        opened.target.map(Target::finish).transpose()?;
        Ok((run, opened.resumed))
    }
}

/// An env's or agent's error while being made: an unknown name or a bad parameter
/// is the caller's input; an env or agent that fails on its own is a failed start.
fn core(e: rollway_core::Error) -> Error {
    match e {
        rollway_core::Error::Env { .. } | rollway_core::Error::Agent { .. } => Error::Run(e.into()),
        e => Error::input_from(e),
    }
}

/// A recording rollout's episodes go to the dataset writer as a run's do.
struct Recorder(Arc<DatasetWriter>);

impl rollway_runner::Observer for Recorder {
    fn on_episode(&mut self, episode: rollway_core::EpisodeResult) -> std::result::Result<(), rollway_runner::SinkError> {
        self.0.write(episode).map_err(Into::into)
    }
    fn recycler(&self) -> Option<rollway_core::Recycler> {
        Some(self.0.recycler())
    }
}

/// The workspace's Rust rollout example, compiled into this crate's unit tests (no test binary of its own).
#[cfg(test)]
#[path = "../../examples/rollout.rs"]
mod example;

#[cfg(test)]
mod tests {

    #[test]
    fn a_step_timeout_keeps_auto_in_processes_and_is_refused_inline() {
        let r = RolloutRequest { step_timeout: Some(2.0), ..Default::default() };
        assert!(RolloutRequest::default().inline() && !r.inline(), "auto: inline unless a step may have to be stopped");
        let e = RolloutRequest { host: Host::Inline, ..r }.config().unwrap_err();
        assert!(e.is_input() && crate::chain_text(&e).contains("step_timeout needs host=\"process\""), "{}", crate::chain_text(&e));
    }

    use super::*;
    use crate::Host;

    #[test]
    fn issue48_the_rust_rollout_example_collects_fragments() {
        super::example::main().unwrap();
    }

    #[test]
    fn unknown_settings_and_bad_values_are_input_errors_naming_them() {
        let e = RolloutRequest::from_json(r#"{"num_env": 4}"#).unwrap_err();
        assert!(e.is_input() && crate::chain_text(&e).contains("unknown field `num_env`"), "{}", crate::chain_text(&e));
        let r = RolloutRequest { num_envs: 0, ..Default::default() };
        let e = RolloutPlan::new(r, RolloutSources::default()).err().unwrap();
        assert!(e.is_input() && crate::chain_text(&e).contains("envs"), "{}", crate::chain_text(&e));
        let r = RolloutRequest { commit_every: 0.0, ..Default::default() };
        assert!(RolloutPlan::new(r, RolloutSources::default()).err().unwrap().is_input());
    }

    #[test]
    fn each_renamed_setting_reads_its_old_name_as_its_new_one() {
        for (old, new) in RENAMED {
            let value = if old.starts_with("steps") {
                serde_json::json!(7)
            } else if old.ends_with("params") {
                serde_json::json!({"k": "v"})
            } else {
                serde_json::json!("random")
            };
            let by =
                |k: &str| serde_json::to_value(RolloutRequest::from_json(&serde_json::json!({ k: value }).to_string()).unwrap()).unwrap();
            assert_eq!(by(old), by(new), "{old} is read as {new}");
            assert!(by(new).get(new).is_some() && by(new).get(old).is_none());
        }
    }

    #[test]
    fn a_request_round_trips_through_its_mapping() {
        let r = RolloutRequest {
            env: "Pendulum-v1".into(),
            num_envs: 3,
            host: Host::Process,
            episode_ids: Some((1, 2, 9)),
            ..Default::default()
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(RolloutRequest::from_json(&text).unwrap(), r);
        assert!(RolloutRequest::from_json(r#"{"host": "inline"}"#).unwrap().inline());
        assert!(!RolloutRequest::from_json(r#"{"workers": 2, "num_envs": 2}"#).unwrap().inline());
        let e = RolloutRequest::from_json(r#"{"host": "thread"}"#).unwrap_err();
        assert!(crate::chain_text(&e).contains(r#"host must be "auto", "inline" or "process", got "thread""#), "{}", crate::chain_text(&e));
    }

    #[test]
    fn atari_envs_default_to_a_process_per_core_and_others_to_one_worker() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let atari = |json: &str| RolloutRequest::from_json(&format!(r#"{{"env": "atari:Pong-v5", "num_envs": 64{json}}}"#)).unwrap();
        assert_eq!(atari("").workers(), cores);
        assert_eq!(atari("").inline(), cores == 1);
        assert_eq!(atari(r#", "workers": 1"#).workers(), 1);
        assert_eq!(atari(r#", "host": "inline""#).workers(), 1);
        assert_eq!(RolloutRequest::from_json(r#"{"env": "atari:Pong-v5", "num_envs": 1}"#).unwrap().workers(), 1);
        assert_eq!(RolloutRequest::from_json(r#"{"env": "gym:CartPole-v1"}"#).unwrap().workers(), 1);
    }

    #[test]
    fn mujoco_tasks_rollway_steps_default_to_a_thread_per_core_inline() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let req = |json: &str| RolloutRequest::from_json(&format!(r#"{{"num_envs": 16{json}}}"#)).unwrap();
        let cheetah = req(r#", "env": "gym:HalfCheetah-v5", "max_policy_lag": 1"#);
        assert_eq!((cheetah.workers(), cheetah.inline()), (cores, true));
        let stepped = req(r#", "env": "gym:HalfCheetah-v5", "step_timeout": 5.0"#);
        assert_eq!((stepped.workers(), stepped.inline()), (cores, false), "only a process can be timed out");
        // Ant is Gymnasium's to step: one worker, as any Python env.
        let ant = req(r#", "env": "gym:Ant-v5""#);
        assert_eq!((ant.workers(), ant.inline()), (1, true));
        assert!(!req(r#", "env": "gym:Ant-v5", "workers": 2"#).inline());
    }

    #[test]
    fn atari_envs_are_seeded_once_unless_recording_or_asked() {
        let req = |json: &str| RolloutRequest::from_json(json).unwrap().seed_each_episode();
        assert!(!req(r#"{"env": "atari:Pong-v5"}"#));
        assert!(req(r#"{"env": "atari:Pong-v5", "out": "/tmp/x"}"#));
        assert!(req(r#"{"env": "atari:Pong-v5", "seed_each_episode": true}"#));
        assert!(req(r#"{"env": "gym:CartPole-v1"}"#) && req(r#"{"env": "CartPole-v1"}"#));
        assert!(!req(r#"{"env": "CartPole-v1", "seed_each_episode": false}"#));
    }

    #[test]
    fn a_recording_rollout_refuses_a_dataset_and_stores_its_settings_and_summary() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("replay");
        let r = RolloutRequest {
            num_envs: 2,
            steps_per_fragment: 50,
            out: Some(out.clone()),
            agent: Some("random".into()),
            ..Default::default()
        };
        let plan = RolloutPlan::new(r.clone(), RolloutSources::default()).unwrap();
        let policy = plan.named_policy().unwrap().unwrap();
        let mut started = plan.start(policy).unwrap();
        let f = started.rollout_mut().collect().unwrap();
        let g = started.rollout_mut().collect().unwrap();
        started.close().unwrap();
        let ds = rollway_store::Dataset::open(&out).unwrap();
        assert_eq!(ds.episodes().count(), f.finished.len() + g.finished.len());
        let run = &ds.metadata().runs[0];
        let stored = &run.config["rollout"];
        assert_eq!((stored["num_envs"].as_u64(), stored["agent"].as_str()), (Some(2), Some("random")));
        // Issue 47: closed, it stores its run summary as a run does.
        let s = run.summary.as_ref().expect("a closed rollout stores its summary");
        assert_eq!((s["kind"].as_str(), s["fragments"].as_u64(), s["steps"].as_u64()), (Some("rollout"), Some(2), Some(200)));
        assert_eq!(s["episodes"].as_u64(), Some((f.finished.len() + g.finished.len()) as u64));
        assert!(s["steps_per_sec"].as_f64().unwrap() > 0.0 && s["config"]["num_envs"].as_u64() == Some(2));
        let e = RolloutPlan::new(r, RolloutSources::default()).unwrap().prepare_dataset().unwrap_err();
        assert!(e.is_input() && crate::chain_text(&e).contains("already holds a dataset"), "{}", crate::chain_text(&e));
    }
}
