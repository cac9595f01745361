//! The format golden fixture: a small dataset written deterministically (the
//! collector has no wall-clock fields) must match `tests/fixtures/format-v3/`
//! byte for byte in its JSON files and value for value in its Parquet and frame
//! files, and the committed fixture must stay readable. A failure here means the
//! on-disk format changed: bump FORMAT_VERSION, update FORMAT.md, keep the old
//! fixture as a read-compatibility test, and regenerate with
//! `ROLLWAY_UPDATE_FIXTURES=1 cargo test -p rollway-store --test store fixture::`.
//! `tests/fixtures/format-v1/` (written by version 1) must keep reading the same, and
//! `tests/fixtures/format-v2/` (version 2: large observation leaves as lists) must read
//! as a fresh write of the same episodes.

use std::path::{Path, PathBuf};

use rollway_core::{Array, Params, Value};
use rollway_store::{Collector, Dataset, DatasetWriter, WriterConfig};

fn fixture_dir(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/format-v{version}"))
}

fn write(dir: &Path) {
    // CartPole (Box obs, Discrete actions, infos) ...
    let env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
    let w = DatasetWriter::create(
        &dir.join("cartpole"),
        env.spec(),
        "fixture",
        7,
        serde_json::json!({"fixture": true}),
        WriterConfig { max_buffer_episodes: Some(2), record_infos: true, ..Default::default() },
    )
    .unwrap();
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
    let w = DatasetWriter::create(
        &dir.join("mine"),
        env.spec(),
        "fixture",
        7,
        serde_json::json!({}),
        WriterConfig { frame_media: "raw".into(), ..Default::default() },
    )
    .unwrap();
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

/// Every file under `root` with its bytes (what "reading changes nothing" compares).
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files(root).into_iter().map(|f| (f.clone(), std::fs::read(root.join(&f)).unwrap())).collect()
}

#[test]
fn format_v1_fixture_still_reads_and_is_not_changed_by_reading() {
    // The v1 fixture holds episodes of the envs as they were when it was written
    // (CartPole's seeded starts have since changed to Gymnasium's), so what it reads
    // as is pinned by a hash of its decoded episodes, taken when a fresh write of the
    // same episodes still matched it value for value.
    let v1 = fixture_dir(1);
    let pinned_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1-decoded.json");
    let before = snapshot(&v1);
    let mut decoded = serde_json::Map::new();
    for name in ["cartpole", "mine"] {
        let b = Dataset::open(&v1.join(name)).unwrap();
        assert_eq!(b.metadata().format_version, 1);
        // Fields added since the hash was pinned are left out of the text: a v1 dataset
        // has no training columns (checked), and its episodes read as they did.
        let text: String = b
            .episodes()
            .map(|e| {
                let d = b.read_episode(e.episode_id).unwrap();
                assert!(d.extras.is_empty() && d.policy_version.is_none() && d.entry.policy_version.is_none());
                format!("{d:?}\n")
                    .replace(", policy_version: None", "")
                    .replace(", extras: []", "")
                    .replace(", ended_at: None", "")
                    .replace(", agent_returns: None", "")
            })
            .collect();
        decoded.insert(name.into(), format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes())).into());
        assert!(rollway_store::verify(&b).problems.is_empty());
    }
    if std::env::var_os("ROLLWAY_UPDATE_FIXTURES").is_some() {
        std::fs::write(&pinned_path, serde_json::to_string_pretty(&decoded).unwrap()).unwrap();
    }
    let pinned: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(&pinned_path).unwrap()).unwrap();
    assert_eq!(decoded, pinned, "the v1 fixture no longer reads as it did");
    assert!(snapshot(&v1) == before, "reading a dataset changed its files");
}

#[test]
fn a_writer_upgrades_a_v1_dataset_and_keeps_its_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("cartpole");
    for f in files(&fixture_dir(1).join("cartpole")) {
        std::fs::create_dir_all(copy.join(&f).parent().unwrap()).unwrap();
        std::fs::copy(fixture_dir(1).join("cartpole").join(&f), copy.join(&f)).unwrap();
    }
    let old: Vec<_> = Dataset::open(&copy).unwrap().episodes().cloned().collect();
    let env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
    let w = DatasetWriter::create(
        &copy,
        env.spec(),
        "fixture",
        8,
        serde_json::json!({}),
        WriterConfig { record_infos: true, ..Default::default() },
    )
    .unwrap();
    let mut c = Collector::new(env, w);
    c.reset(Some(9)).unwrap();
    for t in 0..4 {
        c.step_discrete(t % 2).unwrap();
    }
    c.close().unwrap();
    let ds = Dataset::open(&copy).unwrap();
    assert_eq!(ds.metadata().format_version, rollway_store::FORMAT_VERSION);
    assert_eq!(ds.episodes().take(old.len()).cloned().collect::<Vec<_>>(), old);
    assert_eq!(ds.episodes().count(), old.len() + 1);
    assert!(ds.shards().last().unwrap().files.len() == 1, "new shards list their files");
    assert!(rollway_store::verify(&ds).problems.is_empty());
}

/// A fixture file's bytes with the writer's version blanked out: each run records the
/// rollway that wrote it (issue 33), which is provenance, not format, and changes with
/// every release. Likewise each episode's `ended_at` (issue 47) and each life's `started_at`
/// (issue 70): when it was written.
fn comparable(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let Ok(text) = std::str::from_utf8(&bytes) else { return bytes };
    let mut text = text.to_string();
    while let Some(at) = text.find(",\"ended_at\":") {
        let end = text[at + 1..].find([',', '}']).map_or(text.len(), |e| at + 1 + e);
        text.replace_range(at..end, "");
    }
    let keys = ["\"rollway_version\": ", "\"started_at\": "];
    let lines: Vec<String> = text
        .split('\n')
        .map(|l| match keys.iter().find_map(|key| l.find(key).map(|at| (at, key))) {
            Some((at, key)) => format!("{}{key}*", &l[..at]),
            None => l.to_string(),
        })
        .collect();
    lines.join("\n").into_bytes()
}

#[test]
fn format_v3_fixture_is_stable() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path());
    let fixture = fixture_dir(rollway_store::FORMAT_VERSION);
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
            assert!(comparable(&tmp.path().join(&f)) == comparable(&fixture.join(&f)), "{} differs from the fixture", f.display());
        }
    }
    // Parquet bytes carry the writer library's version; compare what they hold instead.
    same_episodes(tmp.path(), &fixture);
}

#[test]
fn format_v2_fixture_reads_as_a_fresh_write_and_is_not_changed_by_reading() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path());
    let v2 = fixture_dir(2);
    let before = snapshot(&v2);
    for name in ["cartpole", "mine"] {
        assert_eq!(Dataset::open(&v2.join(name)).unwrap().metadata().format_version, 2);
    }
    same_episodes(tmp.path(), &v2);
    assert!(snapshot(&v2) == before, "reading a dataset changed its files");
}

/// Every episode of `fixture` reads as the one at `fresh` (a write of the same episodes).
fn same_episodes(fresh: &Path, fixture: &Path) {
    for name in ["cartpole", "mine"] {
        let (a, b) = (Dataset::open(&fresh.join(name)).unwrap(), Dataset::open(&fixture.join(name)).unwrap());
        let ids: Vec<u64> = b.episodes().map(|e| e.episode_id).collect();
        assert!(!ids.is_empty());
        for id in ids {
            let mut written = a.read_episode(id).unwrap();
            assert!(written.entry.ended_at.take().is_some(), "a writer stamps when it took the episode");
            // When an episode was written is no part of it (a fixture may or may not carry it).
            let mut fixed = b.read_episode(id).unwrap();
            fixed.entry.ended_at = None;
            assert_eq!(written, fixed, "{name} episode {id}");
        }
        assert!(rollway_store::verify(&b).problems.is_empty());
    }
}
