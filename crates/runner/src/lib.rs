//! The rollway generator: parallel workers stepping envs, one central batched
//! inference stage, fault tolerance with exact accounting, episode filters and a
//! run summary — MineStudio's generator → filter → recorder pipeline, in Rust.
//!
//! Episode `i` of a run with seed `s` always gets the env seed
//! `seed::episode_seed(s, i)` and its own agent random stream, so its actions,
//! return and length do not depend on the worker count, batch sizes or mode.
//!
//! The generator builds envs and agents through the factory traits of
//! `rollway-core` and knows no registry; here the built-in ones provide them:
//!
//! ```
//! use std::sync::Arc;
//! use rollway_runner::{filter, Generator, RunConfig, Target};
//!
//! let cfg = RunConfig { env: "Faulty-v0".into(), agent: "random".into(), target: Target::Episodes(10), ..Default::default() };
//! let envs = Arc::new(rollway_envs::Registered::new(&cfg.env, cfg.env_params.clone()));
//! let agents = Arc::new(rollway_agents::Registered::new(&cfg.agent, cfg.agent_params.clone()));
//! let filters = vec![filter::parse("kind=length,min=20,label=full").unwrap()];
//! let summary = Generator::new(cfg, envs, agents, filters).unwrap().run(&mut ()).unwrap();
//! assert_eq!(summary.episodes, 10);
//! assert_eq!(summary.labels["full"], 10);
//! ```
#![forbid(unsafe_code)]

mod central;
mod collect;
mod config;
mod error;
pub mod filter;
mod generator;
mod pool;
pub mod rollout;
mod schedule;
mod serial;
mod spin;
pub mod tune;
mod worker;

use std::time::Duration;

pub use collect::{shortfall, Stat, Summary};
pub use config::{Mode, RunConfig, Target};
pub use error::{Error, Result};
pub use generator::Generator;
pub use rollway_core::episode::{self, EpisodeResult, Fault, Label, Status, Trajectory};

/// Where a run is, for progress displays.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Episodes accounted for, in index order.
    pub episodes: u64,
    /// Steps in those episodes.
    pub steps: u64,
    /// The run's target.
    pub target: Target,
    /// Time since the run started.
    pub elapsed: Duration,
    /// Env and agent rebuilds so far.
    pub restarts: u64,
    /// Episodes given up so far.
    pub given_up: u64,
    /// Env rows the agent has chosen actions for, episodes still running included:
    /// the live pace, where `steps` moves only when the earliest episodes end.
    pub acted: u64,
    /// Every block of envs has been acted on at least once: all the run's envs are
    /// up (env processes have started), so `acted` moves at the run's pace.
    pub warm: bool,
}

/// Why an observer refused an episode (e.g. the dataset writer hit a disk error).
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Receives a run's episodes (in index order) and periodic progress.
pub trait Observer {
    /// A finished or given-up episode, labels applied. An error stops the run.
    fn on_episode(&mut self, _episode: EpisodeResult) -> std::result::Result<(), SinkError> {
        Ok(())
    }
    /// Called about forty times a second. An error stops the run (e.g. the user
    /// pressed Ctrl-C in a Python host); episodes already passed on are kept.
    fn on_progress(&mut self, _progress: &Progress) -> std::result::Result<(), SinkError> {
        Ok(())
    }
    /// Where this observer hands back the observation buffers of the episodes it is
    /// done with (a dataset writer, once they are committed), for the run to build
    /// its next episodes in; `None` (the default) when it keeps or frees them.
    fn recycler(&self) -> Option<rollway_core::Recycler> {
        None
    }
}

impl Observer for () {}

/// Keeps every episode.
impl Observer for Vec<EpisodeResult> {
    fn on_episode(&mut self, episode: EpisodeResult) -> std::result::Result<(), SinkError> {
        self.push(episode);
        Ok(())
    }
}
