//! Named pauses in the store protocol, for the tests that force a race window open.
//!
//! With `ROLLWAY_PAUSE=NAME:DIR` in the environment, the first time a process
//! reaches point `NAME` it creates `DIR/NAME.paused` and waits until the test
//! creates `DIR/NAME.go` (at most [`LIMIT`], so a test that dies never leaves a
//! writer hanging for good). Unset — always, outside tests — a point costs one
//! lookup of a value read once per process.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The longest a point waits for its test.
const LIMIT: Duration = Duration::from_secs(600);

fn armed() -> Option<&'static (String, PathBuf)> {
    static AT: OnceLock<Option<(String, PathBuf)>> = OnceLock::new();
    AT.get_or_init(|| {
        let v = std::env::var("ROLLWAY_PAUSE").ok()?;
        let (name, dir) = v.split_once(':')?;
        Some((name.to_string(), PathBuf::from(dir)))
    })
    .as_ref()
}

/// Pauses at point `name` if the environment arms it (once per process).
pub(crate) fn pause(name: &str) {
    static DONE: AtomicBool = AtomicBool::new(false);
    let Some((at, dir)) = armed() else { return };
    if at != name || DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    if std::fs::write(dir.join(format!("{name}.paused")), std::process::id().to_string()).is_err() {
        return;
    }
    let (go, t) = (dir.join(format!("{name}.go")), Instant::now());
    while !go.exists() && t.elapsed() < LIMIT {
        std::thread::sleep(Duration::from_millis(10));
    }
}
