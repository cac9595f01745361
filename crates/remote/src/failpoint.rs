//! Named pauses in the store protocol, for the tests that force a race window open.
//!
//! With `ROLLWAY_PAUSE=NAME:DIR` (or `NAME@K:DIR`) in the environment, the first
//! (the K-th) time a process reaches point `NAME` it creates `DIR/NAME.paused` and
//! waits until the test creates `DIR/NAME.go` (at most [`LIMIT`], so a test that
//! dies never leaves a writer hanging for good). Unset — always, outside tests — a
//! point costs one lookup of a value read once per process.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The longest a point waits for its test.
const LIMIT: Duration = Duration::from_secs(600);

struct Armed {
    name: String,
    at: u64,
    dir: PathBuf,
}

fn armed() -> Option<&'static Armed> {
    static AT: OnceLock<Option<Armed>> = OnceLock::new();
    AT.get_or_init(|| {
        let v = std::env::var("ROLLWAY_PAUSE").ok()?;
        let (point, dir) = v.split_once(':')?;
        let (name, at) = point.split_once('@').map_or(Some((point, 1)), |(n, k)| Some((n, k.parse().ok()?)))?;
        Some(Armed { name: name.to_string(), at, dir: PathBuf::from(dir) })
    })
    .as_ref()
}

/// Pauses at point `name` if the environment arms it (once per process).
pub(crate) fn pause(name: &str) {
    static REACHED: AtomicU64 = AtomicU64::new(0);
    let Some(a) = armed() else { return };
    if a.name != name || REACHED.fetch_add(1, Ordering::Relaxed) + 1 != a.at {
        return;
    }
    if std::fs::write(a.dir.join(format!("{name}.paused")), std::process::id().to_string()).is_err() {
        return;
    }
    let (go, t) = (a.dir.join(format!("{name}.go")), Instant::now());
    while !go.exists() && t.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(10));
    }
}
