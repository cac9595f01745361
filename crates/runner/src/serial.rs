//! The default env block: envs from the run's factory, living in the worker's own
//! thread and stepped one by one. Each env is built on the first reset of its slot
//! and dropped when it fails, so the next reset of that slot builds a fresh one.
//! An error or a panic in `make`, `reset`, `step` or `info` is caught here and
//! becomes that slot's failure: a broken env never takes its worker down.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rollway_core::{Env, EnvBlock, EnvFactory, Failure, Info, Layout, Op, RowMut, RowRef, Rows, SlotResult, StepOutcome};

pub(crate) struct Serial {
    factory: Arc<dyn EnvFactory>,
    ol: Arc<Layout>,
    al: Arc<Layout>,
    envs: Vec<Option<Box<dyn Env>>>,
}

impl Serial {
    pub fn new(factory: Arc<dyn EnvFactory>, n: usize, ol: Arc<Layout>, al: Arc<Layout>) -> Serial {
        Serial { factory, ol, al, envs: (0..n).map(|_| None).collect() }
    }

    fn one(&mut self, slot: usize, op: Op, act: &Rows, obs: &mut Rows) -> Result<StepOutcome, String> {
        let (ol, al) = (&*self.ol, &*self.al);
        let env = &mut self.envs[slot];
        if env.is_none() && op == Op::Reset(None) {
            return Err(rollway_core::block::NO_ENV_TO_CONTINUE.into());
        }
        if env.is_none() {
            let factory = &self.factory;
            *env = Some(guarded(|| factory.make())?);
        }
        let env = env.as_mut().expect("just built");
        match op {
            Op::Step => guarded(|| env.step(RowRef::new(al, act.row(slot)), RowMut::new(ol, obs.row_mut(slot)))),
            Op::Reset(seed) => guarded(|| env.reset(seed, None, RowMut::new(ol, obs.row_mut(slot)))).map(|()| StepOutcome::default()),
        }
    }
}

impl EnvBlock for Serial {
    fn run(&mut self, ops: &[(usize, Op)], act: &Rows, obs: &mut Rows, out: &mut Vec<SlotResult>) {
        out.clear();
        for &(slot, op) in ops {
            let res = self.one(slot, op, act, obs).map_err(|error| {
                self.envs[slot] = None;
                Failure { error, restarted: true }
            });
            out.push(res);
        }
    }

    fn info(&mut self, slot: usize) -> Info {
        self.envs[slot].as_ref().map(|e| guarded(|| Ok(e.info())).unwrap_or_default()).unwrap_or_default()
    }
}

/// What a panic said, when it said it with a string.
pub(crate) fn panic_text(e: Box<dyn std::any::Any + Send>) -> String {
    e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned()).unwrap_or_else(|| "panic".into())
}

/// Runs `f`, turning both errors and panics into a message.
fn guarded<T>(f: impl FnOnce() -> rollway_core::Result<T>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(format!("panicked: {}", panic_text(p))),
    }
}
