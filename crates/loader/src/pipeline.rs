//! The prefetching pool: threads assemble batches into recycled buffers and the
//! consumer takes them in order. Buffers are the only memory that grows with the
//! prefetch depth: there are exactly `prefetch_batches + threads + 1` of them.
//!
//! When the batch it wants is not ready, the consumer assembles the next unclaimed
//! batch itself instead of sleeping. A batch takes tens of microseconds, and on a VM a
//! sleep/wake handoff per batch cost a third of the loader's time in the profile;
//! helping also puts the consumer's core to work whenever loading is the bottleneck.
//! Threads sleep only when there is nothing to claim, and are woken only if asleep.
//!
//! A consumer that keeps batches (Python holding numpy views of one) borrows them out
//! of the pool as [`LentBatch`]es; each goes back when dropped, from any thread. Up to
//! `prefetch_batches` lent batches come out of the pool's own buffers (a training loop
//! holds one or two: the batch in use and the one being fetched), which leaves the
//! threads and the consumer one buffer each; for each further one held, the pool makes
//! a fresh buffer so loading never waits on the consumer's memory, and drops the
//! extra again when they come back.
//!
//! The pool outlives epochs: threads go on into the next epoch (shuffling it once,
//! whoever gets there first) while the consumer finishes the current one, so an
//! epoch boundary costs neither a pause nor fresh threads and buffers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::batch::{fill, Batch};
use crate::config::{LoaderConfig, LoaderState, Window};
use crate::error::{Error, Result};
use crate::table::Table;

/// One epoch's windows in delivery order, and its batch count.
struct Epoch {
    epoch: u64,
    order: Vec<Window>,
    batches: u64,
}

struct Work {
    table: Arc<Table>,
    windows: Arc<Vec<Window>>,
    clip: usize,
    cfg: LoaderConfig,
}

impl Work {
    fn run(&self, e: &Epoch, i: u64, mut buf: Box<Batch>) -> Result<Box<Batch>> {
        let b = self.cfg.batch_size;
        let from = i as usize * b;
        let wins = &e.order[from..(from + b).min(e.order.len())];
        // A panic becomes this batch's error, so the consumer waiting for it is told.
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fill(&self.table, wins, self.clip, self.cfg.next_observations, i, &mut buf)
        }))
        .unwrap_or_else(|_| Err(Error::Thread(format!("assembling batch {i} panicked"))))
        .map(|()| buf)
    }

    fn epoch(&self, epoch: u64) -> Epoch {
        // The windows themselves, not their indices: a batch then reads them in order
        // instead of looking each one up at random in a table larger than L2.
        let order = self.cfg.order(&self.windows, epoch);
        let batches = self.cfg.batches(order.len());
        Epoch { epoch, order, batches }
    }
}

/// Claims a batch or says why not.
enum Claim {
    Batch(Arc<Epoch>, u64, Box<Batch>),
    /// The next epoch's order is needed first (and this caller is to make it).
    Shuffle(u64),
    /// Nothing to do until a buffer comes back or an epoch is ready.
    Wait,
}

struct State {
    /// Epochs whose batches are claimed or delivered; the front is the consumer's.
    epochs: VecDeque<Arc<Epoch>>,
    /// Next batch to claim: claims go in order, epoch after epoch.
    claim: LoaderState,
    /// Some thread is shuffling the next epoch.
    shuffling: bool,
    /// The consumer's epoch: claims run at most into the one after it.
    consumer_epoch: u64,
    // Boxed: buffers change hands between threads, and a pointer moves cheaper than a `Batch`.
    #[allow(clippy::vec_box)]
    free: Vec<Box<Batch>>,
    done: BTreeMap<(u64, u64), Result<Box<Batch>>>,
    stop: bool,
    consumer_asleep: bool,
    threads_asleep: usize,
    /// Batches lent out and not yet returned.
    lent: usize,
    /// How many may be lent before the pool replaces them with fresh buffers.
    lendable: usize,
}

impl State {
    fn claim(&mut self) -> Claim {
        if self.claim.epoch > self.consumer_epoch + 1 {
            return Claim::Wait;
        }
        let Some(e) = self.epochs.iter().find(|e| e.epoch == self.claim.epoch).cloned() else {
            if self.shuffling {
                return Claim::Wait;
            }
            self.shuffling = true;
            return Claim::Shuffle(self.claim.epoch);
        };
        if self.claim.batches >= e.batches {
            self.claim = LoaderState { epoch: e.epoch + 1, batches: 0 };
            return self.claim();
        }
        // Half way through an epoch, shuffle the next one: at the boundary its order is
        // then ready, instead of one filler shuffling while the other waits for it.
        let next = e.epoch + 1;
        if self.claim.batches >= e.batches / 2
            && !self.shuffling
            && next <= self.consumer_epoch + 1
            && !self.epochs.iter().any(|x| x.epoch == next)
        {
            self.shuffling = true;
            return Claim::Shuffle(next);
        }
        let Some(buf) = self.free.pop() else { return Claim::Wait };
        let i = self.claim.batches;
        self.claim.batches += 1;
        Claim::Batch(e, i, buf)
    }
}

struct Shared {
    work: Work,
    state: Mutex<State>,
    /// The consumer waits here for a finished batch.
    ready: Condvar,
    /// Threads wait here for a free buffer or the next epoch's order.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock (`fill` runs outside it).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims one piece of work and does it outside the lock; false when there was none.
    fn work_once<'a>(&'a self, mut st: MutexGuard<'a, State>) -> (MutexGuard<'a, State>, bool) {
        match st.claim() {
            Claim::Batch(e, i, buf) => {
                drop(st);
                let r = self.work.run(&e, i, buf);
                st = self.lock();
                st.done.insert((e.epoch, i), r);
                if st.consumer_asleep {
                    self.ready.notify_one();
                }
                (st, true)
            }
            Claim::Shuffle(epoch) => {
                drop(st);
                let e = self.work.epoch(epoch);
                st = self.lock();
                st.epochs.push_back(Arc::new(e));
                st.shuffling = false;
                self.room.notify_all();
                if st.consumer_asleep {
                    self.ready.notify_one();
                }
                (st, true)
            }
            Claim::Wait => (st, false),
        }
    }

    fn thread_loop(&self) {
        let mut st = self.lock();
        while !st.stop {
            let (s, worked) = self.work_once(st);
            st = s;
            if !worked && !st.stop {
                st.threads_asleep += 1;
                st = self.room.wait(st).unwrap_or_else(|e| e.into_inner());
                st.threads_asleep -= 1;
            }
        }
    }
}

pub(crate) struct Pipeline {
    shared: Arc<Shared>,
    /// The consumer's position: the next batch it takes.
    next: LoaderState,
    current: Option<Box<Batch>>,
}

impl Pipeline {
    pub fn start(table: Arc<Table>, windows: Arc<Vec<Window>>, clip: usize, cfg: LoaderConfig, from: LoaderState) -> Pipeline {
        let threads = cfg.threads.max(1);
        let buffers = cfg.prefetch_batches.max(1) + threads + 1;
        let state = State {
            epochs: VecDeque::new(),
            claim: from,
            shuffling: false,
            consumer_epoch: from.epoch,
            free: (0..buffers).map(|_| Box::default()).collect(),
            done: BTreeMap::new(),
            stop: false,
            consumer_asleep: false,
            threads_asleep: 0,
            lent: 0,
            lendable: cfg.prefetch_batches.max(1),
        };
        let shared = Arc::new(Shared {
            work: Work { table, windows, clip, cfg },
            state: Mutex::new(state),
            ready: Condvar::new(),
            room: Condvar::new(),
        });
        for t in 0..threads {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("rollway-loader-{t}"))
                .spawn(move || shared.thread_loop())
                .expect("spawning a loader thread");
        }
        Pipeline { shared, next: from, current: None }
    }

    /// Advances to the next batch in order; `None` at the end of the epoch (the
    /// following call goes on with the next epoch).
    pub fn next(&mut self) -> Result<Option<()>> {
        let sh = &*self.shared;
        let mut st = sh.lock();
        if let Some(b) = self.current.take() {
            st.free.push(b);
            if st.threads_asleep > 0 {
                sh.room.notify_one();
            }
        }
        let want = self.next;
        loop {
            if let Some(e) = st.epochs.iter().find(|e| e.epoch == want.epoch) {
                if want.batches >= e.batches {
                    st.epochs.retain(|e| e.epoch > want.epoch);
                    st.consumer_epoch = want.epoch + 1;
                    if st.threads_asleep > 0 {
                        sh.room.notify_all();
                    }
                    self.next = LoaderState { epoch: want.epoch + 1, batches: 0 };
                    return Ok(None);
                }
            }
            if let Some(r) = st.done.remove(&(want.epoch, want.batches)) {
                self.current = Some(r?);
                self.next.batches += 1;
                return Ok(Some(()));
            }
            // Not ready: do the next piece of work here rather than wait (claims go in
            // order, so this is the wanted batch itself unless a thread has it in hand).
            let (s, worked) = sh.work_once(st);
            st = s;
            if !worked {
                st.consumer_asleep = true;
                st = sh.ready.wait(st).unwrap_or_else(|e| e.into_inner());
                st.consumer_asleep = false;
            }
        }
    }

    pub fn current(&self) -> Option<&Batch> {
        self.current.as_deref()
    }

    /// Lends the current batch out of the pool (see the module docs).
    pub fn lend(&mut self) -> Option<LentBatch> {
        let b = self.current.take()?;
        let mut st = self.shared.lock();
        st.lent += 1;
        if st.lent > st.lendable {
            st.free.push(Box::default());
            if st.threads_asleep > 0 {
                self.shared.room.notify_one();
            }
        }
        Some(LentBatch { batch: Some(b), home: self.shared.clone() })
    }
}

/// A batch borrowed out of the loader's pool; it returns there when dropped, so the
/// memory of a batch the consumer still holds is never reused.
pub struct LentBatch {
    batch: Option<Box<Batch>>,
    home: Arc<Shared>,
}

impl std::ops::Deref for LentBatch {
    type Target = Batch;

    fn deref(&self) -> &Batch {
        self.batch.as_deref().expect("present until dropped")
    }
}

impl Drop for LentBatch {
    fn drop(&mut self) {
        let Some(b) = self.batch.take() else { return };
        let mut st = self.home.lock();
        st.lent -= 1;
        if st.lent < st.lendable {
            st.free.push(b);
        } else if let Some(cold) = st.free.iter_mut().find(|f| f.is_cold()) {
            // Keep the warm buffer (its memory is mapped in), drop the fresh one.
            *cold = b;
            return;
        } else {
            return;
        }
        if st.threads_asleep > 0 {
            self.home.room.notify_one();
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.room.notify_all();
    }
}
