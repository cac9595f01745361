//! The encoder pool: threads that encode frames off the thread that produces them,
//! episodes in parallel. Every encoder here runs single-threaded (see `video`), so
//! parallelism comes from encoding several episodes at once, one per thread; a
//! caller bounds the jobs in flight (the store by its writer's buffer, an export
//! by its read-ahead), so memory stays bounded too.

use std::thread::JoinHandle;

use crossbeam_channel::Sender;

/// A unit of work: typically one episode's frames of one key, sending its result back.
pub type Job = Box<dyn FnOnce() + Send>;

/// A fixed set of encoder threads fed from one queue.
pub struct Pool {
    tx: Option<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

impl Pool {
    /// Starts `threads` threads (0: one per available core), named `rollway-encode-N`.
    pub fn start(threads: usize) -> std::io::Result<Pool> {
        let n = if threads == 0 { std::thread::available_parallelism().map_or(2, |n| n.get()) } else { threads };
        let (tx, rx) = crossbeam_channel::unbounded::<Job>();
        let mut handles = Vec::new();
        for i in 0..n {
            let rx = rx.clone();
            let h = std::thread::Builder::new().name(format!("rollway-encode-{i}")).spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })?;
            handles.push(h);
        }
        Ok(Pool { tx: Some(tx), threads: handles })
    }

    /// The number of threads.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Queues `job`; it runs on the first free thread.
    pub fn run(&self, job: Job) {
        let _ = self.tx.as_ref().expect("open until dropped").send(job);
    }
}

impl Drop for Pool {
    /// Lets the queued jobs finish, then joins every thread.
    fn drop(&mut self) {
        drop(self.tx.take());
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}
