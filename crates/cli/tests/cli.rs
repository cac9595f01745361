//! Drives the real `rollway` binary on temp dirs.

use std::path::Path;
use std::process::{Command, Output};

fn rollway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn summary(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn default_job_runs_and_writes_the_summary_keys() {
    let dir = tempfile::tempdir().unwrap();
    let js = dir.path().join("s.json");
    // The default job records into ./rollway-data/ of the working directory.
    let o = Command::new(env!("CARGO_BIN_EXE_rollway"))
        .args(["run", "--episodes", "8", "--env-opt", "size=64", "--quiet", "--summary-json", js.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let ds = rollway_store::Dataset::open(&dir.path().join("rollway-data/PixelMine-v0-000")).unwrap();
    assert_eq!(ds.episodes().count(), 8, "the default job recorded its episodes");
    assert!(rollway_store::verify(&ds).problems.is_empty());
    // Issue 58: -q is quiet, the summary going to --summary-json only.
    assert!(o.stdout.is_empty(), "-q printed: {}", String::from_utf8_lossy(&o.stdout));
    let s = summary(&js);
    for key in [
        "episodes",
        "steps",
        "attempts",
        "restarts",
        "given_up",
        "labels",
        "return",
        "length",
        "steps_per_sec",
        "episodes_per_sec",
        "seconds",
    ] {
        assert!(s.get(key).is_some(), "summary lacks `{key}`: {s}");
    }
    for key in ["mean", "std", "min", "max"] {
        assert!(s["return"][key].is_number() && s["length"][key].is_number());
    }
    assert_eq!(s["episodes"], 8);
    assert_eq!(s["env"], "PixelMine-v0");
}

#[test]
fn toml_config_and_flags_merge() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("job.toml");
    std::fs::write(
        &cfg,
        "env = \"CartPole-v1\"\nagent = \"random\"\nworkers = 2\nenvs_per_worker = 4\nepisodes = 50\nfilters = [\"kind=length,min=30,label=long\"]\n",
    )
    .unwrap();
    let js = dir.path().join("s.json");
    // The flag overrides the file's episode target.
    let o = rollway(&["run", cfg.to_str().unwrap(), "--episodes", "40", "--quiet", "--summary-json", js.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = summary(&js);
    assert_eq!((s["episodes"].as_u64(), s["workers"].as_u64(), s["env"].as_str()), (Some(40), Some(2), Some("CartPole-v1")));
    let long = s["labels"]["long"].as_u64().unwrap_or(0);
    assert!(long > 0 && long < 40, "some but not all random CartPole episodes last 30 steps: {long}");
}

#[test]
fn episodes_json_has_one_line_per_episode_with_labels() {
    let dir = tempfile::tempdir().unwrap();
    let ep = dir.path().join("eps.jsonl");
    let o = rollway(&[
        "run",
        "--env",
        "CartPole-v1",
        "--agent",
        "random",
        "--episodes",
        "30",
        "--filter",
        "kind=return,min=20,label=ok",
        "-q",
        "--episodes-json",
        ep.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&ep).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 30);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["index"], i as u64);
        let labelled =
            l["labels"].as_array().unwrap().iter().any(|x| x["label"] == "ok" && x["filter"].as_str().unwrap().starts_with("return"));
        assert_eq!(labelled, l["return"].as_f64().unwrap() >= 20.0);
    }
}

#[test]
fn bad_input_exits_2_and_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["run", "--workers", "0"], "workers"),
        (vec!["run", "--env", "NoSuchEnv-v9"], "NoSuchEnv-v9"),
        (vec!["run", "--agent", "nobody"], "nobody"),
        (vec!["run", "--filter", "kind=info,val=x"], "key"),
        (vec!["run", "--filter", "key=a,val=(unclosed"], "regex"),
        (vec!["run", "--batch", "8:2"], "batch"),
        (vec!["run", "--batch", "eight"], "batch"),
        (vec!["run", "--max-wait", "soon"], "--max-wait"),
        (vec!["run", "--env-opt", "size=63"], "size"),
        (vec!["run", "--env", "CartPole-v1", "--agent", "miner"], "miner"),
        (vec!["run", "--env", "CartPole-v1", "--agent", "constant", "--agent-opt", "action=5"], "action"),
        (vec!["run", "--episodes", "1", "--steps", "1"], "--steps"),
        (vec!["run", "--no-such-flag"], "no-such-flag"),
    ];
    for (args, needle) in cases {
        let o = rollway(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: error should mention `{needle}`: {}", stderr(&o));
    }
    let bad_toml = dir.path().join("bad.toml");
    std::fs::write(&bad_toml, "env = \"CartPole-v1\"\nwokers = 2\n").unwrap();
    let o = rollway(&["run", bad_toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("wokers"), "{}", stderr(&o));
    std::fs::write(&bad_toml, "episodes = \"many\"\n").unwrap();
    let o = rollway(&["run", bad_toml.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("episodes"), "{}", stderr(&o));
    let o = rollway(&["run", dir.path().join("missing.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn given_up_episodes_exit_1_and_are_reported() {
    let seed3 = rollway_core::seed::episode_seed(0, 3).to_string();
    let dir = tempfile::tempdir().unwrap();
    let js = dir.path().join("s.json");
    let poison = format!("poison_seeds={seed3}");
    let o = rollway(&[
        "run",
        "--env",
        "Faulty-v0",
        "--env-opt",
        &poison,
        "--agent",
        "random",
        "--episodes",
        "10",
        "--summary-json",
        js.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let s = summary(&js);
    assert_eq!(s["given_up"], 1);
    assert_eq!(s["given_up_episodes"][0], 3);
    assert_eq!(s["episodes"], 9);
    assert!(String::from_utf8_lossy(&o.stdout).contains("GIVEN UP"));
}

#[test]
fn agent_that_cannot_recover_exits_1() {
    let o = rollway(&[
        "run",
        "--env",
        "Faulty-v0",
        "--agent",
        "faulty",
        "--agent-opt",
        "error_every=1",
        "--episodes",
        "50",
        "--max-attempts",
        "10",
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("agent failed"), "{}", stderr(&o));
}

#[test]
fn listings_show_registered_envs_and_agents() {
    let o = rollway(&["envs"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for id in ["CartPole-v1", "MountainCar-v0", "Acrobot-v1", "Pendulum-v1", "PixelMine-v0"] {
        assert!(out.contains(id), "envs lists {id}: {out}");
    }
    assert!(out.contains("Discrete(2)"));
    let o = rollway(&["agents"]);
    let out = String::from_utf8_lossy(&o.stdout);
    for name in ["random", "constant", "miner"] {
        assert!(out.contains(name), "agents lists {name}");
    }
}

/// (id, seed, length, return) of every committed episode.
fn episodes_of(dir: &Path) -> Vec<(u64, u64, u64, f64)> {
    let ds = rollway_store::Dataset::open(dir).unwrap();
    let mut v: Vec<_> = ds.episodes().map(|e| (e.episode_id, e.seed, e.length, e.ret)).collect();
    v.sort_by_key(|e| e.0);
    v
}

#[test]
fn issue14_unset_tuning_flags_are_chosen_for_speed_and_change_nothing_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, sa, sb) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("a.json"), dir.path().join("b.json"));
    let run = |out: &Path, js: &Path, extra: &[&str]| {
        let mut args = vec!["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "1200", "--seed", "3", "-q"];
        args.extend_from_slice(extra);
        let o = rollway(&[&args[..], &["--out", out.to_str().unwrap(), "--summary-json", js.to_str().unwrap()]].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        summary(js)
    };
    let tuned = run(&a, &sa, &[]);
    let cores = std::thread::available_parallelism().unwrap().get() as u64;
    assert_eq!(tuned["workers"].as_u64(), Some(cores));
    let cal = &tuned["calibration"];
    let probes = cal["probes"].as_array().expect("the summary says how envs per worker were chosen");
    assert!(!probes.is_empty() && probes.iter().all(|p| p["steps_per_s"].as_f64().unwrap() > 0.0), "{cal}");
    assert_eq!((&tuned["envs_per_worker"], &tuned["mode"]), (&cal["envs_per_worker"], &cal["mode"]));
    let mode_of = |p: &serde_json::Value| p["mode"].as_str().unwrap().to_string();
    // Sizes are measured async; sync, if at all, once, at the size chosen.
    let sync: Vec<_> = probes.iter().filter(|p| mode_of(p) == "sync").collect();
    assert!(sync.len() <= 1 && sync.iter().all(|p| p["envs_per_worker"] == cal["envs_per_worker"]), "{cal}");
    assert!(tuned["mode"] == "async" || sync.len() == 1, "sync only when measured: {cal}");
    // A given mode is kept; the size is still measured.
    let (c, sc) = (dir.path().join("c"), dir.path().join("c.json"));
    let async_given = run(&c, &sc, &["--mode", "async"]);
    let probes = async_given["calibration"]["probes"].as_array().unwrap().clone();
    assert!(async_given["mode"] == "async" && probes.iter().all(|p| mode_of(p) == "async"), "{async_given}");
    // Given flags are kept, and nothing is measured.
    let set = run(&b, &sb, &["--workers", "1", "--envs-per-worker", "3", "--mode", "sync"]);
    assert_eq!((set["mode"].as_str(), set["workers"].as_u64(), set["envs_per_worker"].as_u64()), (Some("sync"), Some(1), Some(3)));
    assert!(set.get("calibration").is_none());
    // Calibrating decides how fast the run goes, not what it records.
    assert_eq!(episodes_of(&a), episodes_of(&b));
    assert_eq!(episodes_of(&c), episodes_of(&b));
    assert_eq!(episodes_of(&a).len(), 1200);
}
