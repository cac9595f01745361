//! User code that answers wrong (issue 36): actions outside the action space,
//! NaN observations and rewards, observations outside the space; and the restart
//! budget that lets a flaky env finish a long run while a broken one is retired.

use rollway_core::Params;
use rollway_runner::{EpisodeResult, Error, Mode, RunConfig, Status, Summary, Target};

use crate::common;

const N: u64 = 200;

fn cfg(env_params: Params, agent_params: Params) -> RunConfig {
    common::faulty(env_params, "faulty", agent_params, N)
}

fn run(cfg: RunConfig) -> (Summary, Vec<EpisodeResult>) {
    let mut eps = Vec::new();
    let s = common::registered(cfg).unwrap().run(&mut eps).unwrap();
    (s, eps)
}

fn outcomes(eps: &[EpisodeResult]) -> Vec<String> {
    eps.iter().map(EpisodeResult::outcome_json).collect()
}

/// Every index of the target reported once, in order, and nothing left short.
fn assert_complete(s: &Summary, eps: &[EpisodeResult], n: u64) {
    assert_eq!((s.episodes, s.given_up, s.untried), (n, 0, 0), "{:?}", s.shortfall());
    assert!(eps.iter().map(|e| e.run_index).eq(0..n), "each episode reported once, in order");
    assert_eq!(s.shortfall(), None);
}

#[test]
fn an_action_outside_the_space_is_the_agents_failure_naming_agent_slot_value_and_space() {
    // One worker: the order of a batch's rows does not depend on which worker was first.
    let c = RunConfig { workers: 1, ..cfg(Params::new(), Params::new().with("bad_action_every", 1)) };
    let err = common::registered(c).unwrap().run(&mut ()).unwrap_err();
    assert!(matches!(err, Error::AgentGaveUp { .. }), "{err}");
    let text = err.to_string();
    // The faulty agent spoils the batch's last row: env slot 3 in a sync round of 4.
    assert!(text.contains("agent faulty: env slot 3: action 7 is outside Discrete(2)"), "{text}");
}

#[test]
fn occasional_bad_actions_cost_attempts_and_reruns_match_an_undisturbed_run() {
    let (s, eps) = run(cfg(Params::new(), Params::new().with("bad_action_every", 41)));
    assert_complete(&s, &eps, N);
    assert!(s.failed_attempts > 0 && s.faults.iter().all(|f| f.error.contains("is outside Discrete(2)")), "{:?}", s.faults.first());
    let (_, clean) = run(cfg(Params::new(), Params::new()));
    assert_eq!(outcomes(&eps), outcomes(&clean));
}

#[test]
fn with_checks_off_a_bad_action_goes_to_the_env_unchecked() {
    let c = RunConfig { check: false, ..cfg(Params::new(), Params::new().with("bad_action_every", 1)) };
    let (s, eps) = run(c);
    assert_complete(&s, &eps, N);
    assert_eq!(s.failed_attempts, 0, "Faulty-v0 takes any action");
}

#[test]
fn nan_observations_and_rewards_cost_the_attempt_without_a_rebuild_and_name_the_field() {
    for (param, says) in [
        ("nan_obs_every", "env Faulty-v0: observation is NaN (Box(float32, [1]) takes finite numbers)"),
        ("nan_reward_every", "env Faulty-v0: reward NaN is not a finite number"),
    ] {
        let (s, eps) = run(RunConfig { mode: Mode::Async, ..cfg(Params::new().with(param, 53), Params::new()) });
        assert_complete(&s, &eps, N);
        assert!(s.failed_attempts > 10, "{param}: {}", s.failed_attempts);
        assert!(s.faults.iter().all(|f| f.error == says), "{param}: {:?}", s.faults[0]);
        assert_eq!(s.restarts, 0, "{param}: the env answered wrong, it did not crash: nothing to rebuild");
        assert!(eps.iter().all(|e| e.ret.is_finite()), "no NaN reaches the books");
        // Unchecked, the NaN is recorded as it is.
        let c = RunConfig { check: false, ..cfg(Params::new().with(param, 53), Params::new()) };
        assert_eq!(run(c).0.failed_attempts, 0);
    }
}

#[test]
fn an_observation_outside_the_space_is_a_warning_given_once_and_the_run_goes_on() {
    let (s, eps) = run(cfg(Params::new().with("high", 10), Params::new()));
    assert_complete(&s, &eps, N);
    assert_eq!(s.failed_attempts, 0);
    assert_eq!(s.warnings, ["env Faulty-v0: observation 11 is above its bound 10 in Box(float32, [1])"]);
}

#[test]
fn a_flaky_env_finishes_a_100k_episode_run_with_default_restarts() {
    // One failure in about 1000 episodes (5 steps each, a panic on one step call in 5000,
    // each env on its own): with the default budget of 3 restarts in a row (and its
    // backoff), no worker is retired. Counted over the whole run, the budget was used up
    // after the 4th failure of a worker: some 8000 episodes in.
    let c = RunConfig {
        target: Target::Episodes(100_000),
        restart_backoff: RunConfig::default().restart_backoff,
        max_restarts: RunConfig::default().max_restarts,
        ..cfg(Params::new().with("length", 5).with("panic_rate", 0.0002), Params::new())
    };
    let (s, eps) = run(c);
    assert_complete(&s, &eps, 100_000);
    assert!(s.restarts > 50 && s.restarts == s.failed_attempts, "restarts {} failed {}", s.restarts, s.failed_attempts);
}

#[test]
fn a_broken_env_is_retired_after_max_restarts_in_a_row_and_the_run_ends_short() {
    let (s, eps) = run(RunConfig { max_restarts: 2, ..cfg(Params::new().with("panic_every", 1), Params::new()) });
    assert_eq!(s.episodes, 0);
    assert!(s.untried > 0 && s.episodes + s.given_up + s.untried == N, "{s:?}");
    assert!(eps.iter().all(|e| e.status == Status::GivenUp && e.error.is_some()));
    let text = s.shortfall().expect("the run ended short");
    assert!(text.contains("untried: every worker used up its max_restarts"), "{text}");
}
