//! Env blocks: a worker's envs stepped together, one call per round.
//!
//! A worker thread owns `envs_per_worker` env slots. Envs living in the worker's
//! own thread are stepped one by one, and a call per env costs nothing; envs
//! living in another process (a Python simulator) cost a round trip per call,
//! which would dwarf a cheap env if paid per env. So the worker hands its envs a
//! whole round at once: every slot to step and every slot to reset, with the
//! actions in the block's rows and the observations written back into them. A
//! host in another process then pays one round trip per round, however many envs
//! it holds.
//!
//! Failures stay per slot: the slot's attempt is spent and its env is rebuilt,
//! exactly as for an env in the worker's thread. One failure can take several
//! slots down together (the process hosting them died); it then counts as one
//! restart, on the first slot it reports ([`Failure::restarted`]).

use std::time::Duration;

use crate::{Info, Rows, StepOutcome};

/// What a round does to one slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Step with the slot's action row.
    Step,
    /// Start an episode: `reset(seed)`, building the env first if it has none.
    /// `None` is `reset()` without a seed: the env's own random stream goes on, as
    /// Gymnasium's vector envs do after an env's first reset. It is only sent to a
    /// slot whose env is live (a slot without one fails it: nothing would seed it).
    Reset(Option<u64>),
}

/// Why a block fails `Op::Reset(None)` on a slot without an env: whichever host runs it.
pub const NO_ENV_TO_CONTINUE: &str = "a reset without a seed reached a slot with no env (nothing would seed it)";

/// Why a slot's op failed.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// What happened, for the fault record.
    pub error: String,
    /// This failure rebuilt env state and counts as one restart. False for the
    /// other slots of a host that failed as a whole.
    pub restarted: bool,
}

/// The result of one slot's op; a reset's outcome is the default one.
pub type SlotResult = std::result::Result<StepOutcome, Failure>;

/// Which infos a round must make available through [`EnvBlock::info`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InfoNeed {
    /// None are read.
    #[default]
    None,
    /// Those of steps that end an episode (filters read them).
    Final,
    /// Every reset's and step's (`--record-infos`).
    All,
}

/// How a worker's blocks are to behave.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockOptions {
    /// Which infos are read.
    pub infos: InfoNeed,
    /// A round whose ops take longer fails them all (hosts in other processes
    /// only: an env in the worker's own thread cannot be interrupted).
    pub step_timeout: Option<Duration>,
    /// The run's own episode limit (`max_steps`), when it has one: the step that
    /// reaches it ends the episode though the env did not, so its info is a final
    /// info (Gymnasium's `TimeLimit` reads it the same way). A block that reads
    /// infos only at episode ends counts each slot's steps to know.
    pub cut: Option<u64>,
}

/// A block of env slots, stepped a round at a time.
pub trait EnvBlock: Send {
    /// Runs `ops` (each slot at most once): steps read `act.row(slot)`, steps and
    /// resets write `obs.row(slot)`. Leaves one result per op in `out`, in order.
    /// A slot whose op failed has no env until its next `Reset` builds one.
    fn run(&mut self, ops: &[(usize, Op)], act: &Rows, obs: &mut Rows, out: &mut Vec<SlotResult>);

    /// The info of the latest op on `slot`, as far as the block's [`InfoNeed`] keeps them.
    fn info(&mut self, slot: usize) -> Info;

    /// Whether the block's envs step elsewhere (an env process), so that a round can be
    /// started ([`EnvBlock::start`]) and finished ([`EnvBlock::finish`]) apart: the
    /// caller's thread starts several blocks' rounds and then reads each one's results,
    /// with no thread per block in between (two fewer wake-ups a round).
    fn steps_apart(&self) -> bool {
        false
    }

    /// Starts a round of `ops` without waiting for it (a block that [`EnvBlock::steps_apart`]).
    fn start(&mut self, ops: &[(usize, Op)], act: &Rows) {
        let _ = (ops, act);
    }

    /// Waits for the round [`EnvBlock::start`] started with the same `ops` and reads its
    /// results, as [`EnvBlock::run`] leaves them. `run` is `start` then `finish`.
    fn finish(&mut self, ops: &[(usize, Op)], obs: &mut Rows, out: &mut Vec<SlotResult>) {
        let _ = (ops, obs);
        out.clear();
    }
}
