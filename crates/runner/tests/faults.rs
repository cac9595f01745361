//! Fault injection: envs and agents that panic or fail cost attempts, never
//! episodes. Every episode index is accounted for exactly once.

use rollway_core::{seed, Params};
use rollway_runner::{EpisodeResult, Mode, RunConfig, Status, Summary};

use crate::common;

const N: u64 = 300;

fn faulty(env_params: Params, agent: &str, agent_params: Params) -> RunConfig {
    RunConfig { max_restarts: 10_000, ..common::faulty(env_params, agent, agent_params, N) }
}

fn run(cfg: RunConfig) -> (Summary, Vec<EpisodeResult>) {
    let mut eps = Vec::new();
    let s = common::registered(cfg).unwrap().run(&mut eps).unwrap();
    (s, eps)
}

/// Every index 0..N exactly once (reported, or left untried past the reported
/// prefix), and attempts add up.
fn assert_accounted(s: &Summary, eps: &[EpisodeResult]) {
    let idx: Vec<u64> = eps.iter().map(|e| e.run_index).collect();
    assert_eq!(idx, (0..N - s.untried).collect::<Vec<_>>(), "each episode reported once, in order");
    assert_eq!(s.episodes + s.given_up + s.untried, N);
    assert_eq!(s.attempts, s.episodes + s.failed_attempts, "attempts = completed + failed attempts");
    let given_up: Vec<u64> = eps.iter().filter(|e| e.status == Status::GivenUp).map(|e| e.run_index).collect();
    assert_eq!(given_up, s.given_up_episodes);
}

fn clean() -> Vec<String> {
    let (_, eps) = run(faulty(Params::new(), "random", Params::new()));
    eps.iter().map(EpisodeResult::outcome_json).collect()
}

#[test]
fn env_panics_cost_attempts_and_reruns_match_a_clean_run() {
    let (s, eps) = run(faulty(Params::new().with("panic_every", 37), "random", Params::new()));
    assert_accounted(&s, &eps);
    assert!(s.failed_attempts > 50, "faults were injected: {}", s.failed_attempts);
    assert_eq!(s.given_up, 0);
    assert_eq!(s.restarts, s.failed_attempts, "each env fault rebuilds that env");
    let outs: Vec<String> = eps.iter().map(EpisodeResult::outcome_json).collect();
    assert_eq!(outs, clean(), "re-run episodes are identical to undisturbed ones");
}

#[test]
fn env_errors_behave_like_panics() {
    let (s, eps) = run(RunConfig { mode: Mode::Async, ..faulty(Params::new().with("error_every", 29), "random", Params::new()) });
    assert_accounted(&s, &eps);
    assert!(s.failed_attempts > 50);
    assert!(s.faults.iter().all(|f| f.error.contains("injected error")));
}

#[test]
fn poisoned_episode_is_given_up_after_max_attempts() {
    let poison = seed::episode_seed(3, 5);
    let (s, eps) = run(faulty(Params::new().with("poison_seeds", poison), "random", Params::new()));
    assert_accounted(&s, &eps);
    assert_eq!(s.given_up_episodes, vec![5]);
    assert_eq!(eps[5].attempt, 3);
    assert!(eps[5].error.as_deref().unwrap().contains("poisoned"));
    assert_eq!(s.failed_attempts, 3);
}

#[test]
fn workers_out_of_restarts_leave_no_episode_unaccounted() {
    let cfg = RunConfig { max_restarts: 2, ..faulty(Params::new().with("panic_every", 50), "random", Params::new()) };
    let (s, eps) = run(cfg);
    assert_accounted(&s, &eps);
    assert!(s.untried > 0, "both workers retired early, so some episodes could not run");
    assert!(eps.iter().filter(|e| e.status == Status::GivenUp).all(|e| e.error.is_some()));
}

#[test]
fn agent_panics_cost_the_batch_attempts_and_reruns_match() {
    let cfg = faulty(Params::new(), "faulty", Params::new().with("panic_every", 40));
    let (s, eps) = run(cfg);
    assert_accounted(&s, &eps);
    assert!(s.failed_attempts > 0 && s.restarts > 0);
    let outs: Vec<String> = eps.iter().map(EpisodeResult::outcome_json).collect();
    assert_eq!(outs, clean());
}

#[test]
fn agent_that_keeps_failing_stops_the_run_with_an_error() {
    let cfg = RunConfig { max_restarts: 3, ..faulty(Params::new(), "faulty", Params::new().with("error_every", 1)) };
    let err = common::registered(cfg).unwrap().run(&mut ()).unwrap_err();
    assert!(err.to_string().contains("agent failed"), "{err}");
}
