//! The `Agent` trait: acts on a batch of observations from many envs at once.
//!
//! Like VPT's `get_action(obs, memory)`, each env slot carries a recurrent
//! `memory` (empty at the first step of an episode) and a `first` flag. Each slot
//! also carries its own random stream, seeded from the episode's seed, so that an
//! episode's actions do not depend on which other envs happen to share its batch.

use crate::layout::{Layout, RowMut, RowRef};
use crate::{Result, StepColumn};

/// The random generator each env slot gives its agent (PCG, 128-bit state).
pub type AgentRng = rand_pcg::Pcg64Mcg;

/// Fills `out` with numbers in `[0, 1)` from an episode's stream: what an agent
/// that samples outside Rust (a Python policy, `rollway.policy.draws`) is given, so
/// that its episodes, too, do not depend on who shares their batch.
pub fn uniforms(rng: &mut AgentRng, out: &mut [f64]) {
    use rand::Rng;
    for x in out {
        *x = rng.random::<f64>();
    }
}

/// Recurrent agent state of one env slot; the agent decides its meaning.
/// The runner empties it when an episode starts.
pub type Memory = Vec<f32>;

/// One env's view inside a batch.
pub struct AgentRow<'a> {
    /// The observation to act on.
    pub obs: RowRef<'a>,
    /// Where to write the action.
    pub action: RowMut<'a>,
    /// True when `obs` is the first observation of an episode.
    pub first: bool,
    /// Recurrent state carried between this env's steps.
    pub memory: &'a mut Memory,
    /// This episode's random stream.
    pub rng: &'a mut AgentRng,
}

/// A contiguous run of env slots inside a batch (one worker's block, or part of it).
pub struct Segment<'a> {
    /// `n * obs_layout.row_bytes()` bytes of observations.
    pub obs: &'a [u8],
    /// `n * act_layout.row_bytes()` bytes of actions to fill.
    pub actions: &'a mut [u8],
    /// First-step flags.
    pub first: &'a [bool],
    /// Recurrent state per slot.
    pub memory: &'a mut [Memory],
    /// Random stream per slot.
    pub rng: &'a mut [AgentRng],
}

impl Segment<'_> {
    /// Number of env slots.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }
}

/// A batch of env slots to act on, possibly spanning several workers.
pub struct ActBatch<'a> {
    /// Layout of observation rows.
    pub obs_layout: &'a Layout,
    /// Layout of action rows.
    pub act_layout: &'a Layout,
    /// The slots, as contiguous segments.
    pub segments: Vec<Segment<'a>>,
}

impl<'a> ActBatch<'a> {
    /// Total env slots in the batch.
    pub fn len(&self) -> usize {
        self.segments.iter().map(Segment::len).sum()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` once per env slot, in batch order.
    #[inline]
    pub fn for_each_row(&mut self, mut f: impl FnMut(AgentRow<'_>) -> Result<()>) -> Result<()> {
        let (ol, al) = (self.obs_layout, self.act_layout);
        let (ob, ab) = (ol.row_bytes(), al.row_bytes());
        for seg in &mut self.segments {
            let rows = seg.obs.chunks_exact(ob).zip(seg.actions.chunks_exact_mut(ab));
            let state = seg.first.iter().zip(seg.memory.iter_mut()).zip(seg.rng.iter_mut());
            for ((o, a), ((&first, memory), rng)) in rows.zip(state) {
                f(AgentRow { obs: RowRef::new(ol, o), action: RowMut::new(al, a), first, memory, rng })?;
            }
        }
        Ok(())
    }
}

/// A policy acting on batches of observations.
pub trait Agent: Send {
    /// Fills the action of every slot in `batch`.
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()>;

    /// Acts as [`Agent::act`] does, and leaves the batch's named per-step outputs
    /// (a network's values or log-probs: `batch.len()` rows each, in batch order) in
    /// `extras`, with the same names and shapes on every call. Runs that record or
    /// train call this one; an agent with no such outputs need not implement it.
    fn act_with_extras(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<StepColumn>) -> Result<()> {
        extras.clear();
        self.act(batch)
    }

    /// What runs this agent, when that is worth a line of the run's summary: an
    /// `onnx:` model's engine, device and threads, and the time its calls took.
    fn about(&self) -> Option<String> {
        None
    }
}
