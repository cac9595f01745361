//! Fault injection, for the tests that run the writer under random I/O failures.
//! With `ROLLWAY_FAULT_IO=SEED:N` in the environment, each of the writer's file
//! operations (create, write, fsync, rename, mkdir — the steps of the commit
//! protocol) fails with probability 1/N, drawn from a stream seeded by SEED, so a
//! failing case can be replayed. Unset (always, outside tests), it costs one relaxed
//! atomic load per file operation — a few per shard, nothing per step.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::{Error, Result};

struct Faults {
    state: AtomicU64,
    one_in: u64,
}

fn faults() -> Option<&'static Faults> {
    static F: OnceLock<Option<Faults>> = OnceLock::new();
    F.get_or_init(|| {
        let v = std::env::var("ROLLWAY_FAULT_IO").ok()?;
        let (seed, n) = v.split_once(':')?;
        Some(Faults { state: AtomicU64::new(seed.parse::<u64>().ok()? | 1), one_in: n.parse::<u64>().ok()?.max(1) })
    })
    .as_ref()
}

/// Fails `op` on `path` when the injected-fault stream says so.
pub(crate) fn check(op: &'static str, path: &Path) -> Result<()> {
    let Some(f) = faults() else { return Ok(()) };
    // xorshift64*: one step per file operation, shared by all threads of the process.
    let mut x = f.state.load(Ordering::Relaxed);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    f.state.store(x, Ordering::Relaxed);
    if x.wrapping_mul(0x2545_f491_4f6c_dd1d) % f.one_in == 0 {
        return Err(Error::Io { op, path: path.to_path_buf(), source: std::io::Error::other("injected fault (ROLLWAY_FAULT_IO)") });
    }
    Ok(())
}
