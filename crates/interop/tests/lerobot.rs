//! rollway → LeRobot v3.0 → rollway round trips (CartPole; PixelMine's Dict
//! observation with RGB video), importing a LeRobot dataset that rollway did not
//! make, overwrite rules, and malformed inputs.

use crate::common;

use std::path::Path;

use rollway_core::{DType, Space};
use rollway_interop::lerobot::{self, ExportOptions};
use rollway_interop::Error;
use rollway_store::Dataset;
use serde_json::Value as Json;

/// The PSNR every decoded video frame must reach, and their mean. PixelMine's
/// 32×32 pixel art at the default CRF 23 measured 26.2 dB worst, 30.5 dB mean:
/// yuv420p halves the colour resolution of one-pixel-wide edges, which caps even
/// CRF 10 at about 30.5 dB worst.
const MIN_PSNR_DB: f64 = 25.0;
const MIN_MEAN_PSNR_DB: f64 = 29.0;

/// This file's recordings: run seed 5, a shard every 4 episodes.
fn record(dir: &Path, env: &str, params: &str, agent: &str, n: u64, max_steps: Option<u64>, infos: bool) {
    common::record(dir, env, params, agent, n, max_steps, infos, 5, 4);
}

fn nothing(_: u64, _: u64) {}

fn json(p: &Path) -> Json {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Every episode of `a` is in `b` (renumbered from 0 in id order) with the same
/// values; frames of `video` columns only within `MIN_PSNR_DB` (and `MIN_MEAN_PSNR_DB` on average).
fn assert_same(a: &Dataset, b: &Dataset, video: &[&str]) {
    let mut ids: Vec<u64> = a.select(|_| true).map(|e| e.episode_id).collect();
    ids.sort_unstable();
    assert_eq!(b.select(|_| true).count(), ids.len());
    assert_eq!(a.metadata().env, b.metadata().env);
    let (mut sum, mut frames) = (0.0, 0);
    for (k, &id) in ids.iter().enumerate() {
        let (x, y) = (a.read_episode(id).unwrap(), b.read_episode(k as u64).unwrap());
        for ((name, xo), (name2, yo)) in x.observations.iter().zip(&y.observations) {
            assert_eq!(name, name2);
            if video.contains(&name.as_str()) {
                assert_eq!((xo.dtype, &xo.shape), (yo.dtype, &yo.shape), "episode {id} {name}");
                let frame = xo.data.len() / xo.shape[0];
                for (f, (p, q)) in xo.data.chunks_exact(frame).zip(yo.data.chunks_exact(frame)).enumerate() {
                    let db = rollway_media::psnr(p, q);
                    assert!(db >= MIN_PSNR_DB, "episode {id} frame {f}: {db:.1} dB");
                    sum += db.min(60.0);
                    frames += 1;
                }
            } else {
                assert_eq!(xo, yo, "episode {id} {name}");
            }
        }
        assert_eq!(x.actions, y.actions, "episode {id} actions");
        assert_eq!((&x.rewards, &x.terminations, &x.truncations), (&y.rewards, &y.terminations, &y.truncations), "episode {id}");
        let (e, f) = (&x.entry, &y.entry);
        assert_eq!(
            (e.seed, e.length, e.status, e.ret, &e.labels, &e.info),
            (f.seed, f.length, f.status, f.ret, &f.labels, &f.info),
            "episode {id}"
        );
        assert_eq!(x.infos, y.infos, "episode {id} infos");
    }
    if frames > 0 {
        assert!(sum / frames as f64 >= MIN_MEAN_PSNR_DB, "mean frame PSNR {:.1} dB", sum / frames as f64);
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()).unwrap_or_default();
    v.sort();
    v
}

#[test]
fn cartpole_round_trips_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("lerobot"), tmp.path().join("back"));
    record(&src, "CartPole-v1", "", "random", 20, Some(30), true);
    let opts = ExportOptions { fps: 50, episodes_per_file: Some(7), ..Default::default() };
    let rep = lerobot::export(&src, &out, &opts, &mut nothing).unwrap();
    let a = Dataset::open(&src).unwrap();
    let steps: u64 = a.select(|_| true).map(|e| e.length).sum();
    assert_eq!((rep.episodes, rep.steps, rep.frames, rep.data_files, rep.video_files), (20, steps, steps + 20, 3, 0));
    let info = json(&out.join("meta/info.json"));
    assert_eq!(info["codebase_version"], "v3.0");
    assert_eq!(
        (info["fps"].as_u64(), info["total_episodes"].as_u64(), info["total_frames"].as_u64()),
        (Some(50), Some(20), Some(steps + 20))
    );
    assert_eq!(info["splits"]["train"], "0:20");
    assert_eq!(info["video_path"], Json::Null);
    let f = &info["features"];
    assert_eq!(f["observation.state"], serde_json::json!({"dtype": "float32", "shape": [4], "names": null}));
    assert_eq!(f["action"]["dtype"], "int64");
    assert_eq!(f["action"]["shape"], serde_json::json!([1]));
    assert_eq!(f["next.reward"]["dtype"], "float32");
    assert_eq!(f["timestamp"]["dtype"], "float32");
    for k in ["next.done", "next.terminated", "next.truncated", lerobot::FINAL_OBSERVATION] {
        assert_eq!(f[k]["dtype"], "bool", "{k}");
    }
    assert_eq!(files(&out.join("data/chunk-000")), ["file-000.parquet", "file-001.parquet", "file-002.parquet"]);
    for p in ["meta/stats.json", "meta/tasks.parquet", "meta/episodes/chunk-000/file-000.parquet", "meta/rollway.json"] {
        assert!(out.join(p).is_file(), "{p}");
    }
    let stats = json(&out.join("meta/stats.json"));
    assert_eq!(stats["observation.state"]["count"], serde_json::json!([steps + 20]));
    assert_eq!(stats["frame_index"]["min"], serde_json::json!([0.0]));
    let progress = std::cell::Cell::new(0);
    let irep = lerobot::import(&out, &back, &mut |d, t| {
        assert_eq!(t, 20);
        progress.set(d);
    })
    .unwrap();
    assert_eq!((progress.get(), irep.episodes, irep.steps, irep.from_rollway, irep.env.as_str()), (20, 20, steps, true, "CartPole-v1"));
    assert!(irep.skipped_features.is_empty(), "{:?}", irep.skipped_features);
    let b = Dataset::open(&back).unwrap();
    assert_same(&a, &b, &[]);
    assert!(rollway_store::verify(&b).problems.is_empty());
}

/// Both codecs an export writes: AV1 (the default, LeRobot's) and H.264.
#[test]
fn pixelmine_video_round_trips_within_codec_loss() {
    for (codec, keyint) in [(lerobot::Codec::Av1, 2), (lerobot::Codec::H264, 32)] {
        video_round_trip(codec, keyint);
    }
}

fn video_round_trip(codec: lerobot::Codec, keyint: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("lerobot"), tmp.path().join("back"));
    record(&src, "PixelMine-v0", "size=32,max_steps=40", "miner", 6, None, true);
    let opts = ExportOptions { episodes_per_file: Some(4), video_codec: codec, encode_threads: 3, ..Default::default() };
    let rep = lerobot::export(&src, &out, &opts, &mut nothing).unwrap();
    assert_eq!((rep.episodes, rep.data_files, rep.video_files), (6, 2, 2));
    assert_eq!(rep.video_keys, ["observation.images.rgb"]);
    let info = json(&out.join("meta/info.json"));
    let rgb = &info["features"]["observation.images.rgb"];
    assert_eq!((rgb["dtype"].as_str(), &rgb["shape"]), (Some("video"), &serde_json::json!([32, 32, 3])));
    let vi = &rgb["info"];
    assert_eq!(
        (vi["video.codec"].as_str(), vi["video.fps"].as_u64(), vi["video.g"].as_u64()),
        (Some(codec.name()), Some(30), Some(keyint))
    );
    assert_eq!(info["features"]["observation.state"]["dtype"], "int32");
    assert_eq!(files(&out.join("videos/observation.images.rgb/chunk-000")), ["file-000.mp4", "file-001.mp4"]);
    // Four episodes of 41 frames in the first file, back to back.
    let v = rollway_media::mp4::read(&out.join("videos/observation.images.rgb/chunk-000/file-000.mp4")).unwrap();
    assert_eq!((v.codec, v.width, v.height, v.fps, v.frames()), (codec, 32, 32, 30, 4 * 41));
    let stats = json(&out.join("meta/stats.json"));
    let mean = &stats["observation.images.rgb"]["mean"];
    assert!(mean.as_array().unwrap().len() == 3 && mean[0][0][0].as_f64().unwrap() <= 1.0, "{mean}");
    lerobot::import(&out, &back, &mut nothing).unwrap();
    let b = Dataset::open(&back).unwrap();
    assert_same(&Dataset::open(&src).unwrap(), &b, &["observations/rgb"]);
}

/// A LeRobot dataset rollway did not make: no `meta/rollway.json`, no final
/// frames. Every frame becomes a step and the last observation repeats.
#[test]
fn foreign_datasets_import_frame_by_frame() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out, back) = (tmp.path().join("src"), tmp.path().join("pusht"), tmp.path().join("back"));
    record(&src, "PixelMine-v0", "size=32,max_steps=12", "miner", 2, None, false);
    lerobot::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    std::fs::remove_file(out.join("meta/rollway.json")).unwrap();
    let mut info = json(&out.join("meta/info.json"));
    // What LeRobot's own recordings have: `next.reward` and `next.done` only.
    for k in [lerobot::FINAL_OBSERVATION, "next.terminated", "next.truncated"] {
        info["features"].as_object_mut().unwrap().remove(k);
    }
    info["robot_type"] = "pusher".into();
    std::fs::write(out.join("meta/info.json"), info.to_string()).unwrap();
    let rep = lerobot::import(&out, &back, &mut nothing).unwrap();
    assert!(!rep.from_rollway);
    assert_eq!((rep.env.as_str(), rep.episodes, rep.steps), ("pusher", 2, 2 * 13));
    let (a, b) = (Dataset::open(&src).unwrap(), Dataset::open(&back).unwrap());
    assert_eq!(b.metadata().env.render_fps, Some(30));
    assert_eq!(b.metadata().frame_keys, ["observations/rgb"]);
    let x = a.read_episode(0).unwrap();
    let y = b.read_episode(0).unwrap();
    assert_eq!(y.entry.length, 13);
    // Keys lose their feature prefixes: `observation.state` → `state`, `observation.images.rgb` → `rgb`.
    let names: Vec<&str> = y.observations.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(names, ["observations/rgb", "observations/state"]);
    let (xs, ys) = (&x.observations[0].1, &y.observations[1].1);
    assert_eq!(ys.shape, [14, 8]);
    assert_eq!(&ys.data[..xs.data.len()], &xs.data[..], "inventory, the 13 frames");
    assert_eq!(ys.data[13 * 32..], ys.data[12 * 32..13 * 32], "the last observation repeats");
    assert_eq!(&y.actions[0].1.data[..12 * 8], &x.actions[0].1.data[..]);
    assert_eq!(y.rewards[..12], x.rewards[..]);
    assert!(y.terminations[12], "next.done of the last frame");
    assert_eq!(y.entry.info.get("lerobot").unwrap()["tasks"], serde_json::json!(["PixelMine-v0"]));
}

#[test]
fn export_refuses_to_overwrite_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, out) = (tmp.path().join("src"), tmp.path().join("out"));
    record(&src, "CartPole-v1", "", "random", 2, Some(5), false);
    lerobot::export(&src, &out, &ExportOptions::default(), &mut nothing).unwrap();
    let e = lerobot::export(&src, &out, &ExportOptions { fps: 10, ..Default::default() }, &mut nothing).unwrap_err();
    assert!(matches!(e, Error::OutputExists { .. }) && e.is_input(), "{e}");
    assert_eq!(json(&out.join("meta/info.json"))["fps"], 30);
    lerobot::export(&src, &out, &ExportOptions { fps: 10, force: true, ..Default::default() }, &mut nothing).unwrap();
    assert_eq!(json(&out.join("meta/info.json"))["fps"], 10);
    assert_eq!(files(tmp.path()), ["out", "src"], "no staging or moved-aside directories left");
    assert!(matches!(
        lerobot::export(&tmp.path().join("nope"), &tmp.path().join("o2"), &ExportOptions::default(), &mut nothing),
        Err(Error::Store { .. })
    ));
}

#[test]
fn malformed_inputs_are_typed_errors_and_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, good) = (tmp.path().join("src"), tmp.path().join("good"));
    record(&src, "PixelMine-v0", "size=32,max_steps=10", "miner", 3, None, false);
    lerobot::export(&src, &good, &ExportOptions::default(), &mut nothing).unwrap();
    type Damage = fn(&Path);
    type Expected = fn(&Error) -> bool;
    let cases: Vec<(&str, Damage, Expected)> = vec![
        ("no info.json", |d| std::fs::remove_file(d.join("meta/info.json")).unwrap(), |e| matches!(e, Error::NotLeRobot { .. })),
        ("info.json not JSON", |d| std::fs::write(d.join("meta/info.json"), "{fps").unwrap(), |e| matches!(e, Error::BadMetadata { .. })),
        (
            "v1.6",
            |d| edit_info(d, |i| i["codebase_version"] = "v1.6".into()),
            |e| matches!(e, Error::Unsupported { .. }) && e.to_string().contains("v2.x and v3.x"),
        ),
        (
            "v2.1 without its episodes.jsonl",
            |d| edit_info(d, |i| i["codebase_version"] = "v2.1".into()),
            |e| matches!(e, Error::NotLeRobot { .. }) && e.to_string().contains("episodes.jsonl"),
        ),
        (
            "feature missing",
            |d| edit_info(d, |i| _ = i["features"].as_object_mut().unwrap().remove("observation.state")),
            |e| matches!(e, Error::BadMetadata { .. }),
        ),
        ("episode count", |d| edit_info(d, |i| i["total_episodes"] = 7.into()), |e| matches!(e, Error::Malformed { .. })),
        ("rollway.json damaged", |d| std::fs::write(d.join("meta/rollway.json"), "[").unwrap(), |e| matches!(e, Error::BadMetadata { .. })),
        ("no episodes table", |d| std::fs::remove_dir_all(d.join("meta/episodes")).unwrap(), |e| matches!(e, Error::NotLeRobot { .. })),
        (
            "episodes table truncated",
            |d| truncate(&d.join("meta/episodes/chunk-000/file-000.parquet")),
            |e| matches!(e, Error::Malformed { .. }),
        ),
        ("data file truncated", |d| truncate(&d.join("data/chunk-000/file-000.parquet")), |e| matches!(e, Error::Malformed { .. })),
        (
            "data file missing",
            |d| std::fs::remove_file(d.join("data/chunk-000/file-000.parquet")).unwrap(),
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "video garbage",
            |d| std::fs::write(d.join("videos/observation.images.rgb/chunk-000/file-000.mp4"), b"not an mp4 at all").unwrap(),
            |e| matches!(e, Error::Malformed { .. }),
        ),
        (
            "video truncated",
            |d| truncate(&d.join("videos/observation.images.rgb/chunk-000/file-000.mp4")),
            |e| matches!(e, Error::Malformed { .. }),
        ),
    ];
    for (i, (what, damage, expected)) in cases.into_iter().enumerate() {
        let bad = tmp.path().join(format!("bad{i}"));
        copy_dir(&good, &bad);
        damage(&bad);
        let out = tmp.path().join(format!("out{i}"));
        let e = lerobot::import(&bad, &out, &mut nothing).expect_err(what);
        assert!(expected(&e), "{what}: {e:?}");
        assert!(e.is_input(), "{what}: {e}");
        assert!(!out.exists(), "{what}: left {}", out.display());
    }
    assert!(files(tmp.path()).iter().all(|f| !f.starts_with('.')), "{:?}", files(tmp.path()));
    let e = lerobot::import(&tmp.path().join("missing"), &tmp.path().join("o"), &mut nothing).unwrap_err();
    assert!(matches!(e, Error::NotLeRobot { .. }), "{e}");
    // An import never writes into a non-empty directory.
    let e = lerobot::import(&good, &src, &mut nothing).unwrap_err();
    assert!(matches!(e, Error::OutputExists { .. }), "{e}");
}

fn edit_info(d: &Path, f: impl FnOnce(&mut Json)) {
    let p = d.join("meta/info.json");
    let mut j = json(&p);
    f(&mut j);
    std::fs::write(&p, j.to_string()).unwrap();
}

fn truncate(p: &Path) {
    let b = std::fs::read(p).unwrap();
    std::fs::write(p, &b[..b.len() / 2]).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

/// A dataset recorded by LeRobot 0.4.4's own writer (tests/python/make_lerobot.py),
/// with H.264 video, and the same with AV1 video (LeRobot's default codec).
#[test]
fn datasets_recorded_by_lerobot_import() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let tmp = tempfile::tempdir().unwrap();
    check_made(&data.join("lerobot-0.4.4-h264"), &tmp.path().join("h264"));
    let av1 = tmp.path().join("av1");
    copy_dir(&data.join("lerobot-0.4.4-h264"), &av1);
    std::fs::copy(data.join("lerobot-0.4.4-av1.mp4"), av1.join("videos/observation.images.top/chunk-000/file-000.mp4")).unwrap();
    check_made(&av1, &tmp.path().join("from-av1"));
}

/// Imports make_lerobot.py's dataset at `src` into `out` and checks every value.
fn check_made(src: &Path, out: &Path) {
    let rep = lerobot::import(src, out, &mut nothing).unwrap();
    assert!(!rep.from_rollway);
    assert_eq!((rep.episodes, rep.steps, rep.skipped_features.clone()), (3, 24, vec!["next.success".to_string()]));
    let ds = Dataset::open(out).unwrap();
    let (obs, act) = ds.metadata().env.spaces().unwrap();
    let state = Space::boxed(DType::F32, &[3], f64::NEG_INFINITY, f64::INFINITY).unwrap();
    assert_eq!(
        obs,
        Space::dict(vec![("state".into(), state), ("top".into(), Space::boxed(DType::U8, &[32, 48, 3], 0.0, 255.0).unwrap())]).unwrap()
    );
    assert_eq!(act, Space::boxed(DType::F32, &[2], f64::NEG_INFINITY, f64::INFINITY).unwrap());
    for (ep, n) in [7usize, 12, 5].into_iter().enumerate() {
        let e = ds.read_episode(ep as u64).unwrap();
        assert_eq!(e.entry.length as usize, n);
        let f32s = |a: &rollway_core::Array| a.data.chunks_exact(4).map(f32_of).collect::<Vec<f32>>();
        let state = f32s(&e.observations[0].1);
        let want: Vec<f32> = (0..=n).flat_map(|t| [ep as f32, t.min(n - 1) as f32, 0.5]).collect();
        assert_eq!(state, want, "episode {ep}: states, the last one repeated");
        assert_eq!(f32s(&e.actions[0].1), (0..n).flat_map(|t| [t as f32, -(t as f32)]).collect::<Vec<_>>());
        assert_eq!(e.rewards, (0..n).map(|t| t as f64 * 0.25).collect::<Vec<_>>());
        assert_eq!((e.terminations[n - 1], e.truncations[n - 1]), (ep != 1, ep == 1), "episode {ep}");
        assert_eq!(e.entry.info.get("lerobot").unwrap()["tasks"], serde_json::json!(["push"]));
        let frames = &e.observations[1].1;
        for t in 0..=n {
            let mut want = vec![0u8; 32 * 48 * 3];
            for (i, px) in want.chunks_exact_mut(3).enumerate() {
                if i % 48 < 4 * t.min(n - 1) + 4 {
                    px.fill(40 * ep as u8 + 30);
                }
            }
            let db = rollway_media::psnr(&frames.data[t * want.len()..(t + 1) * want.len()], &want);
            assert!(db >= MIN_PSNR_DB, "episode {ep} frame {t}: {db:.1} dB");
        }
    }
}

fn f32_of(b: &[u8]) -> f32 {
    f32::from_ne_bytes(b.try_into().unwrap())
}
