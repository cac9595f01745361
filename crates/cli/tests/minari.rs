//! `rollway export --to minari` / `rollway import minari`, checked against the real
//! Minari: `minari.load_dataset` must read our export with exactly the values
//! pyarrow reads from our Parquet shards, and a dataset recorded by Minari's own
//! `DataCollector` must import with the values Minari reads from it.
//! CI sets ROLLWAY_REQUIRE_PEERS=1 (and ROLLWAY_PYTHON to a venv with minari);
//! elsewhere the Python checks are skipped, loudly.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn rollway(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
    for a in args {
        c.arg(a);
    }
    c.output().expect("binary runs")
}

#[test]
fn minari_loads_our_exports_with_identical_values() {
    let Some(py) = common::peer_python(&["minari", "h5py", "pyarrow"]) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("minari");
    let (cp, mine) = (tmp.path().join("cp"), tmp.path().join("mine"));
    common::rollway(&[&"run", &"--env", &"CartPole-v1", &"--agent", &"random", &"--episodes", &"20", &"--out", &cp, &"-q"]);
    let out = common::rollway(&[&"export", &cp, &"--to", &"minari", &root.join("cartpole/random-v0")]);
    assert!(out.contains("20 episodes") && out.contains("cartpole/random-v0"), "{out}");
    let checked = common::run_script(&py, "check_minari.py", &[&cp, &root, &"cartpole/random-v0"]);
    assert!(checked.contains("recover_environment() -> CartPole-v1"), "{checked}");

    // Dict observations with an image leaf (raw frames, so Python reads them without lz4) and infos.
    common::rollway(&[
        &"run",
        &"--env",
        &"PixelMine-v0",
        &"--env-opt",
        &"size=32,max_steps=40",
        &"--agent",
        &"miner",
        &"--episodes",
        &"3",
        &"--frame-media",
        &"raw",
        &"--record-infos",
        &"--out",
        &mine,
        &"-q",
    ]);
    common::rollway(&[&"export", &mine, &"--to", &"minari", &root.join("pixel/miner-v0"), &"-q"]);
    common::run_script(&py, "check_minari.py", &[&mine, &root, &"pixel/miner-v0"]);
    // The same through Minari's folder-per-episode formats (issue 15).
    for f in ["arrow", "parquet"] {
        let id = format!("pixel/miner-{f}-v0");
        common::rollway(&[&"export", &mine, &"--to", &"minari", &root.join(&id), &"--data-format", &f, &"-q"]);
        assert!(root.join(&id).join("data/0/metadata.json").is_file());
        common::run_script(&py, "check_minari.py", &[&mine, &root, &id]);
    }
    // And back: the miner's recurrent state, which Minari reads past, returns with the rest.
    let back = tmp.path().join("back");
    common::rollway(&[&"import", &"minari", &root.join("pixel/miner-v0"), &back, &"-q"]);
    let (a, b) = (rollway_store::Dataset::open(&mine).unwrap(), rollway_store::Dataset::open(&back).unwrap());
    for k in 0..3 {
        let (x, y) = (a.read_episode(k).unwrap(), b.read_episode(k).unwrap());
        assert!(x.agent_state.is_some(), "the miner keeps a state");
        assert_eq!(x.agent_state, y.agent_state, "issue 15: episode {k}'s agent_state");
    }
}

#[test]
fn minari_datacollector_datasets_import_with_identical_values() {
    let Some(py) = common::peer_python(&["minari", "h5py"]) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("minari");
    let dump = tmp.path().join("dump.json");
    common::run_script(&py, "make_minari.py", &[&root, &"cartpole/collected-v0", &"10", &dump]);
    let dest = tmp.path().join("imported");
    let out = common::rollway(&[&"import", &"minari", &root.join("cartpole/collected-v0"), &dest]);
    assert!(out.contains("10 episodes"), "{out}");
    let want: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    let ds = rollway_store::Dataset::open(&dest).unwrap();
    assert_eq!(ds.metadata().env.id, "CartPole-v1");
    assert_eq!(ds.metadata().runs[0].agent, "random-policy");
    let eps = want["episodes"].as_array().unwrap();
    assert_eq!(ds.select(|_| true).count(), eps.len());
    assert_eq!(ds.select(|_| true).map(|e| e.length).sum::<u64>(), want["total_steps"].as_u64().unwrap());
    let bytes = |a: &rollway_core::Array| a.data.clone();
    let flags = |v: &[bool]| v.iter().map(|&b| u8::from(b)).collect::<Vec<u8>>();
    let f64s = |v: &[f64]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    for (k, w) in eps.iter().enumerate() {
        let ep = ds.read_episode(k as u64).unwrap();
        assert_eq!(ep.entry.seed, 100 + k as u64, "episode {k} seed");
        let t = ep.rewards.len();
        let got = [
            ("observations", "float32", vec![t + 1, 4], bytes(&ep.observations[0].1)),
            ("actions", "int64", vec![t], bytes(&ep.actions[0].1)),
            ("rewards", "float64", vec![t], f64s(&ep.rewards)),
            ("terminations", "bool", vec![t], flags(&ep.terminations)),
            ("truncations", "bool", vec![t], flags(&ep.truncations)),
        ];
        for (key, dtype, shape, data) in got {
            let w = &w[key];
            assert_eq!((w["dtype"].as_str(), &w["shape"]), (Some(dtype), &serde_json::json!(shape)), "episode {k} {key}");
            let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(w["hex"].as_str(), Some(hex.as_str()), "episode {k} {key}: values differ");
        }
    }
    // Every third episode was cut at 7 steps: Minari truncated it on reset.
    assert!(ds.read_episode(2).unwrap().truncations[6]);
}

#[test]
fn bad_inputs_exit_2_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("dest");
    let code = |o: &Output| (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned());

    let (c, err) = code(&rollway(&[&"import", &"minari", &tmp.path().join("nope"), &dest]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("is not a Minari dataset"), "{err}");

    let fake = tmp.path().join("fake/x-v0/data");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("metadata.json"), "{\"observation_space\": ").unwrap();
    let (c, err) = code(&rollway(&[&"import", &"minari", &fake, &dest]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("metadata.json") && err.contains("not valid JSON"), "{err}");
    assert!(!dest.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "only `fake` is there");

    let (c, err) = code(&rollway(&[&"export", &tmp.path().join("nope"), &"--to", &"minari", &tmp.path().join("a/b-v0")]));
    assert_eq!(c, Some(2), "{err}");
    assert!(!tmp.path().join("a/b-v0").exists());

    // An existing export is not replaced without --force.
    let cp = tmp.path().join("cp");
    common::rollway(&[&"run", &"--env", &"CartPole-v1", &"--agent", &"random", &"--episodes", &"3", &"--out", &cp, &"-q"]);
    let out = tmp.path().join("ns/cp-v0");
    common::rollway(&[&"export", &cp, &"--to", &"minari", &out, &"-q"]);
    let (c, err) = code(&rollway(&[&"export", &cp, &"--to", &"minari", &out]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("--force"), "{err}");
    common::rollway(&[&"export", &cp, &"--to", &"minari", &out, &"--force", &"-q"]);
    let (c, err) = code(&rollway(&[&"export", &cp, &"--to", &"minari", &tmp.path().join("no-version"), &"-q"]));
    assert_eq!(c, Some(2), "{err}");
    assert!(err.contains("dataset id"), "{err}");

    // Round trip through the CLI, no Python needed.
    common::rollway(&[&"import", &"minari", &out, &dest, &"-q"]);
    let verified = common::rollway(&[&"verify", &dest]);
    assert!(verified.starts_with("ok: 3 episodes"), "{verified}");
}

/// Killed at any instant, an export leaves either no `data/` or a complete one.
#[test]
fn a_killed_export_never_leaves_half_a_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let cp = tmp.path().join("cp");
    common::rollway(&[&"run", &"--env", &"CartPole-v1", &"--agent", &"random", &"--episodes", &"3000", &"--out", &cp, &"-q"]);
    for (i, delay_ms) in [5u64, 40, 150].into_iter().enumerate() {
        let out = tmp.path().join(format!("k{i}/cp-v0"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_rollway"))
            .arg("export")
            .arg(&cp)
            .args(["--to", "minari"])
            .arg(&out)
            .arg("-q")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let data = out.join("data");
        if data.exists() {
            let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(data.join("metadata.json")).unwrap()).unwrap();
            assert_eq!(meta["total_episodes"], 3000);
            assert!(data.join("main_data.hdf5").is_file());
        }
    }
}

#[test]
fn help_says_what_out_is() {
    let help = common::rollway(&[&"export", &"--help"]);
    assert!(help.contains("MINARI_DATASETS_PATH") && help.contains("--to minari"), "{help}");
    let help = common::rollway(&[&"import", &"--help"]);
    assert!(help.contains("data/") && help.contains("rollway import minari"), "{help}");
    assert!(Path::new(&common::script("check_minari.py")).exists());
}
