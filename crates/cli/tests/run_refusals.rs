//! What `rollway run` records, refuses and reports (the data-safety regressions of issue 10).

use std::path::Path;
use std::process::{Command, Output};

use rollway_store::Dataset;

fn rollway<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run indices of the committed episodes and how many are given up.
fn committed(dir: &Path) -> (Vec<u64>, usize) {
    let ds = Dataset::open(dir).unwrap();
    let mut idx: Vec<u64> = ds.episodes().map(|e| e.run_index).collect();
    idx.sort_unstable();
    (idx, ds.episodes().filter(|e| e.status == rollway_core::episode::Status::GivenUp).count())
}

#[test]
fn issue10_untried_episodes_are_not_committed_and_resume_runs_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    // The one env fails on its 25th step call (in episode 1) and may not restart.
    let o = rollway(&[
        "run",
        "--env",
        "Faulty-v0",
        "--env-opt",
        "error_every=25",
        "--agent",
        "random",
        "--workers",
        "1",
        "--envs-per-worker",
        "1",
        "--max-restarts",
        "0",
        "--episodes",
        "1000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("999 episode(s) untried"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("UNTRIED"));
    assert_eq!(committed(&dir), (vec![0], 0), "only the finished episode is committed");

    let o = rollway(&["run", "--resume", dir.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("998 episode(s) untried"), "{}", stderr(&o));
    assert_eq!(committed(&dir), (vec![0, 1], 0), "the resumed run ran episode 1");
}

const CARTPOLE: [&str; 6] = ["--env", "CartPole-v1", "--agent", "random", "-q", "--episodes"];

fn cartpole(out: &Path, episodes: &str, extra: &[&str]) -> Output {
    let mut args: Vec<&str> = vec!["run"];
    args.extend(CARTPOLE);
    args.extend([episodes, "--out", out.to_str().unwrap()]);
    args.extend(extra);
    rollway(&args)
}

fn runs(dir: &Path) -> usize {
    Dataset::open(dir).unwrap().metadata().runs.len()
}

#[test]
fn issue10_run_into_an_existing_dataset_needs_append() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    assert!(cartpole(&dir, "20", &[]).status.success());
    // The same command again (e.g. after a crash) must not record a duplicate run.
    let o = cartpole(&dir, "20", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("--resume {}", dir.display())), "{}", stderr(&o));
    assert_eq!((runs(&dir), committed(&dir).0.len()), (1, 20), "nothing was recorded");
    // --append records a new run after the first.
    let o = cartpole(&dir, "20", &["--append", "--seed", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!((runs(&dir), committed(&dir).0.len()), (2, 40));
}

/// A one-episode CartPole run that records nothing, with `extra` flags.
fn run(extra: &[&'static str]) -> Vec<&'static str> {
    let base = ["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "1", "--no-record", "-q"];
    [&base[..], extra].concat()
}

#[test]
fn issue10_numeric_settings_out_of_range_are_input_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (run(&["--max-wait", "1e300"]), "--max-wait"),
        (run(&["--max-wait", "2000000s"]), "--max-wait"),
        (run(&["--envs-per-worker", "100000000"]), "--envs-per-worker"),
        (run(&["--workers", "1000", "--envs-per-worker", "60000"]), "--envs-per-worker"),
        (run(&["--workers", "100000"]), "--workers"),
        (run(&["--fps", "4000000000"]), "--fps"),
        (vec!["load", "nowhere", "--threads", "100000000"], "--threads"),
        (vec!["load", "nowhere", "--prefetch", "100000000000"], "--prefetch"),
    ];
    for (args, flag) in cases {
        let o = rollway(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag) && !stderr(&o).contains("panic"), "{args:?}: {}", stderr(&o));
    }
    // From a config file the error names the config key instead.
    let toml = tmp.path().join("job.toml");
    std::fs::write(&toml, "env = \"CartPole-v1\"\nagent = \"random\"\nmax_wait = \"1e300\"\n").unwrap();
    let o = rollway(&["run", toml.to_str().unwrap(), "--no-record", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("config field `max_wait`"), "{}", stderr(&o));
}

#[test]
fn issue10_flag_errors_name_the_flag() {
    for (args, flag) in [(["--max-wait", "soon"], "--max-wait"), (["--batch", "8:2"], "--batch"), (["--workers", "0"], "--workers")] {
        let o = rollway(&[&["run", "--no-record", "-q"][..], &args].concat());
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(&format!("{flag}:")) && !stderr(&o).contains("config field"), "{}", stderr(&o));
    }
}

#[test]
fn issue10_resume_applies_output_flags_and_refuses_the_others() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let d = dir.to_str().unwrap();
    assert!(cartpole(&dir, "5", &[]).status.success());
    let toml = tmp.path().join("job.toml");
    std::fs::write(&toml, "seed = 4\n").unwrap();
    let refused: [&[&str]; 6] = [
        &["--seed", "4"],
        &["--env", "Pendulum-v1"],
        &["--workers", "3"],
        &["--filter", "kind=length,min=1,label=x"],
        &["--episodes", "4"],
        &["--steps", "1000"],
    ];
    for extra in refused {
        let o = rollway(&[&["run", "--resume", d, "-q"][..], extra].concat());
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(extra[0]), "{extra:?}: {}", stderr(&o));
    }
    let o = rollway(&["run", "--resume", d, toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(committed(&dir).0.len(), 5, "a refused resume records nothing");

    let (summary, episodes) = (tmp.path().join("s.json"), tmp.path().join("e.jsonl"));
    let o = rollway(&[
        "run",
        "--resume",
        d,
        "--episodes",
        "8",
        "--summary-json",
        summary.to_str().unwrap(),
        "--episodes-json",
        episodes.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "-q applies: {}", stderr(&o));
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["episodes"], 3, "the raised target: episodes 5, 6, 7");
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&episodes).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().map(|e| e["index"].as_u64().unwrap()).collect::<Vec<_>>(), [5, 6, 7]);
    assert_eq!(committed(&dir).0, (0..8).collect::<Vec<u64>>());
}

#[test]
fn issue10_errors_print_each_message_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    assert!(cartpole(&dir, "3", &[]).status.success());
    // The store's I/O error prints its source itself and also returns it as source().
    let meta = dir.join("rollway.json");
    std::fs::remove_file(&meta).unwrap();
    std::fs::create_dir(&meta).unwrap();
    let o = rollway(&["run", "--resume", dir.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o).matches("os error").count(), 1, "{}", stderr(&o));
    // A summary path that cannot be written is refused before any work (exit 2).
    let o = rollway(&[
        "run",
        "--env",
        "CartPole-v1",
        "--agent",
        "random",
        "--episodes",
        "3",
        "--no-record",
        "-q",
        "--summary-json",
        tmp.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--summary-json") && stderr(&o).matches("os error").count() == 1, "{}", stderr(&o));
}

#[test]
fn issue10_help_documents_the_exit_codes() {
    let o = rollway(&["--help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("EXIT STATUS") && out.contains("0  success") && out.contains("2  usage or input error"), "{out}");
}

#[test]
fn issue58_a_gymnasium_id_without_its_prefix_exits_2_saying_how_to_name_it() {
    let o = rollway(&["run", "--env", "LunarLander-v3", "--episodes", "1", "--no-record"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("a Gymnasium env is named `gym:LunarLander-v3`"), "{}", stderr(&o));
}

#[test]
fn issue58_max_steps_is_max_episode_steps_now_and_the_old_name_still_works_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let lengths = |dir: &Path| {
        let mut e: Vec<(u64, u64)> = Dataset::open(dir).unwrap().episodes().map(|e| (e.run_index, e.length)).collect();
        e.sort_unstable();
        e.into_iter().map(|(_, l)| l).collect::<Vec<_>>()
    };
    let cut = |e: &[u64]| !e.is_empty() && e.iter().all(|&l| l <= 7) && e.contains(&7);
    // The new name, quietly.
    let new = tmp.path().join("new");
    let o = cartpole(&new, "6", &["--max-episode-steps", "7"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("deprecated") && cut(&lengths(&new)), "{} {:?}", stderr(&o), lengths(&new));
    // The old flag: the same run, and a warning naming the new one.
    let old = tmp.path().join("old");
    let o = cartpole(&old, "6", &["--max-steps", "7"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("--max-steps is deprecated: it is --max-episode-steps now"), "{}", stderr(&o));
    assert_eq!(lengths(&old), lengths(&new));
    // The old config key: the same, warned of with the file's name.
    let toml = tmp.path().join("run.toml");
    std::fs::write(&toml, "env = \"CartPole-v1\"\nagent = \"random\"\nepisodes = 6\nmax_steps = 7\n").unwrap();
    let from_file = tmp.path().join("file");
    let o = rollway(&["run", toml.to_str().unwrap(), "--seed", "0", "-q", "--out", from_file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("run.toml: `max_steps` is deprecated: it is `max_episode_steps` now"), "{}", stderr(&o));
    assert!(cut(&lengths(&from_file)), "{:?}", lengths(&from_file));
    // A dataset stores the new name; a resume of it given the old flag and the same value is taken.
    let stored = Dataset::open(&old).unwrap().metadata().runs[0].config.clone();
    assert_eq!((stored["max_episode_steps"].as_u64(), stored.get("max_steps")), (Some(7), None));
    let o = rollway(&["run", "--resume", old.to_str().unwrap(), "--max-steps", "7", "--episodes", "8", "-q"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
