//! Who this process is, for the names it leaves on disk and on the store (a lease,
//! a work directory, a reader's pin), and whether such a name's process is gone.

use std::path::Path;

/// This host's name.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "host".into())
}

/// Whether process `pid` of this host is gone: what tells a dead writer's lease, work
/// directory or reader's pin from a live one's.
pub(crate) fn process_gone(pid: u64) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}
