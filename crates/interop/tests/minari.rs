//! rollway → Minari → rollway round trips (flat, Dict with frames and infos,
//! nested Tuple spaces), overwrite rules, and malformed Minari inputs.

use crate::common;

use std::path::{Path, PathBuf};

use hdf5_metno as hdf5;
use rollway_core::{DType, EnvSpec, Space};
use rollway_interop::minari::{self, ExportOptions};
use rollway_interop::Error;
use rollway_store::Dataset;

/// Records `n` episodes of `env` with `agent` into `dir`, the way `rollway run --out` does:
/// run seed 11, a shard every 7 episodes.
fn record(dir: &Path, env: &str, params: &str, agent: &str, n: u64, max_steps: Option<u64>, infos: bool) {
    common::record(dir, env, params, agent, n, max_steps, infos, 11, 7);
}

fn nothing(_: u64, _: u64) {}

fn metadata(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("data/metadata.json")).unwrap()).unwrap()
}

#[test]
fn cartpole_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("cartpole/random-v0"), tmp.path().join("back"));
    record(&src, "CartPole-v1", "", "random", 20, Some(30), false);
    let rep = minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    let a = Dataset::open(&src).unwrap();
    assert_eq!(rep.dataset_id, "cartpole/random-v0");
    assert_eq!(rep.episodes, 20);
    assert_eq!(rep.steps, a.select(|_| true).map(|e| e.length).sum::<u64>());
    assert!(rep.env_spec);
    let m = metadata(&out);
    assert_eq!(m["dataset_id"], "cartpole/random-v0");
    assert_eq!(m["minari_version"], minari::MINARI_VERSION);
    assert_eq!(m["jpeg_encoding"], false);
    assert_eq!(m["total_episodes"], 20);
    assert_eq!(m["total_steps"], rep.steps);
    assert_eq!(m["algorithm_name"], "random");
    assert_eq!(m["observation_space"], a.metadata().env.observation_space.as_str());
    assert!(m["env_spec"].as_str().unwrap().contains(r#""id": "CartPole-v1""#));
    let progress = std::cell::Cell::new(0);
    let irep = minari::import(&out, &back, &mut |d, t| {
        assert_eq!(t, 20);
        progress.set(d);
    })
    .unwrap();
    assert_eq!(progress.get(), 20);
    assert_eq!((irep.episodes, irep.steps, irep.env.as_str()), (20, rep.steps, "CartPole-v1"));
    let b = Dataset::open(&back).unwrap();
    assert_eq!(b.metadata().runs[0].agent, "random");
    assert_eq!(b.metadata().env.max_episode_steps, Some(500));
    common::assert_same(&a, &b, &[]);
    assert!(rollway_store::verify(&b).problems.is_empty());
    // The data/ directory itself is accepted too.
    minari::import(&out.join("data"), &tmp.path().join("back2"), &mut nothing).unwrap();
}

#[test]
fn pixel_dict_observations_frames_and_infos_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("mine/miner-v1"), tmp.path().join("back"));
    record(&src, "PixelMine-v0", "size=32,max_steps=40", "miner", 5, None, true);
    let rep = minari::export(&src, &out, &ExportOptions { dataset_id: Some("pixel/mine-v3".into()), ..Default::default() }, &mut nothing)
        .unwrap();
    assert_eq!(rep.dataset_id, "pixel/mine-v3");
    assert!(!rep.env_spec, "PixelMine is not a Gymnasium env");
    // Achievements are a list of names (strings): not an HDF5 array.
    assert_eq!(rep.skipped_infos, ["achievements"]);
    let f = hdf5::File::open(out.join("data/main_data.hdf5")).unwrap();
    let rgb = f.dataset("episode_0/observations/rgb").unwrap();
    assert_eq!(rgb.shape()[1..], [32, 32, 3]);
    assert_eq!(f.dataset("episode_0/infos/mine_block/diamond_ore").unwrap().shape()[0], rgb.shape()[0]);
    drop(f);
    minari::import(&out, &back, &mut nothing).unwrap();
    let (a, b) = (Dataset::open(&src).unwrap(), Dataset::open(&back).unwrap());
    assert_eq!(b.metadata().env.id, "pixel/mine-v3");
    assert_eq!(b.metadata().frame_keys, ["observations/rgb"]);
    common::assert_same(&a, &b, &["achievements"]);
}

/// Issue 15: the first episode decides whether an import records infos (asking every
/// episode first cost ~12% of an import); a later episode with infos starts it over
/// with them on, so no info is lost.
#[test]
fn issue15_infos_only_after_the_first_episode_are_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("mine/late-v0"), tmp.path().join("back"));
    record(&src, "PixelMine-v0", "size=32,max_steps=20", "miner", 3, None, true);
    minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    {
        let f = hdf5::File::open_rw(out.join("data/main_data.hdf5")).unwrap();
        let g = f.group("episode_0").unwrap();
        g.unlink("infos").unwrap();
        g.create_group("infos").unwrap();
    }
    let mut calls = vec![];
    minari::import(&out, &back, &mut |d, _| calls.push(d)).unwrap();
    // Episode 1 is where the first pass stops; the second pass takes all three.
    assert_eq!(calls, [1, 1, 2, 3]);
    let (a, b) = (Dataset::open(&src).unwrap(), Dataset::open(&back).unwrap());
    let first = a.select(|_| true).map(|e| e.episode_id).min().unwrap();
    for (k, id) in [(1u64, first + 1), (2, first + 2)] {
        let mut want = a.read_episode(id).unwrap().infos.unwrap();
        want.iter_mut().for_each(|i| drop(i.0.remove("achievements")));
        assert_eq!(b.read_episode(k).unwrap().infos.unwrap(), want, "episode {k}");
    }
    assert_eq!(b.read_episode(0).unwrap().observations, a.read_episode(first).unwrap().observations);
    // Nothing of the first pass is left beside the output.
    let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

/// Tuple (`_index_k`), MultiBinary (int8), Discrete with a start, f64 and MultiDiscrete.
#[test]
fn nested_spaces_round_trip_with_their_dtypes() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("nested/test-v0"), tmp.path().join("back"));
    let obs = Space::dict(vec![
        ("a".into(), Space::Tuple(vec![Space::discrete(3, 1).unwrap(), Space::MultiBinary { shape: vec![3] }])),
        ("b".into(), Space::boxed(DType::F64, &[2, 2], -1.0, 1.0).unwrap()),
        ("c".into(), Space::boxed(DType::U16, &[], 0.0, 9.0).unwrap()),
    ])
    .unwrap();
    let act = Space::multi_discrete(vec![4, 5], vec![]).unwrap();
    let spec = EnvSpec {
        id: "Nested-v0".into(),
        observation_space: obs,
        action_space: act,
        max_episode_steps: None,
        render_fps: None,
        reward_threshold: None,
        gymnasium_spec: None,
        agents: None,
    };
    common::write_sampled(&src, &spec, &[5, 0, 3, 9], 3, true);
    let rep = minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    assert_eq!((rep.episodes, rep.given_up, rep.steps), (4, 1, 17));
    let f = hdf5::File::open(out.join("data/main_data.hdf5")).unwrap();
    let names = f.member_names().unwrap();
    assert_eq!(names, ["episode_0", "episode_1", "episode_2", "episode_3"]);
    let e2 = f.group("episode_2").unwrap();
    assert_eq!(e2.attr("id").unwrap().read_scalar::<i64>().unwrap(), 2);
    assert_eq!(e2.attr("seed").unwrap().read_scalar::<i64>().unwrap(), 42);
    assert_eq!(e2.attr("total_steps").unwrap().read_scalar::<i64>().unwrap(), 3);
    let td = |p: &str| f.dataset(p).unwrap().dtype().unwrap().to_descriptor().unwrap().to_string();
    assert_eq!(td("episode_2/observations/a/_index_0"), "int64");
    assert_eq!(td("episode_2/observations/a/_index_1"), "int8");
    assert_eq!(td("episode_2/observations/b"), "float64");
    assert_eq!(td("episode_2/observations/c"), "uint16");
    assert_eq!(td("episode_2/actions"), "int64");
    assert_eq!(td("episode_2/rewards"), "float64");
    assert_eq!(td("episode_2/terminations"), "bool");
    assert_eq!(f.dataset("episode_1/actions").unwrap().shape(), [0, 2]);
    drop(f);
    minari::import(&out, &back, &mut nothing).unwrap();
    common::assert_same(&Dataset::open(&src).unwrap(), &Dataset::open(&back).unwrap(), &[]);
}

#[test]
fn export_refuses_to_overwrite_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("cartpole/random-v0"));
    record(&src, "CartPole-v1", "", "random", 3, None, false);
    minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    let before = std::fs::read(out.join("data/main_data.hdf5")).unwrap();
    let e = minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap_err();
    assert!(matches!(e, Error::OutputExists { .. }) && e.is_input(), "{e}");
    assert_eq!(std::fs::read(out.join("data/main_data.hdf5")).unwrap(), before);
    let opts = ExportOptions { force: true, author: Some("me".into()), ..Default::default() };
    minari::export(&src, &out, &opts, &mut nothing).unwrap();
    assert_eq!(metadata(&out)["author"], serde_json::json!(["me"]));
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["data"], "no staging or replaced directories left");
    // Bad ids and sources are input errors, and leave nothing behind.
    let e = minari::export(&src, &tmp.path().join("plain"), &ExportOptions::default(), &mut nothing).unwrap_err();
    assert!(matches!(e, Error::BadDatasetId { .. }), "{e}");
    assert!(!tmp.path().join("plain").exists());
    let e = minari::export(&tmp.path().join("nope"), &out, &ExportOptions { force: true, ..Default::default() }, &mut nothing).unwrap_err();
    assert!(matches!(e, Error::Store { .. }) && e.is_input(), "{e}");
}

#[test]
fn a_failed_export_leaves_nothing_and_keeps_the_old_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("cartpole/random-v0"));
    record(&src, "CartPole-v1", "", "random", 20, None, false);
    // Damage the second shard: the export fails part-way, after episodes were written.
    std::fs::write(src.join("steps/shard-000001.parquet"), b"damaged").unwrap();
    let e = minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap_err();
    assert!(matches!(e, Error::Store { .. }), "{e}");
    assert!(!out.exists(), "a failed export into a new directory removes it");
    assert!(std::fs::read_dir(tmp.path().join("cartpole")).unwrap().next().is_none());

    let good = tmp.path().join("good");
    record(&good, "CartPole-v1", "", "random", 4, None, false);
    minari::export(&good, &out, &ExportOptions::default(), &mut nothing).unwrap();
    let before = std::fs::read(out.join("data/main_data.hdf5")).unwrap();
    let e = minari::export(&src, &out, &ExportOptions { force: true, ..Default::default() }, &mut nothing).unwrap_err();
    assert!(matches!(e, Error::Store { .. }), "{e}");
    assert_eq!(
        std::fs::read(out.join("data/main_data.hdf5")).unwrap(),
        before,
        "--force keeps the old export until the new one is complete"
    );
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["data"]);
}

/// A valid CartPole export to break in different ways.
fn minari_fixture(root: &Path) -> PathBuf {
    let src = root.join("src");
    let out = root.join("fix/cartpole-v0");
    record(&src, "CartPole-v1", "", "random", 3, Some(10), false);
    minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    out
}

fn edit_meta(out: &Path, f: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) {
    let p = out.join("data/metadata.json");
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(m.as_object_mut().unwrap());
    std::fs::write(&p, m.to_string()).unwrap();
}

/// Imports `out` into a fresh directory, expecting an input error that names
/// `needle`, and checks nothing was left behind.
fn import_fails(out: &Path, needle: &str) -> Error {
    let parent = tempfile::tempdir().unwrap();
    let dest = parent.path().join("imported");
    let e = minari::import(out, &dest, &mut nothing).unwrap_err();
    assert!(e.is_input(), "{e}");
    assert!(e.to_string().contains(needle), "`{e}` should mention `{needle}`");
    assert!(std::fs::read_dir(parent.path()).unwrap().next().is_none(), "import left files behind");
    e
}

#[test]
fn malformed_minari_inputs_are_typed_errors_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = minari_fixture(tmp.path());
    let fresh = |name: &str| {
        let d = tmp.path().join(name).join("x-v0");
        copy_dir(&out, &d);
        d
    };

    assert!(matches!(import_fails(&tmp.path().join("missing"), "does not exist"), Error::NotMinari { .. }));
    assert!(matches!(import_fails(tmp.path(), "no data/metadata.json"), Error::NotMinari { .. }));

    let d = fresh("badjson");
    std::fs::write(d.join("data/metadata.json"), "{\"total_episodes\": 3,").unwrap();
    assert!(matches!(import_fails(&d, "not valid JSON"), Error::BadMetadata { .. }));

    let d = fresh("nospace");
    edit_meta(&d, |m| {
        m.remove("observation_space");
    });
    assert!(matches!(import_fails(&d, "observation_space"), Error::BadMetadata { .. }));

    let d = fresh("graph");
    edit_meta(&d, |m| {
        m.insert("action_space".into(), r#"{"type": "Graph"}"#.into());
    });
    assert!(matches!(import_fails(&d, "Graph"), Error::Unsupported { .. }));

    let d = fresh("noh5");
    std::fs::remove_file(d.join("data/main_data.hdf5")).unwrap();
    assert!(matches!(import_fails(&d, "main_data.hdf5"), Error::NotMinari { .. }));

    let d = fresh("garbage");
    std::fs::write(d.join("data/main_data.hdf5"), b"not hdf5 at all").unwrap();
    assert!(matches!(import_fails(&d, "not a readable HDF5 file"), Error::Malformed { .. }));

    let d = fresh("more");
    edit_meta(&d, |m| {
        m.insert("total_episodes".into(), 4.into());
    });
    assert!(matches!(import_fails(&d, "counts 4 episodes, the data has 3"), Error::Malformed { .. }));

    let d = fresh("noactions");
    hdf5::File::open_rw(d.join("data/main_data.hdf5")).unwrap().unlink("episode_1/actions").unwrap();
    assert!(matches!(import_fails(&d, "episode_1/actions: missing"), Error::Malformed { .. }));

    let d = fresh("rows");
    {
        let f = hdf5::File::open_rw(d.join("data/main_data.hdf5")).unwrap();
        let g = f.group("episode_2").unwrap();
        let t = g.dataset("rewards").unwrap().size();
        g.unlink("observations").unwrap();
        g.new_dataset::<f32>().shape([t, 4]).create("observations").unwrap();
    }
    assert!(matches!(import_fails(&d, "episode_2/observations"), Error::Malformed { .. }));

    let d = fresh("flags");
    {
        let f = hdf5::File::open_rw(d.join("data/main_data.hdf5")).unwrap();
        let g = f.group("episode_0").unwrap();
        g.unlink("truncations").unwrap();
        g.new_dataset::<bool>().shape([1]).create("truncations").unwrap();
    }
    assert!(matches!(import_fails(&d, "episode_0/truncations"), Error::Malformed { .. }));

    let d = fresh("dtype");
    {
        let f = hdf5::File::open_rw(d.join("data/main_data.hdf5")).unwrap();
        let g = f.group("episode_0").unwrap();
        let t = g.dataset("rewards").unwrap().size();
        g.unlink("actions").unwrap();
        g.new_dataset::<hdf5::types::VarLenUnicode>().shape([t]).create("actions").unwrap();
    }
    assert!(matches!(import_fails(&d, "expected int64"), Error::Malformed { .. }));

    // An existing, non-empty output is refused before anything is read.
    let taken = tmp.path().join("taken");
    std::fs::create_dir_all(taken.join("x")).unwrap();
    let e = minari::import(&out, &taken, &mut nothing).unwrap_err();
    assert!(matches!(e, Error::OutputExists { .. }), "{e}");
}

/// Issue 15: Minari JPEG-encodes image spaces by default, and assumes so when
/// `jpeg_encoding` is missing; raw images are still read as raw, and a JPEG that
/// does not decode is a malformed dataset, not a panic.
#[test]
fn images_import_raw_or_jpeg_encoded() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("pix/jpeg-v0"));
    record(&src, "PixelMine-v0", "size=32,max_steps=5", "random", 1, None, false);
    minari::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    edit_meta(&out, |m| {
        m.remove("jpeg_encoding");
    });
    let back = tmp.path().join("back");
    minari::import(&out, &back, &mut nothing).unwrap();
    common::assert_same(&Dataset::open(&src).unwrap(), &Dataset::open(&back).unwrap(), &[]);
    // Each row one (broken) JPEG: a [rows, bytes] array, as Minari writes equal-length JPEGs.
    let h5 = out.join("data/main_data.hdf5");
    {
        let f = hdf5::File::open_rw(&h5).unwrap();
        let g = f.group("episode_0/observations").unwrap();
        let rows = g.dataset("rgb").unwrap().shape()[0];
        g.unlink("rgb").unwrap();
        let junk = vec![0xffu8; rows * 16];
        g.new_dataset::<u8>().shape([rows, 16]).create("rgb").unwrap().write_raw(&junk).unwrap();
    }
    let e = import_fails(&out, "episode_0/observations/rgb");
    assert!(matches!(e, Error::Malformed { .. }) && e.to_string().contains("row 0"), "{e}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
