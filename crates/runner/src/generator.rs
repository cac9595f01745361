//! The generator: a configured run, checked up front, that runs to its target.
//!
//! It knows envs and agents only through the factory traits of `rollway-core`
//! ([`EnvFactory`], [`AgentFactory`]), so the built-in registries are one source
//! among others (a Python host, a test's own env). The run itself is the central
//! stage's state machine (`central.rs`) over a pool of worker threads (`pool.rs`).

use std::sync::Arc;

use rollway_core::{AgentFactory, EnvFactory, EnvSpec};

use crate::central::Central;
use crate::collect::Summary;
use crate::filter::EpisodeLabeler;
use crate::{Error, Observer, Result, RunConfig};

/// A configured run: env and agent checked, ready to go.
pub struct Generator {
    pub(crate) cfg: Arc<RunConfig>,
    pub(crate) spec: EnvSpec,
    pub(crate) envs: Arc<dyn EnvFactory>,
    pub(crate) agents: Arc<dyn AgentFactory>,
    pub(crate) filters: Vec<Box<dyn EpisodeLabeler>>,
}

impl Generator {
    /// Validates `cfg`, reads the env spec from `envs` and builds one agent to
    /// check that it fits. `cfg.env` and `cfg.agent` must be the factories' names:
    /// they are what summaries and datasets record, and what a resumed run resolves
    /// again, so they may not say something else than what runs.
    ///
    /// The factories are shared (`Arc`) because every worker thread builds envs
    /// with the same one, and a host may keep a handle on its own.
    pub fn new(
        cfg: RunConfig,
        envs: Arc<dyn EnvFactory>,
        agents: Arc<dyn AgentFactory>,
        filters: Vec<Box<dyn EpisodeLabeler>>,
    ) -> Result<Generator> {
        cfg.validate()?;
        for (field, configured, built) in [("env", &cfg.env, envs.name()), ("agent", &cfg.agent, agents.name())] {
            if configured != built {
                return Err(Error::Config {
                    field,
                    message: format!("names `{configured}`, but the run's {field} factory builds `{built}`"),
                });
            }
        }
        let spec = envs.spec()?;
        drop(agents.make(&spec)?);
        Ok(Generator { cfg: Arc::new(cfg), spec, envs, agents, filters })
    }

    /// The env's spec.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// The configuration.
    pub fn config(&self) -> &RunConfig {
        &self.cfg
    }

    /// Runs to the target, reporting episodes (in index order) and progress to
    /// `observer`. However the run ends (done, an observer error, the agent giving
    /// up, a worker dying), every worker thread has ended when this returns.
    pub fn run(&self, observer: &mut dyn Observer) -> Result<Summary> {
        let mut central = Central::start(self, observer)?;
        let outcome = central.drive();
        let mut s = central.finish(outcome)?;
        let cfg = &self.cfg;
        s.env = self.spec.id.clone();
        s.agent = cfg.agent.clone();
        s.seed = cfg.seed;
        s.mode = cfg.mode.name().into();
        s.workers = cfg.workers;
        s.envs_per_worker = cfg.envs_per_worker;
        Ok(s)
    }
}
