//! `run --out` appends, `inspect --json`, `verify`, `relabel`, and bad output paths.

use std::path::Path;
use std::process::{Command, Output};

fn rollway(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).output().expect("binary runs")
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn inspect(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(&rollway(&["inspect", dir.to_str().unwrap(), "--json"]))).unwrap()
}

#[test]
fn record_append_inspect_relabel_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cp");
    let d = dir.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--env",
            "CartPole-v1",
            "--agent",
            "random",
            "--episodes",
            "50",
            "--out",
            d,
            "-q",
            "--filter",
            "kind=length,min=20,label=long",
        ];
        args.extend_from_slice(extra);
        rollway(&args)
    };
    ok(&run(&[]));
    let s = inspect(&dir);
    assert_eq!(s["episodes"], 50);
    let long = s["labels"]["long"].as_u64().unwrap();
    assert!(long > 0 && long < 50);
    // Same env again: appended as a second run with fresh episode ids.
    ok(&run(&["--seed", "1", "--append"]));
    let s = inspect(&dir);
    assert_eq!((s["episodes"].as_u64(), s["runs"].as_u64()), (Some(100), Some(2)));
    // Issue 33: each run says which rollway recorded it.
    let v = env!("CARGO_PKG_VERSION");
    assert_eq!(s["rollway_versions"], serde_json::json!([v, v]));
    assert!(s["steps"].as_u64().unwrap() > 100 && s["bytes"].as_u64().unwrap() > 0);
    // Another env: refused, exit 2, nothing touched.
    let o = rollway(&["run", "--env", "MountainCar-v0", "--agent", "random", "--episodes", "2", "--out", d, "--append", "-q"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("CartPole-v1"));
    assert_eq!(inspect(&dir)["episodes"], 100);
    // Relabel rewrites labels in the index only.
    assert!(ok(&rollway(&["relabel", d, "--filter", "kind=length,max=15,label=short"])).contains("changed"));
    let s = inspect(&dir);
    assert!(s["labels"].get("long").is_none());
    assert!(s["labels"]["short"].as_u64().unwrap() > 0);
    assert!(ok(&rollway(&["verify", d])).starts_with("ok"));
    // Damage one shard: verify reports it precisely and exits 1.
    let shard = dir.join("steps/shard-000000.parquet");
    let mut bytes = std::fs::read(&shard).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 100);
    std::fs::write(&shard, bytes).unwrap();
    let o = rollway(&["verify", d]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("DAMAGED") && out.contains("shard 0"), "{out}");
}

#[test]
fn unusable_output_paths_are_input_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("plain.txt");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("ds");
    let o = rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "3", "--out", under_file.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("plain.txt"), "{}", String::from_utf8_lossy(&o.stderr));
    // A directory with other files in it is not taken over.
    let o = rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "3", "--out", tmp.path().to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(std::fs::read_to_string(&file).unwrap() == "x");
    let o = rollway(&["inspect", tmp.path().join("nothing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let o = rollway(&["run", "--resume", tmp.path().join("nothing").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

/// `rollway load --json` counts every window of every epoch, its selection flags narrow
/// the episodes, and a bad loader setting is an input error naming the field.
#[test]
fn load_reports_throughput_and_selects_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cp");
    let d = dir.to_str().unwrap();
    ok(&rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "60", "--out", d, "-q"]));
    let load = |extra: &[&str]| {
        let mut args = vec!["load", d, "--clip", "4", "--stride", "2", "--batch", "16", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str::<serde_json::Value>(&ok(&rollway(&args))).unwrap()
    };
    let all = load(&["--epochs", "3"]);
    let per_epoch = all["windows_per_epoch"].as_u64().unwrap();
    assert!(per_epoch > 0);
    assert_eq!(all["windows"].as_u64(), Some(3 * per_epoch));
    assert_eq!(all["episodes"].as_u64(), Some(60));
    assert!(all["windows_per_sec"].as_f64().unwrap() > 0.0 && all["mb_per_sec"].as_f64().unwrap() > 0.0);
    // Random CartPole episodes are mostly short: the length filter keeps some, not all.
    let long = load(&["--min-length", "25"]);
    let kept = long["episodes"].as_u64().unwrap();
    assert!(kept > 0 && kept < 60, "{kept}");
    assert!(long["windows"].as_u64().unwrap() < per_epoch);
    // Every CartPole reward is 1, so return = length: the same episodes by return.
    assert_eq!(load(&["--min-return", "25"])["episodes"].as_u64(), Some(kept));
    assert_eq!(load(&["--max-length", "24"])["episodes"].as_u64(), Some(60 - kept));
    let o = rollway(&["load", d, "--stride", "0"]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stride"));
    // A replay buffer's capacity, on any dataset.
    assert_eq!(load(&["--last-episodes", "7"])["episodes"].as_u64(), Some(7));
}

/// `load --follow`: `--epochs` counts rounds over what is committed; round flags
/// need `--follow`.
#[test]
fn load_follows_a_dataset_in_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cp");
    let d = dir.to_str().unwrap();
    ok(&rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "30", "--out", d, "-q"]));
    let load = |extra: &[&str]| {
        let mut args = vec!["load", d, "--clip", "4", "--stride", "2", "--batch", "16", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str::<serde_json::Value>(&ok(&rollway(&args))).unwrap()
    };
    let per_epoch = load(&[])["windows_per_epoch"].as_u64().unwrap();
    let rounds = load(&["--follow", "--epochs", "3"]);
    assert_eq!(rounds["windows"].as_u64(), Some(3 * per_epoch), "{rounds}");
    let capped = load(&["--follow", "--epochs", "4", "--round-windows", "10"]);
    assert_eq!(capped["windows"].as_u64(), Some(40), "{capped}");
    let o = rollway(&["load", d, "--max-reuse", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--follow"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// An agent with a recurrent state (the scripted miner keeps one, like VPT's memory):
/// `run --out` records it per step, beside the actions.
#[test]
fn recorded_runs_keep_the_agents_recurrent_state() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    let d = dir.to_str().unwrap();
    ok(&rollway(&["run", "--env", "PixelMine-v0", "--env-opt", "size=16", "--agent", "miner", "--episodes", "2", "--out", d, "-q"]));
    let ds = rollway_store::Dataset::open(&dir).unwrap();
    let ep = ds.read_episode(0).unwrap();
    let st = ep.agent_state.expect("the miner's state is recorded");
    assert_eq!(st.shape[0], ep.rewards.len());
    assert!(st.shape[1] > 0);
    let floats: Vec<f32> = st.data.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect();
    assert!(floats.iter().any(|&x| x != 0.0));
    // CartPole's random agent keeps none: no state column at all.
    let cp = tmp.path().join("cp");
    ok(&rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "3", "--out", cp.to_str().unwrap(), "-q"]));
    assert!(rollway_store::Dataset::open(&cp).unwrap().read_episode(0).unwrap().agent_state.is_none());
}

/// `--resume` keeps the stored config: an option that would change the episodes is
/// refused by its flag name before anything is written; a raised target and the
/// output files are taken.
#[test]
fn issue14_resume_takes_only_a_larger_target_and_output_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cp");
    let d = dir.to_str().unwrap();
    ok(&rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--mode", "sync", "--episodes", "4", "--out", d, "-q"]));
    let before = inspect(&dir);
    for refused in [["--workers", "3"], ["--filter", "kind=length,max=9,label=short"], ["--frame-media", "raw"]] {
        let o = rollway(&["run", "--resume", d, refused[0], refused[1], "-q"]);
        assert_eq!(o.status.code(), Some(2), "{refused:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("a resumed run keeps the config") && err.contains(&format!("{}: stored ", refused[0])), "{err}");
    }
    assert_eq!(inspect(&dir), before, "refused resumes changed nothing");
    let summary = tmp.path().join("s.json");
    ok(&rollway(&["run", "--resume", d, "--episodes", "6", "--summary-json", summary.to_str().unwrap(), "-q"]));
    assert_eq!(inspect(&dir)["episodes"], 6);
    assert!(summary.exists());
}

/// Issue 58: `inspect` speaks of frames only where a dataset has them.
#[test]
fn issue58_inspect_names_frames_only_for_a_dataset_that_has_them() {
    let tmp = tempfile::tempdir().unwrap();
    let size = |dir: &Path| {
        ok(&rollway(&["inspect", dir.to_str().unwrap()])).lines().find(|l| l.trim_start().starts_with("size")).unwrap().to_string()
    };
    let (cp, px) = (tmp.path().join("cp"), tmp.path().join("px"));
    ok(&rollway(&["run", "--env", "CartPole-v1", "--agent", "random", "--episodes", "5", "--out", cp.to_str().unwrap(), "-q"]));
    ok(&rollway(&["run", "--env-opt", "size=32,max_steps=20", "--episodes", "2", "--out", px.to_str().unwrap(), "-q"]));
    assert!(!size(&cp).contains("frames"), "{}", size(&cp));
    assert!(size(&px).contains("frames: observations/rgb (h264)"), "{}", size(&px));
}
