//! Issue 16: programs that glob `steps/` (pyarrow, DuckDB) read committed episodes
//! only — while a run records, and after a SIGKILL before any rollway command has
//! run — and after `--resume` exactly the episodes of a clean run, each once.
//! `tests/python/glob_reader.py` does the reading and checks every row it gets
//! against the index files (read after the glob: "committed then or later").

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

// Each run also gets common::PINNED_TUNING.
const JOB: &[&str] =
    &["--env", "CartPole-v1", "--agent", "random", "--episodes", "60000", "--seed", "16", "--max-buffer-episodes", "400", "-q"];

/// The two tests time runs against each other's absence: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rollway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rollway"))
}

/// One glob read of `dir/steps`: episode id → (rows, reward sum); fails on any row
/// of an uncommitted episode.
fn glob_once(py: &str, dir: &Path) -> BTreeMap<u64, (u64, f64)> {
    let out = common::run_script(py, "glob_reader.py", &[&dir]);
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    v["episodes"].as_object().unwrap().iter().map(|(k, e)| (k.parse().unwrap(), (e[0].as_u64().unwrap(), e[1].as_f64().unwrap()))).collect()
}

#[test]
fn issue16_glob_readers_see_only_committed_episodes_while_a_run_records() {
    let Some(py) = common::peer_python(&["pyarrow"]) else { return };
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    let mut child = rollway().arg("run").arg("--out").arg(&d).args(common::PINNED_TUNING).args(JOB).stdout(Stdio::null()).spawn().unwrap();
    let pid = child.id().to_string();
    let out = common::run_script(&py, "glob_reader.py", &[&d, &"--watch", &pid]);
    assert!(child.wait().unwrap().success());
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert!(v["nonempty"].as_u64().unwrap() >= 3, "the reader saw the dataset while it grew: {out}");
    assert_eq!(glob_once(&py, &d).len(), 60000, "after the run, every episode");
}

#[test]
fn issue16_after_kills_the_glob_holds_committed_episodes_only_and_resume_adds_no_duplicates() {
    let Some(py) = common::peer_python(&["pyarrow"]) else { return };
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (reference, d) = (tmp.path().join("reference"), tmp.path().join("killed"));
    assert!(rollway().arg("run").arg("--out").arg(&reference).args(common::PINNED_TUNING).args(JOB).status().unwrap().success());
    let want = glob_once(&py, &reference);
    assert_eq!(want.len(), 60000);
    let mut rng = 0x16u64;
    let mut mid_run_kills = 0;
    // Kills are placed by the run's progress, not by a clock: a slow machine's
    // start-up and step times vary more than any timed slice allows for (CI saw
    // resumed runs finish inside their slice). Each round kills once the run has
    // committed a random share (up to half) of what is left, plus a random few ms,
    // so the kill lands between commits, mid-run.
    for round in 0..12 {
        if mid_run_kills >= 4 {
            break;
        }
        let mut cmd = rollway();
        if round == 0 || !d.join("rollway.json").exists() {
            cmd.arg("run").arg("--out").arg(&d).args(common::PINNED_TUNING).args(JOB);
        } else {
            cmd.arg("run").arg("--resume").arg(&d).arg("-q");
        }
        let left = (want.len() - glob_once(&py, &d).len()) as u64;
        let shards_left = (left / 400).max(1);
        let target = common::committed_shards(&d) + 1 + common::next(&mut rng) % (shards_left / 2).max(1);
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let finished = common::kill_at(&mut child, target, || common::committed_shards(&d), common::next(&mut rng) % 20);
        mid_run_kills += usize::from(!finished);
        // Before any rollway command: what a glob reads is committed, and right.
        let have = glob_once(&py, &d);
        for (id, got) in &have {
            assert_eq!(Some(got), want.get(id), "round {round}: episode {id} differs from the clean run");
        }
        if finished && have.len() == want.len() {
            break;
        }
    }
    assert!(mid_run_kills >= 3, "kills landed mid-run only {mid_run_kills} times");
    let st = rollway().arg("run").arg("--resume").arg(&d).arg("-q").stdout(Stdio::null()).status().unwrap();
    assert!(st.success());
    assert_eq!(glob_once(&py, &d), want, "after resuming: exactly the clean run's episodes, each once");
}
