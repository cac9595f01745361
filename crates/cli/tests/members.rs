//! Issue 13: many writers, one dataset. The members of a distributed run (what each Ray
//! actor runs: `rollway run --join DIR --part RUN:START:END:ID`) commit into the same
//! directory at once; killed with SIGKILL at seeded points of their progress, they leave nothing that
//! the next member or the driver's `close_run` cannot clean up, and the episodes their
//! ranges lacked, run again by other members, make the dataset equal to a local run's.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{after_kill, committed, kill_at, next, Committed};

// Small shards (2 episodes) and lz4 frames: many commits, several files each.
const JOB: &[&str] = &[
    "--env",
    "PixelMine-v0",
    "--env-opt",
    "size=32,max_steps=60",
    "--agent",
    "random",
    "--episodes",
    "90",
    "--seed",
    "3",
    "--max-buffer-episodes",
    "2",
    "--workers",
    "1",
    "--envs-per-worker",
    "4",
    "--mode",
    "sync",
    "-q",
];
const EPISODES: u64 = 90;

fn rollway() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rollway"))
}

fn prepare(dir: &Path) {
    let o = rollway().arg("run").arg("--prepare").arg("--out").arg(dir).args(JOB).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ds = rollway_store::Dataset::open(dir).unwrap();
    assert_eq!(ds.metadata().runs.len(), 1, "--prepare records the run");
    assert_eq!(ds.episodes().count(), 0, "--prepare runs nothing");
}

fn member(dir: &Path, (start, end): (u64, u64), id: &str) -> Child {
    rollway()
        .arg("run")
        .arg("--join")
        .arg(dir)
        .arg("--part")
        .arg(format!("0:{start}:{end}:{id}"))
        .arg("-q")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: Child) {
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "a member failed: {}", String::from_utf8_lossy(&o.stderr));
}

/// The run indices `0..EPISODES` not committed yet, as contiguous ranges.
fn missing(dir: &Path) -> Vec<(u64, u64)> {
    let have: Vec<u64> = committed(dir).keys().copied().collect();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for i in (0..EPISODES).filter(|i| have.binary_search(i).is_err()) {
        match out.last_mut() {
            Some(r) if r.1 == i => r.1 += 1,
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// Episodes of `range` committed so far, read as any reader would while members write.
fn committed_in(dir: &Path, range: std::ops::Range<u64>) -> u64 {
    let Ok(ds) = rollway_store::Dataset::open(dir) else { return 0 };
    ds.episodes().filter(|e| range.contains(&e.run_index)).count() as u64
}

fn reference(tmp: &Path) -> Committed {
    let dir = tmp.join("reference");
    let o = rollway().arg("run").arg("--out").arg(&dir).args(JOB).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = committed(&dir);
    assert_eq!(want.len() as u64, EPISODES);
    want
}

/// Nothing of the writers is left once the run is closed: no claims, no writer files,
/// no staged data.
fn assert_clean(dir: &Path) {
    for sub in [".tmp/claims", ".tmp/writers", ".tmp/publish/steps"] {
        let left: Vec<_> =
            std::fs::read_dir(dir.join(sub)).map(|r| r.filter_map(|e| e.ok()).map(|e| e.path()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "{sub} still holds {left:?}");
    }
}

#[test]
fn issue13_members_writing_at_once_record_what_a_local_run_records() {
    let tmp = tempfile::tempdir().unwrap();
    let want = reference(tmp.path());
    let dir = tmp.path().join("members");
    prepare(&dir);
    let ranges = [(0, 31), (31, 58), (58, 90)];
    let children: Vec<Child> = ranges.iter().enumerate().map(|(i, r)| member(&dir, *r, &format!("m{i}"))).collect();
    children.into_iter().for_each(finish);
    let stats = rollway_store::close_run(&dir, 0, None).unwrap();
    assert_eq!(stats.episodes, EPISODES);
    assert_eq!(committed(&dir), want, "members wrote what the local run wrote");
    let ds = rollway_store::Dataset::open(&dir).unwrap();
    // Each member's shards, numbered apart: 2 episodes each, none of one range in another's.
    for s in ds.shards() {
        let range = |e: &rollway_store::IndexEntry| ranges.iter().position(|(a, b)| (*a..*b).contains(&e.run_index));
        assert!(s.episodes.len() <= 2 && s.episodes.iter().all(|e| range(e) == range(&s.episodes[0])), "shard {}", s.shard);
    }
    assert_eq!(ds.metadata().counts.episodes, EPISODES, "close_run records the counts");
    assert_clean(&dir);
}

#[test]
fn issue13_killed_members_lose_nothing_and_other_members_finish_their_ranges() {
    let tmp = tempfile::tempdir().unwrap();
    let want = reference(tmp.path());
    let dir = tmp.path().join("killed");
    prepare(&dir);
    let mut rng = 0x2545_F491_4F6C_DD1D_u64;
    let (mut kills, mut left_behind, mut seen) = (0, 0, Committed::new());
    for life in 0..8 {
        // The longest range still missing (a killed member's episodes finish out of
        // order, so its range leaves short holes behind it as well as its tail).
        let Some((a, b)) = missing(&dir).into_iter().max_by_key(|(a, b)| b - a) else { break };
        // One member is killed while another, on the last third of the range, keeps
        // writing and finishes: what a joining member cleans up must not be live work.
        let mid = a + ((b - a) * 2).div_ceil(3);
        let mut victim = member(&dir, (a, mid), &format!("victim{life}"));
        let bystander = (mid < b).then(|| member(&dir, (mid, b), &format!("bystander{life}")));
        // The kill is placed by the victim's own progress, never by a clock: once it has
        // committed a seeded share (up to half) of its range, a few ms later. The rest of
        // its range is still to write then, on a machine of any speed.
        let target = 1 + next(&mut rng) % ((mid - a) / 2).max(1);
        let finished = kill_at(&mut victim, target, || committed_in(&dir, a..mid), next(&mut rng) % 5);
        if !finished {
            kills += 1;
            // A killed member cannot clean up after itself: its files wait for the next member.
            left_behind += usize::from(dir.join(format!(".tmp/writers/victim{life}.lock")).exists());
        }
        bystander.into_iter().for_each(finish);
        seen = after_kill(&dir, &seen, &want);
    }
    eprintln!("{kills} kills landed mid-run, {left_behind} left files behind");
    assert!(kills >= 2 && left_behind >= 1, "kills should land mid-run ({kills}, {left_behind} left files behind)");
    for (i, r) in missing(&dir).into_iter().enumerate() {
        finish(member(&dir, r, &format!("last{i}")));
    }
    rollway_store::close_run(&dir, 0, None).unwrap();
    assert_eq!(committed(&dir), want, "the killed members' dataset equals the local run's");
    assert_clean(&dir);
}

#[test]
fn issue13_member_flags_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    prepare(&dir);
    for (part, says) in [("0:5:2:x", "START <= END"), ("1:0:2:x", "no run 1"), ("0:0:2:a/b", "writer id"), ("0:0:2", "RUN:START:END:ID")] {
        let o = rollway().arg("run").arg("--join").arg(&dir).arg("--part").arg(part).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--part {part}: {err}");
        assert!(err.contains(says), "--part {part}: {err}");
    }
    assert!(missing(&dir).len() == 1, "nothing was written");
}
