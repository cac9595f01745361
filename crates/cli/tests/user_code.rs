//! Issue 36: user code that answers wrong, and runs that end short, from the CLI:
//! exit codes and the messages that say what, where and why.

use std::process::{Command, Output};

fn rollway<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const FAULTY: [&str; 10] = ["run", "--env", "Faulty-v0", "--workers", "1", "--envs-per-worker", "2", "--mode", "sync", "-q"];

#[test]
fn issue36_an_action_outside_the_space_fails_the_run_naming_agent_slot_value_and_space() {
    let o = rollway(&[&FAULTY[..], &["--agent", "faulty", "--agent-opt", "bad_action_every=1", "--episodes", "4", "--no-record"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("agent faulty: env slot 1: action 7 is outside Discrete(2)"), "{}", stderr(&o));
    // Unchecked, the env takes it (Faulty-v0 takes any action).
    let o = rollway(
        &[&FAULTY[..], &["--agent", "faulty", "--agent-opt", "bad_action_every=1", "--episodes", "4", "--no-record", "--check", "false"]]
            .concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn issue36_nan_observations_cost_attempts_and_a_run_that_ends_short_exits_1_saying_why() {
    // Every step's observation is NaN: each attempt fails, each episode is given up.
    let o = rollway(&[&FAULTY[..], &["--agent", "random", "--env-opt", "nan_obs_every=1", "--episodes", "3", "--no-record"]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("rollway: run ended short: 3 episode(s) given up after failed attempts"), "{err}");
    assert!(err.contains("(last error: env Faulty-v0: observation is NaN (Box(float32, [1]) takes finite numbers))"), "{err}");
}

#[test]
fn issue36_observations_outside_the_space_are_warned_about_and_the_run_succeeds() {
    let o = rollway(&[&FAULTY[..], &["--agent", "random", "--env-opt", "high=3", "--episodes", "3", "--no-record"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    let warned: Vec<&str> = err.lines().filter(|l| l.starts_with("rollway: warning:")).collect();
    assert_eq!(warned, ["rollway: warning: env Faulty-v0: observation 4 is above its bound 3 in Box(float32, [1])"]);
}

#[test]
fn issue36_resume_takes_the_runs_own_command_and_names_each_flag_that_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("cp");
    let d = d.to_str().unwrap();
    let cmd = ["run", "--env", "CartPole-v1", "--agent", "random", "--workers", "1", "--max-wait", "2ms", "--seed", "5", "-q", "--out", d];
    assert!(rollway(&[&cmd[..], &["--episodes", "4"]].concat()).status.success());
    // The same command, a raised target and --resume added: taken.
    let o = rollway(&[&cmd[..], &["--episodes", "6", "--resume", d]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rollway_store::Dataset::open(std::path::Path::new(d)).unwrap().episodes().count(), 6);
    // Equal in value though not in spelling: 2000us is 2ms.
    let o = rollway(&["run", "--resume", d, "--max-wait", "2000us", "--episodes", "7", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // What differs is named, with the stored value beside the given one; nothing is written.
    let o = rollway(&["run", "--resume", d, "--seed", "6", "--workers", "3", "--env", "CartPole-v1", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("--seed: stored 5, given 6") && err.contains("--workers: stored 1, given 3") && !err.contains("--env:"), "{err}");
    assert_eq!(rollway_store::Dataset::open(std::path::Path::new(d)).unwrap().episodes().count(), 7);
    // The raised target was stored: a resume without one has nothing left to do, and says so by succeeding.
    let o = rollway(&["run", "--resume", d, "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(rollway_store::Dataset::open(std::path::Path::new(d)).unwrap().episodes().count(), 7);
    let o = rollway(&["run", "--resume", d, "--out", tmp.path().join("other").to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a resumed run records into the dataset it resumes"), "{}", stderr(&o));
}
