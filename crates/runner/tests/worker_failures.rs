//! A worker that fails costs its own episodes only, and what no worker could run
//! stays untried (the runner's data-safety regressions of issue 10).

use rollway_core::Params;
use rollway_runner::{EpisodeResult, RunConfig, Summary, Target};

use crate::common;

/// Faulty-v0 episodes are 20 steps; one env per worker, so in sync mode every
/// round is one agent call per chunk and episode `4k..4k+4` take rounds `20k+1..=20k+20`.
fn four_workers(agent_params: Params, max_batch: usize) -> RunConfig {
    RunConfig {
        env: "Faulty-v0".into(),
        agent: "faulty".into(),
        agent_params,
        workers: 4,
        envs_per_worker: 1,
        max_batch,
        target: Target::Episodes(8),
        max_restarts: 1,
        restart_backoff: std::time::Duration::ZERO,
        ..Default::default()
    }
}

fn run(cfg: RunConfig) -> (Summary, Vec<EpisodeResult>) {
    let mut eps = Vec::new();
    let s = common::registered(cfg).unwrap().run(&mut eps).expect("one agent panic is within max_restarts 1");
    (s, eps)
}

#[test]
fn issue10_one_agent_panic_over_four_workers_is_one_failure() {
    // Call 30 acts on episodes 4..8 in one batch spanning all four workers' blocks.
    let (s, eps) = run(four_workers(Params::new().with("panic_every", 30), 0));
    assert_eq!(s.restarts, 1, "one agent rebuild");
    assert_eq!(s.failed_attempts, 4, "each episode of the failed batch loses one attempt");
    assert_eq!(s.episodes, 8);
    let attempts: Vec<u32> = eps.iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, [1, 1, 1, 1, 2, 2, 2, 2]);
}

#[test]
fn issue10_agent_panic_in_one_chunk_spares_the_other_chunk() {
    // Two calls of two envs per round: call 49 is the first chunk of round 25.
    let (s, eps) = run(four_workers(Params::new().with("panic_every", 49), 2));
    assert_eq!(s.restarts, 1);
    assert_eq!(s.failed_attempts, 2, "only the failed call's episodes lose an attempt");
    assert_eq!(eps.iter().filter(|e| e.attempt == 2).count(), 2);
    assert_eq!(s.episodes, 8);
}

#[test]
fn issue10_episodes_no_worker_could_run_stay_untried() {
    // Every env step fails and no restart is allowed: both workers retire on their
    // first step, with nearly every episode never attempted.
    let n = 200_000;
    let cfg = RunConfig {
        env: "Faulty-v0".into(),
        env_params: Params::new().with("error_every", 1),
        agent: "random".into(),
        workers: 2,
        envs_per_worker: 2,
        target: Target::Episodes(n),
        max_restarts: 0,
        restart_backoff: std::time::Duration::ZERO,
        ..Default::default()
    };
    let mut eps: Vec<EpisodeResult> = Vec::new();
    let s = common::registered(cfg).unwrap().run(&mut eps).unwrap();
    assert!(eps.is_empty(), "nothing is reported for episodes no worker finished: {} reported", eps.len());
    assert_eq!((s.untried, s.given_up, s.episodes), (n, 0, 0));
    assert_eq!(s.attempts, s.failed_attempts);
}

#[test]
fn issue10_finished_episodes_past_an_untried_one_are_not_reported() {
    // One env per worker; each instance fails on its 25th step call, i.e. in its
    // second episode, and retires: episodes 0 and 1 finish, 2 and 3 do not.
    let cfg = RunConfig {
        env: "Faulty-v0".into(),
        env_params: Params::new().with("error_every", 25),
        agent: "random".into(),
        workers: 2,
        envs_per_worker: 1,
        target: Target::Episodes(50),
        max_restarts: 0,
        restart_backoff: std::time::Duration::ZERO,
        ..Default::default()
    };
    let mut eps: Vec<EpisodeResult> = Vec::new();
    let s = common::registered(cfg.clone()).unwrap().run(&mut eps).unwrap();
    let idx: Vec<u64> = eps.iter().map(|e| e.run_index).collect();
    assert_eq!(idx, [0, 1]);
    assert_eq!(s.untried, 48);
    // A resumed run starts at the first untried index.
    let resumed = RunConfig { start_index: 2, ..cfg };
    let mut more: Vec<EpisodeResult> = Vec::new();
    let s = common::registered(resumed).unwrap().run(&mut more).unwrap();
    assert_eq!(more.iter().map(|e| e.run_index).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(s.untried, 46);
}

#[test]
fn issue10_settings_that_would_abort_the_process_are_refused() {
    let field = |cfg: RunConfig| match cfg.validate() {
        Err(rollway_runner::Error::Config { field, .. }) => field,
        other => panic!("expected a config error, got {other:?}"),
    };
    let d = RunConfig::default;
    assert_eq!(field(RunConfig { envs_per_worker: 100_000_000, ..d() }), "envs_per_worker");
    assert_eq!(field(RunConfig { workers: 1024, envs_per_worker: 65_536, ..d() }), "envs_per_worker");
    assert_eq!(field(RunConfig { max_wait: std::time::Duration::from_secs(7200), ..d() }), "max_wait");
    assert!(RunConfig { workers: 1024, envs_per_worker: 1024, max_wait: RunConfig::MAX_WAIT, ..d() }.validate().is_ok());
}
