//! Which episode runs next: fresh indices from an atomic counter, retries first.
//!
//! Any free env slot on any worker takes the next index; since an episode's seed,
//! actions and outcome depend only on its index, who runs it does not matter.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// An episode waiting to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    pub index: u64,
    pub attempt: u32,
}

pub(crate) struct Schedule {
    next: AtomicU64,
    limit: u64,
    stop: AtomicBool,
    retry: Mutex<VecDeque<Pending>>,
    retry_len: AtomicUsize,
}

impl Schedule {
    /// Hands out indices `start..limit`.
    pub fn new(start: u64, limit: u64) -> Schedule {
        Schedule {
            next: AtomicU64::new(start),
            limit,
            stop: AtomicBool::new(false),
            retry: Mutex::new(VecDeque::new()),
            retry_len: AtomicUsize::new(0),
        }
    }

    /// The next episode to run, retries before fresh ones; `None` when there is nothing left.
    pub fn take(&self) -> Option<Pending> {
        // The atomic length keeps the common path (no retries) free of the lock.
        if self.retry_len.load(Ordering::Acquire) > 0 {
            let mut q = self.retry.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(p) = q.pop_front() {
                self.retry_len.store(q.len(), Ordering::Release);
                return Some(p);
            }
        }
        if self.stop.load(Ordering::Acquire) {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::AcqRel);
        (index < self.limit).then_some(Pending { index, attempt: 1 })
    }

    /// Puts an interrupted episode back for another worker.
    pub fn requeue(&self, p: Pending) {
        let mut q = self.retry.lock().unwrap_or_else(|p| p.into_inner());
        q.push_back(p);
        self.retry_len.store(q.len(), Ordering::Release);
    }

    /// True when retries are waiting.
    pub fn has_retries(&self) -> bool {
        self.retry_len.load(Ordering::Acquire) > 0
    }

    /// Stops handing out fresh indices (the step target is covered).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// One past the last fresh index handed out (at most the limit).
    pub fn issued_end(&self) -> u64 {
        self.next.load(Ordering::Acquire).min(self.limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_come_first_and_limit_holds() {
        let s = Schedule::new(0, 2);
        assert_eq!(s.take(), Some(Pending { index: 0, attempt: 1 }));
        s.requeue(Pending { index: 0, attempt: 2 });
        assert_eq!(s.take(), Some(Pending { index: 0, attempt: 2 }));
        assert_eq!(s.take(), Some(Pending { index: 1, attempt: 1 }));
        assert_eq!(s.take(), None);
        assert_eq!(s.issued_end(), 2);
    }

    #[test]
    fn stop_halts_fresh_but_not_retries() {
        let s = Schedule::new(0, 10);
        s.stop();
        assert_eq!(s.take(), None);
        s.requeue(Pending { index: 3, attempt: 2 });
        assert_eq!(s.take(), Some(Pending { index: 3, attempt: 2 }));
    }
}
