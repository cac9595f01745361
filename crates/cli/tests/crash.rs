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
        let mut cmd = rollway();
        if dir.join("rollway.json").exists() {
            cmd.arg("run").arg("--resume").arg(&dir).arg("-q");
        } else {
            cmd.arg("run").arg("--out").arg(&dir).args(PINNED_TUNING).args(job);
        }
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
