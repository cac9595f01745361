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
//! start, which holds memory the run just used. Only buffers that were taken from
//! the pool are kept when they come back (so a writer fed by anything else keeps
//! nothing: idle memory held made the writer's own fresh buffers 3× dearer on a
//! 2-core VM, `writer_ceiling`); the pool keeps at most
//! [`Recycler::KEPT`] buffers of [`Recycler::KEPT_BYTES`] in all, only large ones
//! ([`Recycler::MIN_BYTES`]), and is freed with its last handle.

use std::sync::{Arc, Mutex};

/// A shared pool of byte buffers; clones share it.
#[derive(Clone, Debug, Default)]
pub struct Recycler(Arc<Mutex<Pool>>);

#[derive(Debug, Default)]
struct Pool {
    kept: Vec<Vec<u8>>,
    /// Buffers taken and not yet given back: only those are kept when they come back.
    out: usize,
}

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

    fn pool(&self) -> std::sync::MutexGuard<'_, Pool> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An empty buffer: the one handed back last (its pages the most likely still
    /// warm), or a new one of `capacity` bytes when none waits.
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let mut pool = self.pool();
        pool.out += 1;
        pool.kept.pop().unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Hands `buf` back for a later [`take`](Recycler::take), emptied. A small buffer,
    /// one past the pool's limits, or one that comes back when every buffer taken is
    /// back already (a writer whose episodes were not built in taken buffers: nobody
    /// would take it again, and memory held idle makes fresh memory dearer) is freed
    /// instead.
    pub fn give(&self, mut buf: Vec<u8>) {
        let mut pool = self.pool();
        if pool.out == 0 {
            return;
        }
        pool.out -= 1;
        let bytes: usize = pool.kept.iter().map(Vec::capacity).sum();
        if buf.capacity() >= Self::MIN_BYTES && pool.kept.len() < Self::KEPT && bytes + buf.capacity() <= Self::KEPT_BYTES {
            buf.clear();
            pool.kept.push(buf);
        }
    }

    /// Buffers waiting now.
    pub fn waiting(&self) -> usize {
        self.pool().kept.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_taken_comes_back_empty_with_its_memory_and_a_small_one_does_not() {
        let pool = Recycler::new();
        let mut big = pool.take(Recycler::MIN_BYTES);
        big.extend_from_slice(&[7u8; 100]);
        let at = big.as_ptr();
        pool.give(big);
        let small = pool.take(10);
        pool.give(small);
        assert_eq!(pool.waiting(), 1, "the small buffer is left to the allocator");
        let again = pool.clone().take(16);
        assert!(again.is_empty() && again.capacity() >= Recycler::MIN_BYTES && again.as_ptr() == at, "the same memory, emptied");
        assert_eq!((pool.take(16).capacity(), pool.waiting()), (16, 0), "none waiting: a new buffer of the size asked");
    }

    #[test]
    fn a_buffer_that_was_never_taken_is_not_kept() {
        let pool = Recycler::new();
        pool.give(Vec::with_capacity(Recycler::MIN_BYTES));
        assert_eq!(pool.waiting(), 0, "nobody takes from this pool: holding the buffer would only hold memory");
        let taken = pool.take(Recycler::MIN_BYTES);
        pool.give(Vec::with_capacity(Recycler::MIN_BYTES));
        pool.give(taken);
        assert_eq!(pool.waiting(), 1, "as many kept as were taken");
    }

    #[test]
    fn the_pool_keeps_at_most_its_limits() {
        let pool = Recycler::new();
        let taken: Vec<Vec<u8>> = (0..Recycler::KEPT + 3).map(|_| pool.take(Recycler::MIN_BYTES)).collect();
        taken.into_iter().for_each(|b| pool.give(b));
        assert_eq!(pool.waiting(), Recycler::KEPT, "by count");
        let pool = Recycler::new();
        // Capacity is only reserved, not touched: no memory is used by these.
        let taken: Vec<Vec<u8>> = (0..3).map(|_| pool.take(Recycler::KEPT_BYTES / 2)).collect();
        taken.into_iter().for_each(|b| pool.give(b));
        assert_eq!(pool.waiting(), 2, "by bytes");
    }
}
