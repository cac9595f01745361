//! Issue 10 (data safety): what `rollway run` records, refuses and reports.

use std::path::Path;
use std::process::{Command, Output};

use rollway_store::Dataset;

fn rollway<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run indices of the committed episodes and how many are given up.
fn committed(dir: &Path) -> (Vec<u64>, usize) {
    let ds = Dataset::open(dir).unwrap();
    let mut idx: Vec<u64> = ds.episodes().map(|e| e.run_index).collect();
    idx.sort_unstable();
    (
        idx,
        ds.episodes()
            .filter(|e| e.status == rollway_core::episode::Status::GivenUp)
            .count(),
    )
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
        "-q",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("999 episode(s) untried"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--resume"), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("UNTRIED"));
    assert_eq!(
        committed(&dir),
        (vec![0], 0),
        "only the finished episode is committed"
    );

    let o = rollway(&["run", "--resume", dir.to_str().unwrap(), "-q"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("998 episode(s) untried"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        committed(&dir),
        (vec![0, 1], 0),
        "the resumed run ran episode 1"
    );
}
