//! How a run's threads wait for each other's messages.
//!
//! A sync round is two hand-offs: the central stage sends actions to the workers,
//! then waits for their blocks to come back. A thread parked on a channel costs a
//! wake-up at each: 30–40 µs on the 2-vCPU VMs we measure on, more than stepping 256
//! CartPole envs takes. When each of the run's threads has a core of its own, waiting
//! by polling the channel removes that cost. Measured with 1 worker × 256 CartPole
//! envs, sync: the random agent went from 3.1M to 9–11M steps/s, and a trivial
//! Python policy from 98 to 30 µs a call.
//!
//! When the threads outnumber the cores, a poller takes a core that a busy thread
//! needs: 2 worker threads and the central one on 2 cores fell from 5.4M to 0.6M
//! steps/s. Then every thread parks, as before. That is why a sync run steps
//! worker 0 on the central thread (`pool.rs`): N workers are N threads, so on N
//! cores they poll (2 workers × 128 CartPole envs: ~24M steps/s, from 6.6M). A run
//! parks too when the envs step in processes of their own (a Python host): its
//! worker threads mostly wait, and the cores belong to those processes.
//!
//! A poll spins for [`SPIN_FOR`], then yields the core between looks, so that
//! another runnable thread there (a policy's own threads, the dataset writer) goes
//! first, and parks after [`POLL_FOR`]. A thread whose poll ran out, or that lost its
//! core during a poll (a yield that handed the core to another thread), stops polling
//! for a while (2, 4, … 1024 waits): the other side is slow, such as a big policy's
//! call, or the cores are busier than the run knows. That limits, but does not
//! remove, the cost when they are: two 1-worker sync CartPole runs started together
//! on the 2-vCPU VM took 1.3–2.4 s against 0.7–1.1 s without polling (3× with no
//! back-off). Async runs (the default) do not poll: a worker's two blocks already
//! overlap the hand-offs, and polling measured no faster there.

use std::cell::Cell;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvError, RecvTimeoutError, TryRecvError};

/// How long a poll spins before it starts yielding between looks.
const SPIN_FOR: Duration = Duration::from_micros(50);
/// How long a poll lasts before the thread parks.
const POLL_FOR: Duration = Duration::from_millis(1);

/// How one thread of a run waits: by polling first, or by parking at once. Each
/// thread has its own (they count their own misses).
#[derive(Clone, Debug)]
pub(crate) struct Wait {
    poll: bool,
    /// Polls that ran out in a row, up to [`MAX_MISSES`].
    misses: Cell<u32>,
    /// Waits left that park without polling: 2^misses after a poll ran out.
    skip: Cell<u32>,
}

/// A gap this long between two looks means the thread lost its core meanwhile: a
/// yield to an idle core returns in about a microsecond, and a thread that takes the
/// core runs for a time slice (milliseconds). It was 20 µs, and the VM's own pauses
/// of a few tens of µs then counted as lost cores: a torch policy's 2-worker sync
/// run backed off into parking, paying a wake-up per hand-off (15.1–16.7% of wall
/// time outside the policy, against 12.2–13.3% without the check). At 300 µs, in
/// alternating runs of a busier hour: 14.1–17.3% against 18.7–22.7% at 20 µs. The
/// CLI's sync runs, alone or two at once on two cores, measured the same either way.
const PREEMPTED: Duration = Duration::from_micros(300);

/// A thread whose polls keep running out parks for up to 2^10 waits before it polls again.
const MAX_MISSES: u32 = 10;

/// Whether a run's threads poll: a sync run whose envs step in its own threads
/// (`in_thread_sync`), when each of its `threads` has a core.
pub(crate) fn polls(threads: usize, in_thread_sync: bool) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    in_thread_sync && threads <= cores
}

impl Wait {
    /// Polling in sync runs whose envs step in the run's own threads
    /// (`in_thread_sync`), when each of its `threads` has a core.
    pub fn for_run(threads: usize, in_thread_sync: bool) -> Wait {
        Wait::new(polls(threads, in_thread_sync))
    }

    fn new(poll: bool) -> Wait {
        Wait { poll, misses: Cell::new(0), skip: Cell::new(0) }
    }

    /// `rx.recv_timeout(timeout)`, polling first when this run polls.
    pub fn recv_timeout<T>(&self, rx: &Receiver<T>, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let start = Instant::now();
        match self.poll(rx, timeout.min(POLL_FOR)) {
            Some(Ok(m)) => Ok(m),
            Some(Err(())) => Err(RecvTimeoutError::Disconnected),
            None => rx.recv_timeout(timeout.saturating_sub(start.elapsed())),
        }
    }

    /// `rx.recv()`, polling first when this run polls.
    pub fn recv<T>(&self, rx: &Receiver<T>) -> Result<T, RecvError> {
        match self.poll(rx, POLL_FOR) {
            Some(Ok(m)) => Ok(m),
            Some(Err(())) => Err(RecvError),
            None => rx.recv(),
        }
    }

    /// A message or a hang-up seen within `limit`; `None` when it passed first (or
    /// this run does not poll).
    fn poll<T>(&self, rx: &Receiver<T>, limit: Duration) -> Option<Result<T, ()>> {
        if !self.poll {
            return None;
        }
        if self.skip.get() > 0 {
            self.skip.set(self.skip.get() - 1);
            return None;
        }
        let start = Instant::now();
        let (mut looks, mut last) = (0u32, start);
        loop {
            match rx.try_recv() {
                Ok(m) => {
                    self.misses.set(0);
                    return Some(Ok(m));
                }
                Err(TryRecvError::Disconnected) => return Some(Err(())),
                Err(TryRecvError::Empty) => {}
            }
            looks += 1;
            // The clock is read every 64 looks: a look is a few ns, a clock read ~20.
            if !looks.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let now = Instant::now();
            // Out of time, or the core was taken from us between two looks (another
            // thread, another run, wanted it): stop polling for a while, longer each
            // time it happens again.
            if now - start >= limit || now - last >= PREEMPTED {
                let m = (self.misses.get() + 1).min(MAX_MISSES);
                self.misses.set(m);
                self.skip.set(1 << m);
                return None;
            }
            if now - start >= SPIN_FOR {
                std::thread::yield_now();
            }
            last = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::unbounded;

    fn cores() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    #[test]
    fn polls_only_when_every_thread_has_a_core_and_the_envs_are_in_thread() {
        let c = cores();
        assert!(Wait::for_run(c, true).poll, "as many threads as cores");
        assert!(!Wait::for_run(c + 1, true).poll, "one thread more than cores");
        assert!(!Wait::for_run(1, false).poll, "async, or envs in processes of their own");
    }

    #[test]
    fn a_polling_wait_gets_messages_timeouts_and_hang_ups_like_a_parked_one() {
        for wait in [Wait::new(true), Wait::new(false)] {
            let (tx, rx) = unbounded::<u32>();
            let t = std::thread::spawn(move || {
                // Far past the poll (1 ms), so that the receiver polls first even when a loaded
                // machine deschedules it for a while: the message arrives while parked.
                std::thread::sleep(Duration::from_millis(200));
                tx.send(7).unwrap();
            });
            assert_eq!(wait.recv(&rx), Ok(7));
            t.join().unwrap();
            if wait.poll {
                assert_eq!((wait.misses.get(), wait.skip.get()), (1, 2), "a poll that ran out backs off");
            }
            assert_eq!(wait.recv(&rx), Err(RecvError), "{wait:?}: every sender gone");
            let (tx, rx) = unbounded::<u32>();
            let start = Instant::now();
            assert_eq!(wait.recv_timeout(&rx, Duration::from_micros(300)), Err(RecvTimeoutError::Timeout));
            assert!(start.elapsed() < Duration::from_secs(1), "{wait:?}: the timeout is kept inside the poll");
            assert_eq!(wait.recv_timeout(&rx, Duration::from_millis(3)), Err(RecvTimeoutError::Timeout));
            tx.send(1).unwrap();
            wait.skip.set(0);
            assert_eq!(wait.recv_timeout(&rx, Duration::from_millis(3)), Ok(1));
            assert_eq!(wait.misses.get(), 0, "a message in time resets the count");
            drop(tx);
            assert_eq!(wait.recv_timeout(&rx, Duration::from_secs(5)), Err(RecvTimeoutError::Disconnected));
        }
    }
}
