//! Shared helpers for the integration tests that check our output with the real
//! Python peers (pyarrow, minari, PyAV, Pillow). CI sets `ROLLWAY_PYTHON` to a venv
//! that has them all and `ROLLWAY_REQUIRE_PEERS=1`, which turns a missing peer into a
//! failure; elsewhere such a check is skipped, loudly.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use rollway_store::{Dataset, IndexEntry};

/// The tuning flags a kill test's job pins. Left out, a run picks its own (async,
/// a worker a core, envs per worker measured at start), which moves when the
/// dataset is created and how long the job takes: the kills' slices, chosen as
/// fractions of a reference run, would then land before any life created it.
pub const PINNED_TUNING: &[&str] = &["--workers", "2", "--envs-per-worker", "8", "--mode", "sync"];

/// A Python that can import every module in `modules`, or `None` (test skipped).
pub fn peer_python(modules: &[&str]) -> Option<String> {
    let py = std::env::var("ROLLWAY_PYTHON").unwrap_or_else(|_| "python3".into());
    let imports = format!("import {}", modules.join(", "));
    let ok = Command::new(&py).args(["-c", &imports]).output().is_ok_and(|o| o.status.success());
    if ok {
        return Some(py);
    }
    assert!(std::env::var_os("ROLLWAY_REQUIRE_PEERS").is_none(), "ROLLWAY_REQUIRE_PEERS is set but `{py}` cannot `{imports}`");
    eprintln!("SKIPPED: `{py}` cannot `{imports}`; set ROLLWAY_PYTHON to a Python that has them (tests/python/requirements.txt)");
    None
}

/// Path of a script in `tests/python/`.
pub fn script(name: &str) -> String {
    format!("{}/../../tests/python/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `py script args…` and panics with its output when it fails.
pub fn run_script(py: &str, name: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let mut c = Command::new(py);
    c.arg(script(name));
    for a in args {
        c.arg(a);
    }
    let o = c.output().unwrap();
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(
        o.status.success(),
        "{name} {:?} failed:\n{out}",
        args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>()
    );
    out
}

/// Runs the `rollway` binary and panics with its stderr when it fails.
pub fn rollway(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollway"));
    for a in args {
        c.arg(a);
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "rollway {:?}: {}",
        args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// True when `p` exists.
pub fn exists(p: &Path) -> bool {
    p.exists()
}

/// Debian's Chromium (`scripts/deps.sh` installs it), or `None` (test skipped;
/// a failure when `ROLLWAY_REQUIRE_PEERS` is set).
pub fn chromium() -> Option<String> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()));
    if found.is_none() {
        assert!(std::env::var_os("ROLLWAY_REQUIRE_PEERS").is_none(), "ROLLWAY_REQUIRE_PEERS is set but no chromium is installed");
        eprintln!("SKIPPED: no chromium on PATH (scripts/deps.sh installs Debian's)");
    }
    found.map(String::from)
}

/// Loads `page` in headless `chrome` for a few (virtual) seconds; returns the DOM
/// as the page left it and what the browser logged (console messages included).
pub fn headless(chrome: &str, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    // The flags keep a sandboxed, offline Chromium from reaching for the network.
    let o = Command::new(chrome)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"])
        .args(["--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Committed episodes' fingerprints by episode id.
pub type Committed = BTreeMap<u64, (u64, u64, u64, f64, u64)>;

/// What must never change about a committed episode.
pub fn fingerprint(e: &IndexEntry) -> (u64, u64, u64, f64, u64) {
    (e.run_index, e.seed, e.length, e.ret, e.rows)
}

/// Every committed episode's fingerprint by episode id, after checking the dataset verifies
/// and no episode is committed twice.
pub fn committed(dir: &Path) -> Committed {
    let ds = Dataset::open(dir).expect("a killed run leaves a readable dataset");
    let report = rollway_store::verify(&ds);
    assert!(report.problems.is_empty(), "damage after a kill: {:?}", report.problems);
    let mut m = BTreeMap::new();
    for e in ds.episodes() {
        assert!(m.insert(e.episode_id, fingerprint(e)).is_none(), "episode {} committed twice", e.episode_id);
    }
    m
}

/// xorshift: the kill schedule is seeded, so a failure can be replayed.
pub fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// The dataset after a kill: every episode committed before (`seen`) is still there,
/// unchanged, and every committed episode is the one an uninterrupted run made (`want`).
/// Returns what is committed now.
pub fn after_kill(dir: &Path, seen: &Committed, want: &Committed) -> Committed {
    let now = committed(dir);
    for (id, fp) in seen {
        assert_eq!(now.get(id), Some(fp), "committed episode {id} changed or vanished after a kill");
    }
    for (id, fp) in &now {
        assert_eq!(want.get(id), Some(fp), "episode {id} differs from the uninterrupted run");
    }
    now
}

/// Waits until `path` exists, or `child` has exited, or 20 s have passed: a kill test
/// times its kill from the moment a process has something to lose (its dataset, its
/// writer's lock file), so a slow start on a busy machine does not turn every kill
/// into one before any write.
pub fn wait_for(path: &Path, child: &mut std::process::Child) {
    let t = std::time::Instant::now();
    while !path.exists() && child.try_wait().unwrap().is_none() && t.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Index files in `dir/index`: shards committed so far (0 before the dataset exists).
pub fn committed_shards(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join("index")).map_or(0, |rd| rd.filter(|e| e.is_ok()).count() as u64)
}

/// Kills `child` once `progress()` reaches `target` (polled every 2 ms), `extra_ms`
/// later: a kill placed by what the run has done, not by a clock, so it lands
/// mid-run on a machine of any speed. Whether the child had exited by itself first.
pub fn kill_at(child: &mut std::process::Child, target: u64, progress: impl Fn() -> u64, extra_ms: u64) -> bool {
    let mut finished = false;
    while !finished && progress() < target {
        std::thread::sleep(std::time::Duration::from_millis(2));
        finished = child.try_wait().unwrap().is_some();
    }
    std::thread::sleep(std::time::Duration::from_millis(extra_ms));
    finished |= child.try_wait().unwrap().is_some();
    let _ = child.kill();
    child.wait().unwrap();
    finished
}
