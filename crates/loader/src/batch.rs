//! Batches: every field one contiguous array, reused from batch to batch.

use rollway_core::{Array, DType, Layout};
use rollway_store::format::{column_name, is_frame_leaf};

use crate::table::Table;
use crate::{Result, Window};

/// One batch of windows; field arrays are `[B, L, ...]` (`[B]` for per-window fields).
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Position of the batch in its epoch.
    pub index: u64,
    /// Observations by column name (frames included), `[B, L, ...shape]`.
    pub observations: Vec<(String, Array)>,
    /// Actions by column name, `[B, L, ...shape]`.
    pub actions: Vec<(String, Array)>,
    /// `[B, L]` float64.
    pub rewards: Array,
    /// `[B, L]` bool.
    pub terminated: Array,
    /// `[B, L]` bool.
    pub truncated: Array,
    /// `[B, L]` bool: true at an episode's first step (VPT's `first`).
    pub first: Array,
    /// `[B, L]` bool: true for real steps, false for padding.
    pub mask: Array,
    /// `[B]` int64 dataset episode ids.
    pub episode_id: Array,
    /// `[B]` int64: step index of each window's first step in its episode.
    pub step: Array,
}

fn reshape(a: &mut Array, dtype: DType, shape: Vec<usize>) {
    let n: usize = shape.iter().product::<usize>() * dtype.size();
    a.dtype = dtype;
    a.shape = shape;
    // Same size as last time: no allocation after the first batch.
    a.data.resize(n, 0);
}

impl Batch {
    /// Windows in the batch.
    pub fn len(&self) -> usize {
        self.episode_id.shape.first().copied().unwrap_or(0)
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of data in all fields.
    pub fn bytes(&self) -> usize {
        let fields = [&self.rewards, &self.terminated, &self.truncated, &self.first, &self.mask, &self.episode_id, &self.step];
        self.observations.iter().chain(&self.actions).map(|(_, a)| a.data.len()).sum::<usize>() + fields.iter().map(|a| a.data.len()).sum::<usize>()
    }

    fn shape_for(&mut self, obs: &Layout, act: &Layout, b: usize, l: usize) {
        let leaf_shape = |leaf: &rollway_core::Leaf| [vec![b, l], leaf.shape.clone()].concat();
        self.observations.resize_with(obs.leaves().len(), Default::default);
        for (slot, leaf) in self.observations.iter_mut().zip(obs.leaves()) {
            slot.0 = column_name("observations", leaf);
            reshape(&mut slot.1, leaf.dtype, leaf_shape(leaf));
        }
        self.actions.resize_with(act.leaves().len(), Default::default);
        for (slot, leaf) in self.actions.iter_mut().zip(act.leaves()) {
            slot.0 = column_name("actions", leaf);
            reshape(&mut slot.1, leaf.dtype, leaf_shape(leaf));
        }
        reshape(&mut self.rewards, DType::F64, vec![b, l]);
        for a in [&mut self.terminated, &mut self.truncated, &mut self.first, &mut self.mask] {
            reshape(a, DType::Bool, vec![b, l]);
        }
        reshape(&mut self.episode_id, DType::I64, vec![b]);
        reshape(&mut self.step, DType::I64, vec![b]);
    }
}

/// Copies `n` rows of `bytes`-wide data starting at row `src` into slot `dst` (zeroing `l - n` pad rows).
#[inline]
fn copy_rows(col: &[u8], bytes: usize, src: usize, n: usize, l: usize, out: &mut [u8], window: usize) {
    let d = window * l * bytes;
    out[d..d + n * bytes].copy_from_slice(&col[src * bytes..(src + n) * bytes]);
    out[d + n * bytes..d + l * bytes].fill(0);
}

/// Fills `b` with the windows `ids` (indices into `windows`), each `l` steps.
pub(crate) fn fill(t: &Table, windows: &[Window], ids: &[u32], l: usize, index: u64, b: &mut Batch) -> Result<()> {
    b.index = index;
    b.shape_for(&t.obs, &t.act, ids.len(), l);
    for (wi, &id) in ids.iter().enumerate() {
        let w = windows[id as usize];
        let e = &t.episodes[w.episode as usize];
        let start = w.start as usize;
        let n = l.min(e.length - start);
        let src = e.row + start;
        for (li, leaf) in t.obs.leaves().iter().enumerate() {
            let out = &mut b.observations[li].1.data;
            if is_frame_leaf(leaf) {
                let fb = leaf.bytes();
                let shard = t.frames[e.shard][li].as_ref().expect("frame leaves have frame files");
                for k in 0..n {
                    let d = (wi * l + k) * fb;
                    shard.frame(e.frame_start + (start + k) as u64, &mut out[d..d + fb])?;
                }
                out[(wi * l + n) * fb..(wi + 1) * l * fb].fill(0);
            } else {
                copy_rows(&t.obs_cols[li], leaf.bytes(), src, n, l, out, wi);
            }
        }
        for (li, leaf) in t.act.leaves().iter().enumerate() {
            copy_rows(&t.act_cols[li], leaf.bytes(), src, n, l, &mut b.actions[li].1.data, wi);
        }
        copy_rows(bytemuck::cast_slice(&t.rewards), 8, src, n, l, &mut b.rewards.data, wi);
        copy_rows(&t.terminations, 1, src, n, l, &mut b.terminated.data, wi);
        copy_rows(&t.truncations, 1, src, n, l, &mut b.truncated.data, wi);
        let (first, mask) = (&mut b.first.data[wi * l..(wi + 1) * l], &mut b.mask.data[wi * l..(wi + 1) * l]);
        for k in 0..l {
            first[k] = (start + k == 0) as u8;
            mask[k] = (k < n) as u8;
        }
        b.episode_id.data[wi * 8..(wi + 1) * 8].copy_from_slice(&(e.id as i64).to_ne_bytes());
        b.step.data[wi * 8..(wi + 1) * 8].copy_from_slice(&(start as i64).to_ne_bytes());
    }
    Ok(())
}
