//! What a rollout calls to act: a [`Policy`] is an [`Agent`] that may also return
//! named per-step outputs ([`Extra`]: log-probs, values, logits), which a learner
//! needs beside the actions and which the fragment carries column by column.
//!
//! Weights change through [`Update`]s that the learner publishes and the collecting
//! thread applies between two batches, never during one: each batch is acted on by
//! exactly one policy version, and the fragment says which.

use rollway_core::{ActBatch, Agent};

/// One named per-step output of a policy for a batch of `n` envs: `n` rows of
/// `shape` float32 values, in batch order — the same column type an episode
/// records them in, so recording copies rows and converts nothing.
pub use rollway_core::StepColumn as Extra;

/// A batched policy inside a rollout.
pub trait Policy: Send {
    /// Fills every slot's action (and its recurrent memory, as an [`Agent`] does),
    /// and leaves this batch's extras in `extras`: the same names, in the same
    /// order and shapes, on every call.
    fn act(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<Extra>) -> rollway_core::Result<()>;

    /// The collecting thread finished a fragment and may now wait a while: let go
    /// of what ties the policy to that thread meanwhile (a Python policy keeps its
    /// interpreter thread state from one call to the next within a fragment).
    fn pause(&mut self) {}
}

/// A built-in (or any) agent as a rollout policy: actions, memory and the extras
/// it gives ([`Agent::act_with_extras`]: an `onnx:` network's values, say).
pub struct AgentPolicy(pub Box<dyn Agent>);

impl Policy for AgentPolicy {
    fn act(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<Extra>) -> rollway_core::Result<()> {
        self.0.act_with_extras(batch, extras)
    }
}

/// A new policy version, applied by the collecting thread between two batches
/// (e.g. loading a learner's weights into the acting copy of its network).
pub type Update = Box<dyn FnOnce(&mut dyn Policy) -> rollway_core::Result<()> + Send>;
