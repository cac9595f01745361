//! The format golden fixture: a small dataset written deterministically (the
//! collector has no wall-clock fields) must match `tests/fixtures/format-v1/`
//! byte for byte in its JSON files and value for value in its Parquet and frame
//! files, and the committed fixture must stay readable. A failure here means the
//! on-disk format changed: bump FORMAT_VERSION, update FORMAT.md, and regenerate
//! with `ROLLWAY_UPDATE_FIXTURES=1 cargo test -p rollway-store --test fixture`.

use std::path::{Path, PathBuf};

use rollway_core::{Array, Params, Value};
use rollway_store::{Collector, Dataset, DatasetWriter, WriterConfig};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1")
}

fn write(dir: &Path) {
    // CartPole (Box obs, Discrete actions, infos) ...
    let env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
    let w = DatasetWriter::create(&dir.join("cartpole"), env.spec(), "fixture", 7, serde_json::json!({"fixture": true}), WriterConfig { max_buffer_episodes: Some(2), record_infos: true, ..Default::default() }).unwrap();
    let mut c = Collector::new(env, w);
    for seed in 0..3 {
        c.reset(Some(seed)).unwrap();
        for t in 0..(5 + seed as i64) {
            c.step_discrete((t + seed as i64) % 2).unwrap();
        }
    }
    c.close().unwrap();
    // ... and the mining world (Dict obs with an image leaf in frame files, raw media).
    let env = rollway_envs::make("PixelMine-v0", &Params::parse("size=16,max_steps=6").unwrap()).unwrap();
    let w = DatasetWriter::create(&dir.join("mine"), env.spec(), "fixture", 7, serde_json::json!({}), WriterConfig { frame_media: "raw".into(), ..Default::default() }).unwrap();
    let mut c = Collector::new(env, w);
    for seed in 0..2 {
        c.reset(Some(seed)).unwrap();
        for a in [1, 2, 5, 3, 4, 5] {
            c.step(&Value::Array(Array::scalar_i64(a))).unwrap();
        }
    }
    c.close().unwrap();
}

fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn format_v1_fixture_is_stable() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path());
    let fixture = fixture_dir();
    if std::env::var_os("ROLLWAY_UPDATE_FIXTURES").is_some() {
        let _ = std::fs::remove_dir_all(&fixture);
        for f in files(tmp.path()) {
            std::fs::create_dir_all(fixture.join(&f).parent().unwrap()).unwrap();
            std::fs::copy(tmp.path().join(&f), fixture.join(&f)).unwrap();
        }
    }
    assert_eq!(files(tmp.path()), files(&fixture), "the same files");
    for f in files(&fixture) {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext == "json" || ext == "raw" {
            assert!(std::fs::read(tmp.path().join(&f)).unwrap() == std::fs::read(fixture.join(&f)).unwrap(), "{} differs from the fixture", f.display());
        }
    }
    // Parquet bytes carry the writer library's version; compare what they hold instead.
    for name in ["cartpole", "mine"] {
        let (a, b) = (Dataset::open(&tmp.path().join(name)).unwrap(), Dataset::open(&fixture.join(name)).unwrap());
        let ids: Vec<u64> = b.episodes().map(|e| e.episode_id).collect();
        assert!(!ids.is_empty());
        for id in ids {
            assert_eq!(a.read_episode(id).unwrap(), b.read_episode(id).unwrap(), "{name} episode {id}");
        }
        assert!(rollway_store::verify(&b).problems.is_empty());
    }
}
