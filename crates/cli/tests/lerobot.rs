//! `rollway export --to lerobot` / `rollway import lerobot` through the binary:
//! exports are checked the way LeRobot reads them (pyarrow + PyAV, by
//! tests/python/check_lerobot.py) and against the source dataset (numbers exact,
//! frames within a PSNR bound), and import restores the source.
//! CI sets ROLLWAY_REQUIRE_PEERS=1 (and ROLLWAY_PYTHON to a venv with pyarrow and
//! av); elsewhere the Python checks are skipped, loudly.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use rollway_store::Dataset;

/// Per-frame and mean PSNR floors for PixelMine's 32×32 frames at the default
/// CRF 23 (measured: 26–27 dB worst, 30–31 dB mean; yuv420p's halved colour
/// resolution caps one-pixel-wide edges near 30 dB whatever the CRF).
const MIN_PSNR: &str = "25";
const MIN_MEAN_PSNR: &str = "29";

fn rollway(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
    for a in args {
        c.arg(a);
    }
    c.output().expect("binary runs")
}

/// Observations (all but `frames`), actions, rewards and flags of every episode are equal.
fn assert_same_numbers(a: &Path, b: &Path, frames: &[&str]) {
    let (a, b) = (Dataset::open(a).unwrap(), Dataset::open(b).unwrap());
    assert_eq!(a.metadata().env, b.metadata().env);
    assert_eq!(a.select(|_| true).count(), b.select(|_| true).count());
    for (k, e) in a.select(|_| true).enumerate() {
        let (x, y) = (a.read_episode(e.episode_id).unwrap(), b.read_episode(k as u64).unwrap());
        for (xo, yo) in x.observations.iter().zip(&y.observations) {
            assert_eq!(xo.0, yo.0);
            if frames.contains(&xo.0.as_str()) {
                assert_eq!(xo.1.shape, yo.1.shape, "{}", xo.0);
            } else {
                assert_eq!(xo, yo, "episode {k}");
            }
        }
        assert_eq!(
            (&x.actions, &x.rewards, &x.terminations, &x.truncations),
            (&y.actions, &y.rewards, &y.terminations, &y.truncations),
            "episode {k}"
        );
        assert_eq!((x.entry.seed, x.entry.status), (y.entry.seed, y.entry.status), "episode {k}");
        assert_eq!(x.agent_state, y.agent_state, "issue 15: episode {k}'s agent_state");
    }
}

#[test]
fn pixelmine_exports_as_lerobot_and_imports_back() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("mine-lerobot"), tmp.path().join("back"));
    // Raw frames, so the Python checker can read the source frames without lz4.
    common::rollway(&[
        &"run",
        &"--env",
        &"PixelMine-v0",
        &"--env-opt",
        &"size=32,max_steps=40",
        &"--agent",
        &"miner",
        &"--episodes",
        &"6",
        &"--frame-media",
        &"raw",
        &"--record-infos",
        &"--out",
        &src,
        &"-q",
    ]);
    let said = common::rollway(&[&"export", &src, &"--to", &"lerobot", &out, &"--fps", &"20", &"--task", &"mine diamonds"]);
    assert!(said.contains("6 episodes, 240 steps (246 frames)") && said.contains("observation.images.rgb"), "{said}");
    let info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("meta/info.json")).unwrap()).unwrap();
    assert_eq!((info["fps"].as_u64(), info["total_frames"].as_u64()), (Some(20), Some(246)));
    if let Some(py) = common::peer_python(&["pyarrow", "av", "numpy"]) {
        let checked = common::run_script(&py, "check_lerobot.py", &[&out, &src, &MIN_PSNR, &MIN_MEAN_PSNR]);
        assert!(checked.contains("lerobot ok: 6 episodes, 246 frames, 1 video keys"), "{checked}");
    }
    let said = common::rollway(&[&"import", &"lerobot", &out, &back]);
    assert!(said.contains("6 episodes, 240 steps") && said.contains("restored as it was"), "{said}");
    assert_same_numbers(&src, &back, &["observations/rgb"]);
}

#[test]
fn cartpole_exports_pass_the_layout_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("cp"), tmp.path().join("back"));
    common::rollway(&[&"run", &"--env", &"CartPole-v1", &"--agent", &"random", &"--episodes", &"30", &"--out", &src, &"-q"]);
    common::rollway(&[&"export", &src, &"--to", &"lerobot", &out, &"-q"]);
    if let Some(py) = common::peer_python(&["pyarrow", "av", "numpy"]) {
        let checked = common::run_script(&py, "check_lerobot.py", &[&out, &src, &MIN_PSNR, &MIN_MEAN_PSNR]);
        assert!(checked.contains("lerobot ok: 30 episodes"), "{checked}");
    }
    common::rollway(&[&"import", &"lerobot", &out, &back, &"-q"]);
    assert_same_numbers(&src, &back, &[]);
}

#[test]
fn bad_input_exits_2_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("out"));
    common::rollway(&[&"run", &"--env", &"CartPole-v1", &"--agent", &"random", &"--episodes", &"3", &"--out", &src, &"-q"]);
    common::rollway(&[&"export", &src, &"--to", &"lerobot", &out, &"-q"]);
    let code = |o: &Output| (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned());
    // Existing output, a Minari-only flag, a missing dataset, a damaged one.
    let (c, err) = code(&rollway(&[&"export", &src, &"--to", &"lerobot", &out]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("--force"), "{err}");
    let (c, err) = code(&rollway(&[&"export", &src, &"--to", &"lerobot", &tmp.path().join("o2"), &"--dataset-id", &"a/b-v0"]));
    assert_eq!(c, Some(2), "{err}");
    let back = tmp.path().join("back");
    let (c, err) = code(&rollway(&[&"import", &"lerobot", &tmp.path().join("nope"), &back]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("not a LeRobot v3.0 dataset"), "{err}");
    std::fs::write(out.join("data/chunk-000/file-000.parquet"), b"PAR1 truncated").unwrap();
    let (c, err) = code(&rollway(&[&"import", &"lerobot", &out, &back]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("file-000.parquet"), "{err}");
    assert!(!back.exists() && !tmp.path().join("o2").exists());
    let names: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}
