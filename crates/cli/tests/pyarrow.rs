//! Issue 3 bar: pyarrow reads every step shard with the documented schema.
//! CI sets ROLLWAY_REQUIRE_PEERS=1 (and ROLLWAY_PYTHON to a venv with the peers);
//! elsewhere the check is skipped, loudly, when pyarrow is not installed.

use crate::common;

use std::process::Command;

#[test]
fn pyarrow_reads_every_shard_with_the_documented_schema() {
    let Some(py) = common::peer_python(&["pyarrow"]) else { return };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/python/check_parquet.py");
    let tmp = tempfile::tempdir().unwrap();
    let jobs: [&[&str]; 3] = [
        &["--env", "CartPole-v1", "--agent", "random", "--episodes", "300", "--max-buffer-episodes", "64", "--record-infos"],
        &["--env", "Pendulum-v1", "--agent", "pendulum-swingup", "--episodes", "6"],
        &[
            "--env",
            "PixelMine-v0",
            "--env-opt",
            "size=32,max_steps=80",
            "--agent",
            "miner",
            "--episodes",
            "6",
            "--max-buffer-episodes",
            "4",
        ],
    ];
    for (i, args) in jobs.iter().enumerate() {
        let dir = tmp.path().join(format!("d{i}"));
        let o = Command::new(env!("CARGO_BIN_EXE_rollway")).arg("run").args(*args).arg("--out").arg(&dir).arg("-q").output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let o = Command::new(&py).arg(script).arg(&dir).output().unwrap();
        assert!(
            o.status.success(),
            "pyarrow check of {args:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
