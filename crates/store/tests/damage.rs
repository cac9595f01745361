//! Issue 10: damaged datasets are reported, never read wrongly, never a panic, and
//! never changed by a reader. Each test damages a freshly written dataset in one way.

use crate::common;

use std::path::Path;

use common::{episodes, write_all};
use rand::{Rng, SeedableRng};
use rollway_store::{Dataset, OpenOptions, WriterConfig};

fn cartpole(dir: &Path, shards: usize) {
    let (spec, eps) = episodes("CartPole-v1", "", shards as u64 * 2, 30);
    write_all(dir, &spec, &eps, WriterConfig { max_buffer_episodes: Some(2), ..Default::default() });
}

fn edit_index(dir: &Path, shard: u32, edit: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join(format!("index/shard-{shard:06}.json"));
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn issue10_a_shard_of_another_env_is_refused_by_its_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let (cp, ac) = (tmp.path().join("cartpole"), tmp.path().join("acrobot"));
    cartpole(&cp, 1);
    let (spec, eps) = episodes("Acrobot-v1", "", 2, 30);
    write_all(&ac, &spec, &eps, WriterConfig::default());
    // An Acrobot shard (float32[6]) in place of a CartPole one (float32[4]), with an index
    // that matches its rows, so only the schema can tell.
    std::fs::copy(ac.join("steps/shard-000000.parquet"), cp.join("steps/shard-000000.parquet")).unwrap();
    std::fs::copy(ac.join("index/shard-000000.json"), cp.join("index/shard-000000.json")).unwrap();
    edit_index(&cp, 0, |v| v.as_object_mut().unwrap().remove("files").map(drop).unwrap_or(()));
    let ds = Dataset::open(&cp).unwrap();
    let err = ds.read_episode(0).unwrap_err().to_string();
    assert!(err.contains("shard-000000.parquet") && err.contains("column `observations`"), "{err}");
    let problems = format!("{:?}", rollway_store::verify(&ds).problems);
    assert!(problems.contains("column `observations`"), "{problems}");
}

#[test]
fn issue10_a_flipped_byte_fails_the_content_hash() {
    let tmp = tempfile::tempdir().unwrap();
    cartpole(tmp.path(), 2);
    let p = tmp.path().join("steps/shard-000001.parquet");
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 4] {
        *b ^= 0x5a;
    }
    std::fs::write(&p, bytes).unwrap();
    let r = rollway_store::verify(&Dataset::open(tmp.path()).unwrap());
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].shard, Some(1));
    assert!(r.problems[0].message.contains("XXH3"), "{}", r.problems[0].message);
}

#[test]
fn issue10_a_truncated_index_fails_by_default_and_is_skipped_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    cartpole(tmp.path(), 3);
    let p = tmp.path().join("index/shard-000001.json");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    let err = Dataset::open(tmp.path()).err().expect("refused").to_string();
    assert!(err.contains("shard-000001.json"), "{err}");
    let ds = Dataset::open_with(tmp.path(), OpenOptions { skip_damaged: true }).unwrap();
    assert_eq!(ds.damaged().iter().map(|d| d.shard).collect::<Vec<_>>(), vec![1]);
    assert_eq!(ds.episodes().count(), 4, "shards 0 and 2 are read");
    let r = rollway_store::verify(&ds);
    assert_eq!(r.shards, 2);
    assert_eq!(r.problems[0].shard, Some(1), "{:?}", r.problems);
    assert!(
        r.problems[1..].iter().all(|p| p.shard.is_none() && p.message.contains("6 episodes in 3 shards")),
        "only the totals disagree besides: {:?}",
        r.problems
    );
}

#[test]
fn issue10_index_numbers_out_of_range_are_errors_not_panics() {
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 5] = [
        ("row_start past the shard", |v| v["episodes"][1]["row_start"] = 1_000_000.into()),
        ("row_start overflow", |v| v["episodes"][0]["row_start"] = u64::MAX.into()),
        ("rows overflow", |v| v["episodes"][0]["length"] = u64::MAX.into()),
        ("frames start u64::MAX", |v| v["episodes"][0]["frames"]["observations/rgb"]["start"] = u64::MAX.into()),
        ("file outside the dataset", |v| v["files"][0]["path"] = "../../etc/passwd".into()),
    ];
    for (what, edit) in edits {
        let tmp = tempfile::tempdir().unwrap();
        let (spec, eps) = episodes("PixelMine-v0", "size=16,max_steps=10", 2, 10);
        write_all(tmp.path(), &spec, &eps, WriterConfig::default());
        edit_index(tmp.path(), 0, edit);
        let err = Dataset::open(tmp.path()).err().unwrap_or_else(|| panic!("{what}: accepted")).to_string();
        assert!(err.contains("shard-000000.json"), "{what}: {err}");
        let ds = Dataset::open_with(tmp.path(), OpenOptions { skip_damaged: true }).unwrap();
        let problems = rollway_store::verify(&ds).problems;
        assert_eq!(
            problems.iter().filter(|p| p.shard.is_some()).map(|p| p.shard).collect::<Vec<_>>(),
            vec![Some(0)],
            "{what}: {problems:?}"
        );
    }
}

/// Random damage to random files (truncate, flip, delete, duplicate): readers never
/// panic, never change a file, and never hand out an episode whose data is not intact.
#[test]
fn issue10_randomly_damaged_datasets_never_panic_or_misreport() {
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    let (spec, eps) = episodes("PixelMine-v0", "size=16,max_steps=12", 6, 12);
    write_all(&pristine, &spec, &eps, WriterConfig { max_buffer_episodes: Some(2), ..Default::default() });
    let want: Vec<_> = eps.iter().map(|e| (e.ret, e.trajectory.as_ref().unwrap().rewards.clone())).collect();
    let files: Vec<String> = ["index", "steps", "frames/observations.rgb"]
        .iter()
        .flat_map(|d| {
            std::fs::read_dir(pristine.join(d)).unwrap().flatten().map(move |e| format!("{d}/{}", e.file_name().to_string_lossy()))
        })
        .collect();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(10);
    for round in 0..120 {
        let d = tmp.path().join(format!("r{round}"));
        copy_tree(&pristine, &d);
        let f = d.join(&files[rng.random_range(0..files.len())]);
        let mut bytes = std::fs::read(&f).unwrap();
        match rng.random_range(0..4) {
            0 => bytes.truncate(rng.random_range(0..bytes.len())),
            1 => (0..rng.random_range(1..5)).for_each(|_| {
                let i = rng.random_range(0..bytes.len());
                bytes[i] ^= 1 << rng.random_range(0..8);
            }),
            2 => {
                std::fs::remove_file(&f).unwrap();
                bytes.clear();
            }
            _ => std::fs::write(f.with_extension("copy.json"), &bytes).unwrap(),
        }
        if !bytes.is_empty() {
            std::fs::write(&f, &bytes).unwrap();
        }
        let before = std::fs::read_dir(f.parent().unwrap()).unwrap().count();
        let outcome = std::panic::catch_unwind(|| {
            let Ok(ds) = Dataset::open_with(&d, OpenOptions { skip_damaged: true }) else {
                return;
            };
            let report = rollway_store::verify(&ds);
            let damaged: std::collections::BTreeSet<u32> = report.problems.iter().filter_map(|p| p.shard).collect();
            for e in ds.episodes() {
                match ds.read_episode(e.episode_id) {
                    Ok(got) => assert_eq!((got.entry.ret, got.rewards), want[e.run_index as usize], "episode {} misread", e.episode_id),
                    Err(_) => assert!(damaged.contains(&e.shard), "episode {} unreadable, verify silent", e.episode_id),
                }
            }
        });
        assert!(outcome.is_ok(), "panic in round {round} on {}", f.display());
        assert_eq!(std::fs::read_dir(f.parent().unwrap()).unwrap().count(), before, "a reader added or removed files");
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else if t.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn issue10_a_writer_that_stops_reports_its_own_error_to_later_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 2, 30);
    let cfg = WriterConfig { max_buffer_episodes: Some(1), queue: 1, ..Default::default() };
    let w = rollway_store::DatasetWriter::create(tmp.path(), &spec, "random", 0, serde_json::json!({}), cfg).unwrap();
    // The next commit cannot stage its files.
    std::fs::remove_dir_all(tmp.path().join(".tmp/publish")).unwrap();
    let mut err = None;
    for e in eps.iter().cycle().take(500) {
        if let Err(x) = w.write(e.clone()) {
            err = Some(x.to_string());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let err = err.expect("writes fail once the writer has stopped");
    assert!(err.contains(".tmp/publish"), "the cause, not a bare 'writer thread ended': {err}");
}

#[test]
fn issue10_given_up_episodes_count_toward_the_buffer_so_shards_stay_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (spec, _) = episodes("CartPole-v1", "", 1, 5);
    let w = rollway_store::DatasetWriter::create(tmp.path(), &spec, "random", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    let n = rollway_store::MAX_SHARD_EPISODES as u64 * 2 + 10;
    for i in 0..n {
        let mut gone = rollway_core::EpisodeResult::from_trajectory(i, i, Default::default());
        (gone.status, gone.trajectory) = (rollway_core::Status::GivenUp, None);
        w.write(gone).unwrap();
    }
    w.finish().unwrap();
    let ds = Dataset::open(tmp.path()).unwrap();
    assert_eq!(ds.episodes().count() as u64, n);
    assert_eq!(ds.shards().len(), 3, "at most {} episodes a shard", rollway_store::MAX_SHARD_EPISODES);
}
