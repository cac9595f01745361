//! Large episode buffers handed back for reuse: a recording builds each episode's
//! observations in a `Vec` that the dataset writer frees once the episode is
//! committed, and the next episode would grow a fresh one.
//!
//! Why: a buffer past glibc's mmap ceiling (32 MiB; a pistonball episode's
//! observations are ~400 MB) is mapped anew each time, and the kernel faults in and
//! zeroes every page as the episode's rows are copied into it. `perf` of a pistonball
//! recording put that zeroing at a fifth of the recording process's time, on the
//! thread that steps the envs. A [`Recycler`] is the writer's way of handing the
//! buffers back, pages still mapped, to whoever builds the next episodes.
//!
//! Cost: a buffer waits here between its episode's commit and the next episode's
//! start, which holds memory the run just used; the pool keeps at most
//! [`Recycler::KEPT`] buffers of [`Recycler::KEPT_BYTES`] in all, only large ones
//! ([`Recycler::MIN_BYTES`]), and is freed with its last handle.

use std::sync::{Arc, Mutex};

/// A shared pool of byte buffers; clones share it.
#[derive(Clone, Debug, Default)]
pub struct Recycler(Arc<Mutex<Vec<Vec<u8>>>>);

impl Recycler {
    /// The most buffers kept waiting.
    pub const KEPT: usize = 64;
    /// The most bytes of capacity kept waiting, all buffers together.
    pub const KEPT_BYTES: usize = 4 << 30;
    /// Buffers smaller than this are left to the allocator, which reuses them anyway.
    pub const MIN_BYTES: usize = 1 << 20;

    /// A new, empty pool.
    pub fn new() -> Recycler {
        Recycler::default()
    }

    /// An empty buffer: the one handed back last (its pages the most likely still
    /// warm), or a new one of `capacity` bytes when none waits.
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop();
        kept.unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Hands `buf` back for a later [`take`](Recycler::take), emptied; a small buffer,
    /// or one past the pool's limits, is freed instead.
    pub fn give(&self, mut buf: Vec<u8>) {
        if buf.capacity() < Self::MIN_BYTES {
            return;
        }
        buf.clear();
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: usize = kept.iter().map(Vec::capacity).sum();
        if kept.len() < Self::KEPT && bytes + buf.capacity() <= Self::KEPT_BYTES {
            kept.push(buf);
        }
    }

    /// Buffers waiting now.
    pub fn waiting(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_comes_back_empty_with_its_memory_and_a_small_one_does_not() {
        let pool = Recycler::new();
        let mut big = Vec::with_capacity(Recycler::MIN_BYTES);
        big.extend_from_slice(&[7u8; 100]);
        let at = big.as_ptr();
        pool.give(big);
        pool.give(vec![1u8; 10]);
        assert_eq!(pool.waiting(), 1, "the small buffer is left to the allocator");
        let again = pool.clone().take(16);
        assert!(again.is_empty() && again.capacity() >= Recycler::MIN_BYTES && again.as_ptr() == at, "the same memory, emptied");
        assert_eq!((pool.take(16).capacity(), pool.waiting()), (16, 0), "none waiting: a new buffer of the size asked");
    }

    #[test]
    fn the_pool_keeps_at_most_its_limits() {
        let pool = Recycler::new();
        for _ in 0..Recycler::KEPT + 3 {
            pool.give(Vec::with_capacity(Recycler::MIN_BYTES));
        }
        assert_eq!(pool.waiting(), Recycler::KEPT, "by count");
        let pool = Recycler::new();
        // Capacity is only reserved, not touched: no memory is used by these.
        for _ in 0..3 {
            pool.give(Vec::with_capacity(Recycler::KEPT_BYTES / 2));
        }
        assert_eq!(pool.waiting(), 2, "by bytes");
    }
}
