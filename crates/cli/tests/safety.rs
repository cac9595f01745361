//! Issue 10: what readers, verify, repair and a crash may and may not do to a
//! dataset, driven through the real binary. Readers never change a file; verify
//! reports every kind of damage with exit 1 and changes nothing; `--repair` moves,
//! never deletes; every folder on the way to a committed file is fsynced first.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn rollway<I: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = I>) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollway")).args(args).output().expect("binary runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn record(dir: &Path, episodes: u32, per_shard: u32) {
    let o = rollway([
        "run",
        "--env",
        "CartPole-v1",
        "--agent",
        "random",
        "--seed",
        "3",
        "-q",
        "--episodes",
        &episodes.to_string(),
        "--max-buffer-episodes",
        &per_shard.to_string(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Every path under `root` (hidden included, links not followed) with its bytes.
fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            }
            out.push((e.path(), if t.is_file() { std::fs::read(e.path()).unwrap() } else { vec![] }));
        }
    }
    out.sort();
    out
}

#[test]
fn issue10_a_shard_of_given_up_episodes_commits_and_the_writers_error_is_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("x");
    // Every attempt panics; restarts to spare, so the episodes are given up, not left untried.
    let args = [
        "run",
        "--env",
        "Faulty-v0",
        "--env-opt",
        "panic_every=5",
        "--agent",
        "random",
        "--episodes",
        "4",
        "--max-buffer-episodes",
        "1",
        "--max-restarts",
        "50",
        "-q",
        "--out",
    ];
    let o = rollway(args.iter().map(|s| s.as_ref()).chain([d.as_os_str()]));
    assert_eq!(o.status.code(), Some(1), "given-up episodes fail the run: {}", text(&o));
    assert!(!text(&o).contains("writer thread ended"), "{}", text(&o));
    let s: serde_json::Value = serde_json::from_slice(&rollway(["inspect".as_ref(), d.as_os_str(), "--json".as_ref()]).stdout).unwrap();
    assert_eq!(s["given_up"].as_u64(), Some(4), "every episode is accounted for: {s}");
    assert_eq!(s["shards"].as_array().unwrap().len(), 4, "one index-only shard each: {s}");
    assert!(rollway(["verify".as_ref(), d.as_os_str()]).status.success());
    // Nothing is left to do, and resuming says so instead of failing at the same episode forever.
    let o = rollway(["run".as_ref(), "--resume".as_ref(), d.as_os_str(), "-q".as_ref()]);
    assert!(!text(&o).contains("writer"), "{}", text(&o));
}

#[test]
fn issue10_read_only_commands_never_delete_even_through_a_symlinked_tmp() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("ds");
    record(&d, 200, 50);
    let precious = tmp.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("shard-000009.json.partial"), b"mine").unwrap();
    std::fs::remove_dir_all(d.join(".tmp")).unwrap();
    std::os::unix::fs::symlink(&precious, d.join(".tmp")).unwrap();
    std::fs::write(d.join("steps/shard-7.txt"), b"a user's notes").unwrap();
    let (before, theirs) = (snapshot(&d), snapshot(&precious));
    for cmd in [&["inspect"][..], &["verify"], &["load", "--epochs", "1"], &["inspect", "--json"]] {
        let o = rollway(cmd.iter().map(|s| s.as_ref()).chain([d.as_os_str()]));
        assert!(o.status.code().is_some_and(|c| c <= 1), "{cmd:?}: {}", text(&o));
        assert!(snapshot(&d) == before && snapshot(&precious) == theirs, "{cmd:?} changed files");
    }
    let o = rollway(["verify".as_ref(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("shard-7.txt"), "{}", text(&o));
}

#[test]
fn issue10_verify_reports_a_lost_index_without_changing_a_file_and_repair_moves_it_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("ds");
    record(&d, 400, 100);
    let orphan = std::fs::read(d.join("steps/shard-000001.parquet")).unwrap();
    std::fs::remove_file(d.join("index/shard-000001.json")).unwrap();
    let before = snapshot(&d);
    let o = rollway(["verify".as_ref(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("steps/shard-000001.parquet") && out.contains("no index"), "{out}");
    assert!(out.contains("400 episodes") && out.contains("300"), "the totals disagree: {out}");
    assert!(snapshot(&d) == before, "verify changed files");
    let o = rollway(["verify".as_ref(), d.as_os_str(), "--repair".as_ref()]);
    assert_eq!(o.status.code(), Some(1), "the report is of the dataset as found: {}", text(&o));
    assert!(!d.join("steps/shard-000001.parquet").exists());
    let moved: Vec<_> = snapshot(&d.join(".quarantine")).into_iter().filter(|(p, _)| p.ends_with("steps/shard-000001.parquet")).collect();
    assert_eq!(moved.len(), 1);
    assert!(moved[0].1 == orphan, "quarantined, not deleted");
    // The orphan is gone from view; the missing 100 episodes are still reported.
    let out = text(&rollway(["verify".as_ref(), d.as_os_str()]));
    assert!(!out.contains("no index") && out.contains("400 episodes"), "{out}");
}

#[test]
fn issue10_a_truncated_index_is_named_by_verify_and_load_and_skipped_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("ds");
    record(&d, 300, 100);
    let p = d.join("index/shard-000001.json");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 3]).unwrap();
    let o = rollway(["verify".as_ref(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("shard-000001.json") && text(&o).contains("200 episodes checked"), "{}", text(&o));
    let o = rollway(["load".as_ref(), d.as_os_str()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("shard-000001.json") && text(&o).contains("--skip-damaged"), "{}", text(&o));
    let o = rollway(["load".as_ref(), d.as_os_str(), "--skip-damaged".as_ref(), "--json".as_ref()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("skipping damaged shard 1"));
    // Any folder in .tmp/ is not rollway's and breaks nothing.
    std::fs::create_dir(d.join(".tmp/somebodys")).unwrap();
    assert!(rollway(["inspect".as_ref(), d.as_os_str(), "--skip-damaged".as_ref()]).status.success());
}

#[test]
fn issue10_inspect_json_gives_spaces_as_stored_and_relabel_of_a_typo_creates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("ds");
    record(&d, 5, 5);
    let s: serde_json::Value = serde_json::from_slice(&rollway(["inspect".as_ref(), d.as_os_str(), "--json".as_ref()]).stdout).unwrap();
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("rollway.json")).unwrap()).unwrap();
    assert_eq!(s["observation_space"], meta["env"]["observation_space"], "CartPole's infinite bounds are kept, not null");
    assert!(s["observation_space"].as_str().unwrap().contains("Infinity"));
    let typo = tmp.path().join("dss");
    let o = rollway(["relabel".as_ref(), typo.as_os_str(), "--filter".as_ref(), "kind=length,min=1,label=x".as_ref()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!typo.exists(), "relabel made a dataset skeleton");
}

/// `strace -y` names each fsync'd descriptor's path: every directory the writer
/// creates must have its parent fsynced before the first index file is committed.
#[test]
fn issue10_every_directory_on_the_way_to_a_committed_file_is_fsynced_before_the_commit() {
    if Command::new("strace").arg("-V").output().is_err() {
        assert!(std::env::var_os("ROLLWAY_REQUIRE_PEERS").is_none(), "strace is missing");
        eprintln!("SKIPPED: no strace");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("new/deep/mine");
    let log = tmp.path().join("strace.log");
    let o = Command::new("strace")
        .args(["-f", "-y", "-qq", "-e", "trace=fsync,rename,renameat,renameat2,mkdir,mkdirat", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rollway"))
        .args(["run", "--env", "PixelMine-v0", "--env-opt", "size=16,max_steps=10", "--agent", "random", "--episodes", "4", "-q", "--out"])
        .arg(&d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let log = std::fs::read_to_string(&log).unwrap();
    let commit =
        log.lines().position(|l| l.contains("rename") && l.contains("index/shard-000000.json")).expect("the index commit is traced");
    let quoted = |l: &str| l.split('"').nth(1).map(str::to_string);
    let created: Vec<String> = log.lines().filter(|l| l.contains("mkdir") && l.ends_with("= 0")).filter_map(quoted).collect();
    assert!(created.iter().any(|c| c.ends_with("frames/observations.rgb")), "{created:?}");
    for dir in &created {
        let parent = Path::new(dir).parent().unwrap().to_string_lossy().into_owned();
        let synced = log.lines().take(commit).any(|l| l.contains("fsync(") && l.contains(&format!("<{parent}>")));
        assert!(synced, "{parent} (parent of the new {dir}) is not fsynced before the commit");
    }
}

type Fingerprint = (u64, u64, u64, f64, u64);

fn committed(dir: &Path) -> std::collections::BTreeMap<u64, Fingerprint> {
    let ds = rollway_store::Dataset::open(dir).expect("a failed run leaves a readable dataset");
    let r = rollway_store::verify(&ds);
    assert!(r.problems.is_empty(), "{}: damage after injected faults: {:?}", dir.display(), r.problems);
    let mut m = std::collections::BTreeMap::new();
    for e in ds.episodes() {
        assert!(
            m.insert(e.episode_id, (e.run_index, e.seed, e.length, e.ret, e.rows)).is_none(),
            "episode {} committed twice",
            e.episode_id
        );
    }
    m
}

/// The writer under random I/O failures (`ROLLWAY_FAULT_IO`: each create, write,
/// fsync, rename and mkdir of the commit protocol fails with probability 1/N): a run
/// fails cleanly (exit 1, no panic), what it committed is intact, resuming under more
/// faults is safe, and a last clean resume ends with exactly the clean run's episodes.
#[test]
fn issue10_random_io_faults_never_damage_committed_episodes() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    record(&reference, 3000, 100);
    let want = committed(&reference);
    let (mut failed_runs, mut partial) = (0, 0);
    for seed in 1..=6u64 {
        let d = tmp.path().join(format!("faulty-{seed}"));
        for attempt in 0..4 {
            let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
            c.env("ROLLWAY_FAULT_IO", format!("{}:60", seed * 10 + attempt));
            if d.join("rollway.json").exists() {
                c.args(["run", "-q", "--resume"]).arg(&d);
            } else {
                c.args([
                    "run",
                    "--env",
                    "CartPole-v1",
                    "--agent",
                    "random",
                    "--seed",
                    "3",
                    "-q",
                    "--episodes",
                    "3000",
                    "--max-buffer-episodes",
                    "100",
                    "--out",
                ])
                .arg(&d);
            }
            let o = c.output().unwrap();
            assert!(matches!(o.status.code(), Some(0..=2)), "seed {seed}: exit {:?}: {}", o.status.code(), text(&o));
            assert!(!text(&o).contains("panicked"), "{}", text(&o));
            failed_runs += usize::from(!o.status.success());
            if d.join("rollway.json").exists() {
                let got = committed(&d);
                partial += usize::from(!got.is_empty() && got.len() < want.len());
                for (id, f) in &got {
                    assert_eq!(Some(f), want.get(id), "seed {seed}: episode {id} differs from the clean run");
                }
            }
        }
        if !d.join("rollway.json").exists() {
            continue;
        }
        let o = rollway(["run".as_ref(), "-q".as_ref(), "--resume".as_ref(), d.as_os_str()]);
        assert!(o.status.success(), "{}", text(&o));
        assert_eq!(committed(&d), want, "seed {seed}: after a clean resume, exactly the clean run");
    }
    assert!(failed_runs >= 6 && partial >= 3, "faults landed: {failed_runs} failed runs, {partial} partial datasets");
}
