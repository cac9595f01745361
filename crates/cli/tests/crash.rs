//! Issue 3 bar: SIGKILL `rollway run` at random (seeded) moments, then verify and
//! `--resume`. Every committed episode stays intact and unchanged, the resumed run
//! ends with exactly the target episodes, and nothing is duplicated. Issue 5: the
//! same with frames encoded to H.264 on the encoder threads.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{after_kill, committed, next, wait_for, Committed, PINNED_TUNING};

// Each run of a job also gets common::PINNED_TUNING.
const CARTPOLE: &[&str] =
    &["--env", "CartPole-v1", "--agent", "random", "--episodes", "30000", "--seed", "11", "--max-buffer-episodes", "300", "-q"];
const MINE_H264: &[&str] = &[
    "--env",
    "PixelMine-v0",
    "--env-opt",
    "size=32,max_steps=60",
    "--agent",
    "random",
    "--episodes",
    "400",
    "--seed",
    "5",
    "--max-buffer-episodes",
    "16",
    "--frame-media",
    "h264",
    "-q",
];

fn rollway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rollway"))
}

fn kill_and_resume(seed: u64, kills: usize, job: &[&str], episodes: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let (reference, dir) = (tmp.path().join("reference"), tmp.path().join("killed"));
    let t0 = std::time::Instant::now();
    let st = rollway().arg("run").arg("--out").arg(&reference).args(PINNED_TUNING).args(job).status().unwrap();
    assert!(st.success());
    // Kill delays scale with this machine's speed: a seeded fraction of a full run.
    let full_ms = t0.elapsed().as_millis().max(50) as u64;
    let want = committed(&reference);
    assert_eq!(want.len(), episodes);

    let mut rng = seed;
    let mut seen = Committed::new();
    let mut killed_mid_run = 0;
    let mut halvings = 0;
    for _ in 0..kills {
        // Issue 70: the run's own command with --resume added, every life, as the docs say;
        // a life killed before the dataset was set up leaves nothing, and the next starts afresh.
        let mut cmd = rollway();
        cmd.arg("run").arg("--resume").arg(&dir).args(PINNED_TUNING).args(job);
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        // The first life's slice starts once it has created the dataset (a busy CI machine
        // once killed all twelve lives before that, so none had anything to lose).
        wait_for(&dir.join("rollway.json"), &mut child);
        // Each life gets a small slice of a full run, so most kills land before it ends;
        // a life that finished first halves the next slices (a slow reference run on a
        // busy machine overstates how long a run takes).
        let slice = full_ms / 100 + next(&mut rng) % (full_ms * 15 / 100).max(1);
        std::thread::sleep(Duration::from_millis(slice >> halvings));
        if child.try_wait().unwrap().is_none() {
            killed_mid_run += 1;
        } else {
            halvings = (halvings + 1).min(6);
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
        if !dir.join("rollway.json").exists() {
            continue;
        }
        seen = after_kill(&dir, &seen, &want);
    }
    eprintln!("{killed_mid_run}/{kills} kills landed mid-run");
    assert!(killed_mid_run >= kills / 3, "kills should land mid-run ({killed_mid_run}/{kills})");
    assert!(dir.join("rollway.json").exists(), "no life got as far as creating the dataset (a full run took {full_ms} ms)");
    let o = rollway().arg("run").arg("--resume").arg(&dir).arg("-q").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = committed(&dir);
    assert_eq!(got.len(), episodes, "exactly the target episodes");
    assert_eq!(got, want, "the killed-and-resumed dataset equals the uninterrupted one");
}

#[test]
fn issue3_sigkill_at_random_moments_loses_nothing_and_resume_finishes_exactly() {
    kill_and_resume(0x9E37_79B9_7F4A_7C15, 12, CARTPOLE, 30000);
}

#[test]
fn issue3_sigkill_second_schedule() {
    kill_and_resume(0xD1B5_4A32_D192_ED03, 12, CARTPOLE, 30000);
}

#[test]
fn issue5_sigkill_while_encoding_h264_loses_nothing() {
    kill_and_resume(0x2545_F491_4F6C_DD1D, 10, MINE_H264, 400);
}

#[test]
fn issue70_a_resume_where_a_kill_left_nothing_starts_afresh_and_the_report_marks_the_killed_life() {
    let tmp = tempfile::tempdir().unwrap();
    let job: &[&str] = &["--env", "CartPole-v1", "--agent", "random", "--seed", "3", "-q"];
    let runs = |dir: &std::path::Path, extra: &[&str]| {
        rollway().arg("run").arg("--resume").arg(dir).args(PINNED_TUNING).args(extra).output().unwrap()
    };
    // Nothing there (killed before the dataset was set up), or only a writer's scaffolding.
    let (none, scaffold) = (tmp.path().join("none"), tmp.path().join("scaffold"));
    for d in ["index", "steps", ".tmp"] {
        std::fs::create_dir_all(scaffold.join(d)).unwrap();
    }
    for dir in [&none, &scaffold] {
        let o = runs(dir, &[job, &["--episodes", "40"]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(committed(dir).len(), 40, "the run started afresh into {}", dir.display());
    }
    // A bare --resume cannot know the command: it says what to do, and changes nothing.
    let bare = tmp.path().join("bare");
    let o = rollway().args(["run", "--resume"]).arg(&bare).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing was recorded there to resume") && err.contains("own command again"), "{err}");
    assert!(!bare.exists(), "a refused resume makes nothing");

    // Killed once it has committed, then resumed: the report shows both lives, the kill marked.
    let dir = tmp.path().join("killed");
    // ~3 s on a 2-core VM, its first commit after ~0.2 s: the kill lands at that commit, by progress
    // not by a clock, so it comes before the end on a machine many times faster.
    let long = [job, &["--episodes", "300000", "--commit-every", "0.2"]].concat();
    let mut child = rollway().arg("run").arg("--out").arg(&dir).args(PINNED_TUNING).args(&long).spawn().unwrap();
    let finished = common::kill_at(&mut child, 1, || common::committed_shards(&dir), 0);
    assert!(!finished, "the run ended before its kill");
    let o = runs(&dir, &long);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("rollway.json")).unwrap()).unwrap();
    let lives = meta["runs"][0]["lives"].as_array().unwrap().clone();
    assert_eq!(lives.iter().map(|l| l["ended"].as_str().unwrap()).collect::<Vec<_>>(), ["killed", "clean"], "{lives:?}");
    assert!(lives[0]["seconds"].as_f64().unwrap() > 0.0, "the killed life ran until its last commit: {lives:?}");
    let report = tmp.path().join("report.html");
    assert!(rollway().arg("report").arg(&dir).arg("--out").arg(&report).status().unwrap().success());
    let html = std::fs::read_to_string(&report).unwrap();
    for says in ["yes, after 1 kill", "killed (wall time to its last commit)", "over 2 lives"] {
        assert!(html.contains(says), "the report does not say {says:?}");
    }
}
