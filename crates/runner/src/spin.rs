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
//! needs: the same run with 2 workers on 2 cores fell from 5.4M to 0.6M steps/s.
//! Then every thread parks, as before. It parks too when the envs step in
//! processes of their own (a Python host): its worker threads mostly wait, and the
//! cores belong to those processes.
//!
//! A poll spins for [`SPIN_FOR`], then yields the core between looks, so that
//! another runnable thread there (a policy's own threads, the dataset writer) goes
//! first, and parks after [`POLL_FOR`]. A longer wait, such as a big policy's call,
//! costs at most that much of an otherwise idle core.

use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvError, RecvTimeoutError, TryRecvError};

/// How long a poll spins before it starts yielding between looks.
const SPIN_FOR: Duration = Duration::from_micros(50);
/// How long a poll lasts before the thread parks.
const POLL_FOR: Duration = Duration::from_millis(1);

/// How the threads of one run wait: by polling first, or by parking at once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wait {
    poll: bool,
}

impl Wait {
    /// Polling when the `workers` threads and the central stage have a core each and
    /// the envs step in the worker threads (`steps_in_worker`).
    pub fn for_run(workers: usize, steps_in_worker: bool) -> Wait {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Wait { poll: steps_in_worker && workers < cores }
    }

    /// `rx.recv_timeout(timeout)`, polling first when this run polls.
    pub fn recv_timeout<T>(self, rx: &Receiver<T>, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let start = Instant::now();
        match self.poll(rx, timeout.min(POLL_FOR)) {
            Some(Ok(m)) => Ok(m),
            Some(Err(())) => Err(RecvTimeoutError::Disconnected),
            None => rx.recv_timeout(timeout.saturating_sub(start.elapsed())),
        }
    }

    /// `rx.recv()`, polling first when this run polls.
    pub fn recv<T>(self, rx: &Receiver<T>) -> Result<T, RecvError> {
        match self.poll(rx, POLL_FOR) {
            Some(Ok(m)) => Ok(m),
            Some(Err(())) => Err(RecvError),
            None => rx.recv(),
        }
    }

    /// A message or a hang-up seen within `limit`; `None` when it passed first (or
    /// this run does not poll).
    fn poll<T>(self, rx: &Receiver<T>, limit: Duration) -> Option<Result<T, ()>> {
        if !self.poll {
            return None;
        }
        let start = Instant::now();
        let mut looks = 0u32;
        loop {
            match rx.try_recv() {
                Ok(m) => return Some(Ok(m)),
                Err(TryRecvError::Disconnected) => return Some(Err(())),
                Err(TryRecvError::Empty) => {}
            }
            looks += 1;
            // The clock is read every 64 looks: a look is a few ns, a clock read ~20.
            if !looks.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let waited = start.elapsed();
            if waited >= limit {
                return None;
            }
            if waited >= SPIN_FOR {
                std::thread::yield_now();
            }
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
        assert_eq!(Wait::for_run(c.saturating_sub(1), true).poll, c > 1, "workers + central = cores");
        assert!(!Wait::for_run(c, true).poll, "one thread more than cores");
        assert!(!Wait::for_run(1, false).poll, "envs in processes of their own");
    }

    #[test]
    fn a_polling_wait_gets_messages_timeouts_and_hang_ups_like_a_parked_one() {
        for wait in [Wait { poll: true }, Wait { poll: false }] {
            let (tx, rx) = unbounded::<u32>();
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                tx.send(7).unwrap();
            });
            // Past the poll (1 ms): the message arrives while parked.
            assert_eq!(wait.recv(&rx), Ok(7));
            t.join().unwrap();
            assert_eq!(wait.recv(&rx), Err(RecvError), "{wait:?}: every sender gone");
            let (tx, rx) = unbounded::<u32>();
            let start = Instant::now();
            assert_eq!(wait.recv_timeout(&rx, Duration::from_micros(300)), Err(RecvTimeoutError::Timeout));
            assert!(start.elapsed() < Duration::from_secs(1), "{wait:?}: the timeout is kept inside the poll");
            assert_eq!(wait.recv_timeout(&rx, Duration::from_millis(3)), Err(RecvTimeoutError::Timeout));
            tx.send(1).unwrap();
            assert_eq!(wait.recv_timeout(&rx, Duration::from_millis(3)), Ok(1));
            drop(tx);
            assert_eq!(wait.recv_timeout(&rx, Duration::from_secs(5)), Err(RecvTimeoutError::Disconnected));
        }
    }
}
