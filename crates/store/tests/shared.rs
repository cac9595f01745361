//! Issue 13: one dataset, many writers — who excludes whom, and what a writer id may be.
//! (Members writing at once, and killed, are tested through the binary in
//! crates/cli/tests/members.rs.)

use crate::common;

use rollway_store::{close_run, repair, DatasetWriter, Error, WriterConfig};

fn small() -> WriterConfig {
    WriterConfig { max_buffer_episodes: Some(1), ..WriterConfig::default() }
}

#[test]
fn issue13_members_and_a_single_writer_exclude_each_other() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (spec, eps) = common::episodes("CartPole-v1", "", 6, 50);
    DatasetWriter::create(dir, &spec, "random", 0, serde_json::json!({}), small()).unwrap().finish().unwrap();

    let a = DatasetWriter::join(dir, 0, "a", small()).unwrap();
    let b = DatasetWriter::join(dir, 0, "b", small()).unwrap();
    assert!(matches!(DatasetWriter::join(dir, 0, "a", small()), Err(Error::Locked { .. })), "an id is one live writer");
    assert!(matches!(DatasetWriter::resume(dir, small(), None), Err(Error::Locked { .. })), "no single writer while members live");
    assert!(matches!(repair(dir), Err(Error::Locked { .. })));
    assert!(matches!(close_run(dir, 0, None), Err(Error::Locked { .. })));
    for (i, e) in eps.into_iter().enumerate() {
        if i % 2 == 0 { &a } else { &b }.write(e).unwrap();
    }
    a.finish().unwrap();
    b.finish().unwrap();
    let stats = close_run(dir, 0, Some(serde_json::json!({"episodes": 6}))).unwrap();
    assert_eq!((stats.episodes, stats.shards), (6, 6));
    let ds = rollway_store::Dataset::open(dir).unwrap();
    assert_eq!(ds.episodes().count(), 6);
    assert_eq!(ds.metadata().runs[0].summary, Some(serde_json::json!({"episodes": 6})));

    let single = DatasetWriter::resume(dir, small(), None).unwrap().0;
    assert!(matches!(DatasetWriter::join(dir, 0, "c", small()), Err(Error::Locked { .. })), "no member while a single writer lives");
    single.finish().unwrap();
}

#[test]
fn issue13_join_refuses_bad_ids_missing_runs_and_non_datasets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let (spec, _) = common::episodes("CartPole-v1", "", 1, 10);
    DatasetWriter::create(&dir, &spec, "random", 0, serde_json::json!({}), small()).unwrap().finish().unwrap();
    for bad in ["", ".x", "a/b", "a b"] {
        assert!(matches!(DatasetWriter::join(&dir, 0, bad, small()), Err(Error::WriterId(_))), "{bad:?}");
    }
    assert!(matches!(DatasetWriter::join(&dir, 1, "a", small()), Err(Error::Mismatch { .. })));
    assert!(matches!(DatasetWriter::join(tmp.path(), 0, "a", small()), Err(Error::NotADataset { .. })));
    assert!(!tmp.path().join(".tmp").exists(), "a refused join creates nothing");
}
