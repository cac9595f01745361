//! Dataset round trips, Minari collector semantics, appends, resume points,
//! crash debris and damaged files.

use crate::common;

use common::{episodes, write_all};
use rand::{Rng, SeedableRng};
use rollway_core::{EpisodeResult, Info, Layout, Params, Status};
use rollway_store::{Collector, Dataset, DatasetWriter, Error, WriterConfig};

/// Every recorded value comes back bit for bit, for flat and Dict (with frames) spaces.
fn assert_round_trip(env: &str, params: &str, media: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes(env, params, 7, 60);
    write_all(
        dir.path(),
        &spec,
        &eps,
        WriterConfig { max_buffer_episodes: Some(3), record_infos: true, frame_media: media.into(), ..Default::default() },
    );
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.shards().len(), 3, "7 episodes, 3 per shard");
    let ol = Layout::of(&spec.observation_space);
    let al = Layout::of(&spec.action_space);
    for e in &eps {
        let got = ds.read_episode(e.run_index).unwrap();
        let t = e.trajectory.as_ref().unwrap();
        assert_eq!(got.rewards, t.rewards);
        assert_eq!(got.terminations, t.terminations);
        assert_eq!(got.truncations, t.truncations);
        assert_eq!(got.infos.as_ref().unwrap(), &t.infos);
        assert_eq!(got.entry.ret, e.ret);
        for (li, leaf) in ol.leaves().iter().enumerate() {
            let want: Vec<u8> =
                t.obs.chunks_exact(ol.row_bytes()).flat_map(|r| r[leaf.offset..leaf.offset + leaf.bytes()].to_vec()).collect();
            assert_eq!(got.observations[li].1.data, want, "observation leaf {}", leaf.path);
            assert_eq!(got.observations[li].1.shape[0] as u64, e.length + 1);
        }
        for (li, leaf) in al.leaves().iter().enumerate() {
            let want: Vec<u8> =
                t.actions.chunks_exact(al.row_bytes()).flat_map(|r| r[leaf.offset..leaf.offset + leaf.bytes()].to_vec()).collect();
            assert_eq!(got.actions[li].1.data, want);
        }
    }
    assert!(rollway_store::verify(&ds).problems.is_empty());
}

#[test]
fn cartpole_round_trips() {
    assert_round_trip("CartPole-v1", "", "raw");
}

#[test]
fn pendulum_box_actions_round_trip() {
    assert_round_trip("Pendulum-v1", "", "raw");
}

#[test]
fn pixel_frames_round_trip_raw_and_lz4() {
    assert_round_trip("PixelMine-v0", "size=32,max_steps=50", "raw");
    assert_round_trip("PixelMine-v0", "size=32,max_steps=50", "lz4");
}

#[test]
fn collector_truncates_on_reset_and_runs_callbacks() {
    let dir = tempfile::tempdir().unwrap();
    let env = rollway_envs::make("CartPole-v1", &Params::new()).unwrap();
    let w = DatasetWriter::create(
        dir.path(),
        env.spec(),
        "manual",
        0,
        serde_json::json!({}),
        WriterConfig { record_infos: true, ..Default::default() },
    )
    .unwrap();
    let mut c = Collector::new(env, w).with_step_callback(Box::new(|out, info| info.insert("r", out.reward))).with_episode_callback(
        Box::new(|ep| {
            let mut i = Info::new();
            i.insert("steps", ep.length);
            i
        }),
    );
    c.reset(Some(5)).unwrap();
    for _ in 0..3 {
        c.step_discrete(0).unwrap();
    }
    c.reset(Some(6)).unwrap(); // auto-truncates the 3-step episode
    c.reset(None).unwrap(); // an empty episode is not recorded
    let mut n = 0;
    while !c.step_discrete(1).unwrap().terminated {
        n += 1;
    }
    c.save().unwrap();
    assert!(Dataset::open(dir.path()).is_ok(), "readable while the collector is open");
    c.close().unwrap();
    let ds = Dataset::open(dir.path()).unwrap();
    let e0 = ds.read_episode(0).unwrap();
    assert_eq!((e0.entry.length, e0.entry.status, e0.entry.seed), (3, Status::Truncated, 5));
    assert_eq!(e0.truncations, [false, false, true]);
    assert_eq!(e0.entry.info.get_path("episode_metadata/steps").and_then(|v| v.as_u64()), Some(3));
    assert_eq!(e0.infos.unwrap()[1].get("r").and_then(|v| v.as_f64()), Some(1.0));
    let e1 = ds.read_episode(1).unwrap();
    assert_eq!(e1.entry.status, Status::Terminated);
    assert_eq!(e1.entry.length, n + 1);
    assert_ne!(e1.entry.seed, 6, "the unseeded reset drew a fresh seed, recorded");
}

#[test]
fn given_up_episodes_are_committed_without_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, mut eps) = episodes("CartPole-v1", "", 3, 30);
    eps[1] = EpisodeResult { status: Status::GivenUp, length: 0, ret: 0.0, trajectory: None, error: Some("boom".into()), ..eps[1].clone() };
    write_all(dir.path(), &spec, &eps, WriterConfig::default());
    let ds = Dataset::open(dir.path()).unwrap();
    let all: Vec<_> = ds.episodes().map(|e| (e.episode_id, e.status, e.rows)).collect();
    assert_eq!(all[1], (1, Status::GivenUp, 0));
    assert_eq!(ds.select(|_| true).count(), 2);
    assert!(rollway_store::verify(&ds).problems.is_empty());
}

#[test]
fn append_continues_ids_and_mismatch_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 4, 30);
    write_all(dir.path(), &spec, &eps, WriterConfig::default());
    write_all(dir.path(), &spec, &eps[..2], WriterConfig::default());
    let ds = Dataset::open(dir.path()).unwrap();
    let ids: Vec<u64> = ds.episodes().map(|e| e.episode_id).collect();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
    assert_eq!(ds.metadata().runs.len(), 2);
    assert_eq!(ds.metadata().runs[1].first_episode_id, 4);
    let other = rollway_envs::make("MountainCar-v0", &Params::new()).unwrap();
    match DatasetWriter::create(dir.path(), other.spec(), "random", 0, serde_json::json!({}), WriterConfig::default()) {
        Err(Error::Mismatch { message, .. }) => {
            assert!(message.contains("CartPole-v1"), "{message}")
        }
        other => panic!("expected a mismatch error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn resume_point_is_the_committed_prefix_of_the_last_run() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 5, 30);
    write_all(dir.path(), &spec, &eps[..3], WriterConfig::default());
    let (w, point) = DatasetWriter::resume(dir.path(), WriterConfig::default(), None).unwrap();
    assert_eq!((point.next_index, point.episodes), (3, 3));
    assert_eq!(point.steps, eps[..3].iter().map(|e| e.length).sum::<u64>());
    assert_eq!(point.run.config, serde_json::json!({"k": 1}));
    for e in &eps[3..] {
        w.write(e.clone()).unwrap();
    }
    w.finish().unwrap();
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.episodes().map(|e| e.run_index).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert_eq!(ds.metadata().runs.len(), 1, "resume continues the run, it does not add one");
}

#[test]
fn reader_sees_committed_episodes_while_writing_and_a_second_writer_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 4, 30);
    let w = DatasetWriter::create(dir.path(), &spec, "random", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    w.write(eps[0].clone()).unwrap();
    w.flush().unwrap();
    w.write(eps[1].clone()).unwrap(); // queued, not committed
    let mut ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.episodes().count(), 1);
    assert!(matches!(
        DatasetWriter::create(dir.path(), &spec, "x", 0, serde_json::json!({}), WriterConfig::default()),
        Err(Error::Locked { .. })
    ));
    w.flush().unwrap();
    ds.refresh().unwrap();
    assert_eq!(ds.episodes().count(), 2);
    assert_eq!(ds.read_episode(1).unwrap().rewards, eps[1].trajectory.as_ref().unwrap().rewards);
    w.finish().unwrap();
}

/// Every file under `root` (hidden ones included) with its bytes.
fn snapshot(root: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn issue10_readers_never_delete_and_writers_clean_only_their_own_debris() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (spec, eps) = episodes("CartPole-v1", "", 4, 30);
    write_all(d, &spec, &eps[..2], WriterConfig::default());
    // What a crash mid-commit leaves (a partial index, staged data of a shard that never
    // committed), a lost index's orphan, and files rollway does not write.
    std::fs::write(d.join(".tmp/shard-000001.json.partial"), b"half").unwrap();
    std::fs::copy(d.join("steps/shard-000000.parquet"), d.join(".tmp/publish/steps/shard-000001.parquet")).unwrap();
    std::fs::copy(d.join("steps/shard-000000.parquet"), d.join("steps/shard-000002.parquet")).unwrap();
    std::fs::write(d.join("steps/shard-7.txt"), b"a user's notes").unwrap();
    std::fs::copy(d.join("index/shard-000000.json"), d.join("index/shard-000000.bak.json")).unwrap();
    std::fs::create_dir(d.join(".tmp/mine")).unwrap();
    std::fs::write(d.join(".tmp/mine/keep"), b"x").unwrap();
    let before = snapshot(d);
    let ds = Dataset::open(d).unwrap();
    assert_eq!(ds.episodes().count(), 2, "the .bak.json copy is not read as a second shard 0");
    let report = rollway_store::verify(&ds);
    let all = format!("{:?}", report.problems);
    assert!(all.contains("shard-000002.parquet") && all.contains("shard-7.txt") && all.contains("shard-000000.bak.json"), "{all}");
    assert_eq!(report.problems.len(), 3, "{all}");
    assert!(format!("{:?}", report.notes).contains("publish/steps/shard-000001.parquet"), "{:?}", report.notes);
    drop(ds);
    assert!(snapshot(d) == before, "reading and verifying changed files");
    // A writer removes its own debris, quarantines the orphan, leaves the rest alone.
    let w = DatasetWriter::create(d, &spec, "random", 1, serde_json::json!({}), WriterConfig::default()).unwrap();
    w.write(eps[2].clone()).unwrap();
    w.finish().unwrap();
    assert!(!d.join(".tmp/shard-000001.json.partial").exists() && !d.join(".tmp/publish/steps/shard-000001.parquet").exists());
    assert!(!d.join("steps/shard-000002.parquet").exists(), "orphan moved aside");
    let quarantined = snapshot(&d.join(".quarantine"));
    assert_eq!(quarantined.len(), 1);
    assert_eq!(quarantined[0].1, std::fs::read(d.join("steps/shard-000000.parquet")).unwrap(), "nothing lost");
    assert!(d.join("steps/shard-7.txt").exists() && d.join("index/shard-000000.bak.json").exists() && d.join(".tmp/mine/keep").exists());
    let ds = Dataset::open(d).unwrap();
    assert_eq!(ds.shards().last().unwrap().shard, 3, "a new shard never takes an orphan's number");
    assert_eq!(ds.episodes().count(), 3);
}

#[test]
fn issue10_writers_refuse_a_symlinked_tmp_and_touch_nothing_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 2, 30);
    let d = dir.path().join("ds");
    write_all(&d, &spec, &eps[..1], WriterConfig::default());
    let elsewhere = dir.path().join("precious");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("shard-000001.json.partial"), b"not rollway's").unwrap();
    std::fs::remove_dir_all(d.join(".tmp")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.join(".tmp")).unwrap();
    assert_eq!(Dataset::open(&d).unwrap().episodes().count(), 1);
    let err = DatasetWriter::create(&d, &spec, "random", 1, serde_json::json!({}), WriterConfig::default()).err().expect("refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(elsewhere.join("shard-000001.json.partial").exists());
}

#[test]
fn issue10_a_shard_of_given_up_episodes_only_commits_as_index_only() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 2, 30);
    let w = DatasetWriter::create(
        dir.path(),
        &spec,
        "random",
        0,
        serde_json::json!({}),
        WriterConfig { max_buffer_episodes: Some(1), ..Default::default() },
    )
    .unwrap();
    let mut gone = EpisodeResult::from_trajectory(0, 0, Default::default());
    (gone.status, gone.error, gone.trajectory) = (Status::GivenUp, Some("env panicked".into()), None);
    w.write(gone).unwrap();
    let mut ok = eps[1].clone();
    ok.run_index = 1;
    w.write(ok).unwrap();
    w.finish().unwrap();
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.shards().len(), 2);
    assert_eq!((ds.shards()[0].rows, ds.shards()[0].files.len()), (0, 0));
    assert!(!dir.path().join("steps/shard-000000.parquet").exists());
    assert_eq!(ds.episodes().next().unwrap().status, Status::GivenUp);
    assert!(rollway_store::verify(&ds).problems.is_empty());
}

#[test]
fn vanished_output_dir_gives_a_clear_error_and_keeps_committed_data() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("CartPole-v1", "", 3, 30);
    let w = DatasetWriter::create(dir.path(), &spec, "random", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    w.write(eps[0].clone()).unwrap();
    w.flush().unwrap();
    // Like a full or revoked disk: the next commit cannot create its files.
    std::fs::remove_dir_all(dir.path().join(".tmp")).unwrap();
    w.write(eps[1].clone()).unwrap();
    let err = w.flush().unwrap_err().to_string();
    assert!(err.contains(".tmp"), "the error names the path: {err}");
    assert!(w.write(eps[2].clone()).is_err(), "the writer stays stopped");
    drop(w);
    let ds = Dataset::open(dir.path()).unwrap();
    assert_eq!(ds.episodes().count(), 1);
    assert!(rollway_store::verify(&ds).problems.is_empty());
}

#[test]
fn not_a_dataset_and_newer_formats_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(Dataset::open(dir.path()), Err(Error::NotADataset { .. })));
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let (spec, _) = episodes("CartPole-v1", "", 1, 5);
    assert!(
        matches!(
            DatasetWriter::create(dir.path(), &spec, "x", 0, serde_json::json!({}), WriterConfig::default()),
            Err(Error::NotADataset { .. })
        ),
        "never write into a foreign directory"
    );
    let d2 = tempfile::tempdir().unwrap();
    write_all(d2.path(), &spec, &[], WriterConfig::default());
    let meta = d2.path().join("rollway.json");
    let text = std::fs::read_to_string(&meta)
        .unwrap()
        .replace(&format!("\"format_version\": {}", rollway_store::FORMAT_VERSION), "\"format_version\": 99");
    std::fs::write(&meta, text).unwrap();
    assert!(matches!(Dataset::open(d2.path()), Err(Error::NotADataset { message, .. }) if message.contains("99")));
}

/// Damaged bytes anywhere give typed errors or verify problems — never a panic.
#[test]
fn mutated_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, eps) = episodes("PixelMine-v0", "size=16,max_steps=20", 3, 20);
    write_all(dir.path(), &spec, &eps, WriterConfig::default());
    let files = ["steps/shard-000000.parquet", "index/shard-000000.json", "rollway.json", "frames/observations.rgb/shard-000000.lz4"];
    let pristine: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(dir.path().join(f)).unwrap()).collect();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
    for round in 0..300 {
        let k = round % files.len();
        let mut bytes = pristine[k].clone();
        match rng.random_range(0..3) {
            0 => {
                let n = rng.random_range(0..bytes.len());
                bytes.truncate(n);
            }
            1 => {
                for _ in 0..rng.random_range(1..8) {
                    let i = rng.random_range(0..bytes.len());
                    bytes[i] = rng.random();
                }
            }
            _ => {
                bytes.drain(rng.random_range(0..bytes.len() / 2)..bytes.len() / 2);
            }
        }
        std::fs::write(dir.path().join(files[k]), &bytes).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            if let Ok(ds) = Dataset::open(dir.path()) {
                let _ = rollway_store::verify(&ds);
                for id in 0..3 {
                    let _ = ds.read_episode(id);
                }
            }
        });
        assert!(outcome.is_ok(), "panic on {} mutated in round {round}", files[k]);
        std::fs::write(dir.path().join(files[k]), &pristine[k]).unwrap();
    }
}

/// Issue 55: a frame stack (uint8 `(4, 84, 84)`, 28,224 bytes a row) is stored as one
/// `fixed_size_binary` cell a row (a list's per-element levels made Parquet's writer the
/// bottleneck of Atari recordings) and reads back bit for bit; small leaves stay lists.
#[test]
fn issue55_large_observation_leaves_are_binary_cells_and_read_back_bit_for_bit() {
    use arrow_schema::DataType;
    use rollway_core::{DType, EnvSpec, Space, Trajectory};

    let dir = tempfile::tempdir().unwrap();
    let spec = EnvSpec {
        id: "stacks".into(),
        observation_space: Space::Dict(vec![
            ("small".into(), Space::box_with(DType::F32, &[3], vec![-1.0; 3], vec![1.0; 3]).unwrap()),
            ("stack".into(), Space::box_with(DType::U8, &[4, 84, 84], vec![0.0; 28224], vec![255.0; 28224]).unwrap()),
        ]),
        action_space: Space::discrete(6, 0).unwrap(),
        max_episode_steps: None,
        render_fps: None,
        reward_threshold: None,
        gymnasium_spec: None,
        agents: None,
    };
    let ol = Layout::of(&spec.observation_space);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(55);
    let eps: Vec<EpisodeResult> = (0..3u64)
        .map(|i| {
            let len = 5 + i as usize;
            let mut t = Trajectory { obs: vec![0; (len + 1) * ol.row_bytes()], ..Default::default() };
            for row in t.obs.chunks_exact_mut(ol.row_bytes()) {
                ol.sample_row(&mut rng, row);
            }
            t.actions = (0..len as i64).flat_map(|a| (a % 6).to_ne_bytes()).collect();
            t.rewards = vec![1.0; len];
            t.terminations = (0..len).map(|k| k + 1 == len).collect();
            t.truncations = vec![false; len];
            EpisodeResult::from_trajectory(i, i, t)
        })
        .collect();
    write_all(dir.path(), &spec, &eps, WriterConfig::default());
    let ds = Dataset::open(dir.path()).unwrap();
    for e in &eps {
        let got = ds.read_episode(e.run_index).unwrap();
        let t = e.trajectory.as_ref().unwrap();
        for (li, leaf) in ol.leaves().iter().enumerate() {
            let want: Vec<u8> = t.obs.chunks_exact(ol.row_bytes()).flat_map(|r| r[leaf.range()].to_vec()).collect();
            assert_eq!(got.observations[li].1.data, want, "leaf {}", leaf.path);
        }
    }
    let shard = std::fs::File::open(dir.path().join("steps/shard-000000.parquet")).unwrap();
    let schema = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(shard).unwrap().schema().clone();
    assert_eq!(schema.field_with_name("observations/stack").unwrap().data_type(), &DataType::FixedSizeBinary(28224));
    assert!(matches!(schema.field_with_name("observations/small").unwrap().data_type(), DataType::FixedSizeList(_, 3)));
    assert!(rollway_store::verify(&ds).problems.is_empty());
}

/// Once an episode is committed, the writer hands its observation buffer back through
/// `recycler()` for the run's next episodes; the dataset holds the episode all the same.
#[test]
fn a_committed_episodes_observation_buffer_comes_back_through_the_recycler() {
    let (spec, mut eps) = common::episodes("CartPole-v1", "", 2, 30);
    let dir = tempfile::tempdir().unwrap();
    let w = DatasetWriter::create(dir.path(), &spec, "random", 0, serde_json::json!({}), WriterConfig::default()).unwrap();
    let pool = w.recycler();
    let mut at = Vec::new();
    for e in &mut eps {
        let t = e.trajectory.as_mut().unwrap();
        // Built in the writer's buffers, as a recording builds its episodes (large enough
        // to be kept: CartPole's own would be left to the allocator).
        let mut obs = pool.take(rollway_core::Recycler::MIN_BYTES);
        obs.extend_from_slice(&t.obs);
        t.obs = obs;
        at.push(t.obs.as_ptr() as usize);
    }
    let want = eps.clone();
    for e in eps {
        w.write(e).unwrap();
    }
    w.flush().unwrap();
    assert_eq!(pool.waiting(), 2, "both buffers, once their shard committed");
    let kept: Vec<Vec<u8>> = (0..2).map(|_| pool.take(1)).collect();
    let back: Vec<usize> = kept.iter().map(|b| b.as_ptr() as usize).collect();
    assert!(back.iter().all(|p| at.contains(p)) && back[0] != back[1], "{back:x?} vs {at:x?}");
    w.finish().unwrap();
    let ds = Dataset::open(dir.path()).unwrap();
    for e in &want {
        let got = ds.read_episode(e.run_index).unwrap();
        assert_eq!(got.observations[0].1.data, e.trajectory.as_ref().unwrap().obs, "episode {}", e.run_index);
    }
}
