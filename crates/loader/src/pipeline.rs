//! The prefetching pool: threads assemble batches into recycled buffers; the
//! consumer takes them back in order. Buffers are the only memory that grows with
//! the prefetch depth, and there are exactly `prefetch_batches + threads` of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::batch::{fill, Batch};
use crate::table::Table;
use crate::{Error, LoaderConfig, Result, Window};

pub(crate) struct Pipeline {
    results: Receiver<(u64, Result<Box<Batch>>)>,
    pool: Sender<Box<Batch>>,
    pending: BTreeMap<u64, Box<Batch>>,
    next: u64,
    end: u64,
    current: Option<Box<Batch>>,
}

impl Pipeline {
    pub fn start(table: Arc<Table>, windows: Arc<Vec<Window>>, clip: usize, jobs: Vec<Vec<u32>>, skip: usize, cfg: &LoaderConfig) -> Pipeline {
        let end = jobs.len() as u64;
        let (job_tx, job_rx) = unbounded::<(u64, Vec<u32>)>();
        for (i, ids) in jobs.into_iter().enumerate().skip(skip) {
            job_tx.send((i as u64, ids)).expect("receiver alive");
        }
        drop(job_tx);
        let buffers = cfg.prefetch_batches.max(1) + cfg.threads.max(1);
        let (pool_tx, pool_rx) = bounded::<Box<Batch>>(buffers);
        for _ in 0..buffers {
            pool_tx.send(Box::default()).expect("room for every buffer");
        }
        let (res_tx, res_rx) = bounded(buffers);
        for t in 0..cfg.threads.max(1) {
            let (job_rx, pool_rx, res_tx) = (job_rx.clone(), pool_rx.clone(), res_tx.clone());
            let (table, windows) = (table.clone(), windows.clone());
            std::thread::Builder::new()
                .name(format!("rollway-loader-{t}"))
                .spawn(move || {
                    // Buffer first, then job: the lowest outstanding batch is always held by a
                    // thread that can finish it, so the in-order consumer can never starve.
                    while let Ok(mut buf) = pool_rx.recv() {
                        let Ok((i, ids)) = job_rx.recv() else { break };
                        let r = fill(&table, &windows, &ids, clip, i, &mut buf).map(|()| buf);
                        if res_tx.send((i, r)).is_err() {
                            break;
                        }
                    }
                })
                .expect("spawning a loader thread");
        }
        Pipeline { results: res_rx, pool: pool_tx, pending: BTreeMap::new(), next: skip as u64, end, current: None }
    }

    /// Advances to the next batch in order; `None` at the end of the epoch.
    pub fn next(&mut self) -> Result<Option<()>> {
        if let Some(b) = self.current.take() {
            let _ = self.pool.send(b);
        }
        if self.next >= self.end {
            return Ok(None);
        }
        loop {
            if let Some(b) = self.pending.remove(&self.next) {
                self.current = Some(b);
                self.next += 1;
                return Ok(Some(()));
            }
            match self.results.recv() {
                Ok((i, Ok(b))) => {
                    self.pending.insert(i, b);
                }
                Ok((_, Err(e))) => return Err(e),
                Err(_) => return Err(Error::Thread("loader threads stopped early".into())),
            }
        }
    }

    pub fn current(&self) -> Option<&Batch> {
        self.current.as_deref()
    }
}
