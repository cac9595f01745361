//! Where a run's Python envs step, when the front can step them in its own process
//! (the Python binding's inline host, as a rollout's) as well as in env processes.
//!
//! Inline, the calling thread steps all the run's envs, one Python call each under
//! the GIL: no pipe round trip per round (~50 µs on a 2-core VM) and no process to
//! start, but one env at a time (more worker threads would only take turns at the
//! GIL), and a hung env cannot be killed nor a crashed interpreter survived. In
//! processes, `workers` of them step their envs in parallel, each round paying the
//! round trip. Which is faster depends on the env's cost and the cores: Gymnasium's
//! CartPole (~10 µs a step) on 2 cores goes faster inline, an env of milliseconds
//! wants every core. So [`Host::Auto`] measures, as calibration measures a size
//! ([`tune::measure`]), when the run's target is large enough to pay for it
//! ([`MIN_STEPS`], [`MIN_EPISODES`]): first in processes, the host that can be
//! killed, timed once every process is up (~1.5 s with their start); then, when that
//! probe saw the envs step (an env that hangs is never tried inline, where it could
//! not be killed), inline; the faster is taken. Stepping is the sign asked for, not
//! an episode's end: a probe's window is short (`tune::WINDOW`), and on a loaded
//! machine (pytest's workers beside it) or with long episodes it can pass before any
//! episode ends, which once left auto unmeasured on a healthy CartPole. Both probes
//! run on every run that long, whatever the machine's pace: the threshold is the
//! run's size, never a time budget, which a fast machine would exhaust (a 100,000-step
//! CartPole run lasts ~1.2 s at 80k steps/s, where a budget share of it left no room
//! for the second probe, and auto then kept processes unmeasured). Other runs keep
//! processes, as does a run with a `step_timeout` (only a process can be killed).
//! An env that may crash its interpreter or hang for good is safer with
//! `host="process"`, which the front documents.
//!
//! Inline runs are sync with one worker: the calling thread steps the envs and
//! calls the agent in turn, with no hand-off between threads (an async worker's
//! hand-offs cost more than a cheap env's step: 5k steps/s at N = 1 against 32k
//! sync, 2-core VM). A Ctrl-C then lands in env code as often as not; the Python
//! front takes that `KeyboardInterrupt` as the user's (crates/python, `pyenvs.rs`).
//! The run's episodes are the same either way (each is seeded by its index), only
//! their pace differs.

use std::sync::Arc;
use std::time::Instant;

use rollway_core::{AgentFactory, EnvFactory};
use rollway_runner::tune::{self, Calibration, HostChoice};
use rollway_runner::{Mode, RunConfig, Target};

use crate::host::Host;
use crate::job::Job;

/// The smallest steps target for which `Auto` measures (below it: processes).
pub const MIN_STEPS: u64 = 100_000;
/// The smallest episodes target for which `Auto` measures (below it: processes).
pub const MIN_EPISODES: u64 = 2_000;

fn long_enough(cfg: &RunConfig) -> bool {
    match cfg.target {
        Target::Steps(s) => s >= MIN_STEPS,
        Target::Episodes(e) => e >= MIN_EPISODES,
    }
}

/// The run `cfg` with its envs inline: all of them in one sync worker, the caller's thread.
fn inline_config(cfg: &RunConfig) -> RunConfig {
    RunConfig { workers: 1, envs_per_worker: cfg.total_envs(), mode: Mode::Sync, ..cfg.clone() }
}

/// Picks where `job`'s Python envs step (`host`), when the front offers `inline`
/// beside the processes of `envs` (or asks for processes); adjusts `job` to an
/// inline run when that is the choice. Returns the envs to run and the choice,
/// added to the calibration.
pub(crate) fn choose(
    job: &mut Job,
    envs: Arc<dyn EnvFactory>,
    inline: Option<Arc<dyn EnvFactory>>,
    agents: &Arc<dyn AgentFactory>,
    host: Host,
    quiet: bool,
) -> (Arc<dyn EnvFactory>, Option<HostChoice>) {
    let choice = |host: &str, why: &str, inline: Option<f64>, process: Option<f64>| {
        Some(HostChoice { host: host.into(), why: why.into(), inline_steps_per_s: inline, process_steps_per_s: process })
    };
    // A front asking for processes offers no inline host (making one would make an env here).
    let Some(inline) = inline else {
        return (envs, if host == Host::Process { choice("process", "asked", None, None) } else { None });
    };
    let one = inline_config(&job.cfg);
    match host {
        Host::Process => (envs, choice("process", "asked", None, None)),
        Host::Inline => {
            job.cfg = one;
            (inline, choice("inline", "asked", None, None))
        }
        Host::Auto if job.cfg.step_timeout.is_some() => (envs, choice("process", "step_timeout: only a process can be killed", None, None)),
        Host::Auto if !long_enough(&job.cfg) => (envs, choice("process", "a short run: not measured", None, None)),
        Host::Auto => {
            if !quiet {
                eprintln!("rollway: measuring where the Python envs step faster, in env processes or in this process (host= skips this)");
            }
            let at_process = match tune::measure(&job.cfg, envs.clone(), agents.clone()) {
                Ok((rate, _)) if rate > 0.0 => rate,
                _ => return (envs, choice("process", "the envs did not step in env processes: not tried inline", None, None)),
            };
            match tune::measure(&one, inline.clone(), agents.clone()) {
                Ok((at_inline, _)) if at_inline > at_process => {
                    job.cfg = one;
                    (inline, choice("inline", "measured", Some(at_inline), Some(at_process)))
                }
                at_inline => (envs, choice("process", "measured", at_inline.ok().map(|(r, _)| r), Some(at_process))),
            }
        }
    }
}

/// `calibration` with the host `choice` and the time it took added (one made for it when the run had none).
pub(crate) fn with_choice(
    calibration: Option<Calibration>,
    cfg: &RunConfig,
    choice: Option<HostChoice>,
    started: Instant,
) -> Option<Calibration> {
    let Some(choice) = choice else { return calibration };
    let mut c = calibration.unwrap_or_else(|| Calibration {
        envs_per_worker: cfg.envs_per_worker,
        mode: cfg.mode,
        probes: Vec::new(),
        seconds: 0.0,
        host: None,
    });
    c.seconds += started.elapsed().as_secs_f64();
    (c.envs_per_worker, c.mode, c.host) = (cfg.envs_per_worker, cfg.mode, Some(choice));
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RunRequest;
    use crate::settings::RunOptions;
    use rollway_core::Params;

    fn job(env_params: &str) -> Job {
        let settings = RunOptions {
            env: Some("Faulty-v0".into()),
            env_params: Some(env_params.parse().unwrap()),
            agent: Some("random".into()),
            steps: Some(MIN_STEPS),
            workers: Some(2),
            envs_per_worker: Some(2),
            ..Default::default()
        };
        RunRequest { settings, no_record: true, quiet: true, ..Default::default() }.resolve().unwrap()
    }

    fn factories(job: &Job) -> (Arc<dyn EnvFactory>, Arc<dyn AgentFactory>) {
        let envs = rollway_envs::Registered::new("Faulty-v0", job.cfg.env_params.clone());
        (Arc::new(envs), Arc::new(rollway_agents::Registered::new("random", Params::new())))
    }

    #[test]
    fn auto_measures_both_hosts_when_no_episode_ends_during_the_probes() {
        // Episodes far longer than any probe: the envs step, no episode ends.
        let mut job = job("length = 1_000_000_000");
        let (envs, agents) = factories(&job);
        let (_, choice) = choose(&mut job, envs.clone(), Some(envs), &agents, Host::Auto, true);
        let c = choice.unwrap();
        assert_eq!(c.why, "measured", "{c:?}");
        assert!(c.inline_steps_per_s.unwrap() > 0.0 && c.process_steps_per_s.unwrap() > 0.0, "{c:?}");
        let inline = c.inline_steps_per_s > c.process_steps_per_s;
        assert_eq!((c.host.as_str(), job.cfg.workers), if inline { ("inline", 1) } else { ("process", 2) });
    }

    #[test]
    fn auto_keeps_processes_unmeasured_for_a_short_run() {
        let mut job = job("length = 5");
        job.cfg.target = rollway_runner::Target::Steps(MIN_STEPS - 1);
        let (envs, agents) = factories(&job);
        let (_, choice) = choose(&mut job, envs.clone(), Some(envs), &agents, Host::Auto, true);
        let c = choice.unwrap();
        assert_eq!((c.host.as_str(), c.why.as_str(), c.inline_steps_per_s), ("process", "a short run: not measured", None));
    }
}
