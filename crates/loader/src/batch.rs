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
        let fields = [
            &self.rewards,
            &self.terminated,
            &self.truncated,
            &self.first,
            &self.mask,
            &self.episode_id,
            &self.step,
        ];
        self.observations
            .iter()
            .chain(&self.actions)
            .map(|(_, a)| a.data.len())
            .sum::<usize>()
            + fields.iter().map(|a| a.data.len()).sum::<usize>()
    }

    fn shape_for(&mut self, obs: &Layout, act: &Layout, b: usize, l: usize) {
        let leaf_shape = |leaf: &rollway_core::Leaf| [vec![b, l], leaf.shape.clone()].concat();
        self.observations
            .resize_with(obs.leaves().len(), Default::default);
        for (slot, leaf) in self.observations.iter_mut().zip(obs.leaves()) {
            slot.0 = column_name("observations", leaf);
            reshape(&mut slot.1, leaf.dtype, leaf_shape(leaf));
        }
        self.actions
            .resize_with(act.leaves().len(), Default::default);
        for (slot, leaf) in self.actions.iter_mut().zip(act.leaves()) {
            slot.0 = column_name("actions", leaf);
            reshape(&mut slot.1, leaf.dtype, leaf_shape(leaf));
        }
        reshape(&mut self.rewards, DType::F64, vec![b, l]);
        for a in [
            &mut self.terminated,
            &mut self.truncated,
            &mut self.first,
            &mut self.mask,
        ] {
            reshape(a, DType::Bool, vec![b, l]);
        }
        reshape(&mut self.episode_id, DType::I64, vec![b]);
        reshape(&mut self.step, DType::I64, vec![b]);
    }
}

/// Copies `n` rows of `bytes`-wide data starting at row `src` into slot `dst` (zeroing `l - n` pad rows).
#[inline(always)]
fn copy_rows(
    col: &[u8],
    bytes: usize,
    src: usize,
    n: usize,
    l: usize,
    out: &mut [u8],
    window: usize,
) {
    let d = window * l * bytes;
    out[d..d + n * bytes].copy_from_slice(&col[src * bytes..(src + n) * bytes]);
    if n < l {
        out[d + n * bytes..d + l * bytes].fill(0);
    }
}

/// Asks the CPU to start loading `bytes` bytes at `p`: windows are scattered over a
/// table far larger than L2, and without this every copy waits on its first miss
/// (the profile was two thirds stalls on loads inside `memcpy`).
#[inline(always)]
fn prefetch(col: &[u8], from: usize, bytes: usize) {
    let end = (from + bytes).min(col.len());
    let mut off = from;
    while off < end {
        prefetch_line(col[off..].as_ptr());
        off += 64;
    }
}

#[inline(always)]
fn prefetch_line<T>(p: *const T) {
    // SAFETY: a prefetch is only a hint and never faults; callers pass addresses of live data.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// How many windows ahead the source rows are prefetched.
const PREFETCH_AHEAD: usize = 8;

/// Fills `b` with the windows `ids` (indices into `windows`), each `l` steps.
pub(crate) fn fill(
    t: &Table,
    windows: &[Window],
    ids: &[u32],
    l: usize,
    index: u64,
    b: &mut Batch,
) -> Result<()> {
    b.index = index;
    b.shape_for(&t.obs, &t.act, ids.len(), l);
    // Numeric fields as (source column, row width, destination), resolved once per batch.
    let mut numeric: Vec<(&[u8], usize, &mut [u8])> =
        Vec::with_capacity(t.obs_cols.len() + t.act_cols.len() + 3);
    let mut frame_fields: Vec<(usize, usize, &mut [u8])> = Vec::new();
    for (li, (leaf, slot)) in t
        .obs
        .leaves()
        .iter()
        .zip(b.observations.iter_mut())
        .enumerate()
    {
        if is_frame_leaf(leaf) {
            frame_fields.push((li, leaf.bytes(), &mut slot.1.data[..]));
        } else {
            numeric.push((&t.obs_cols[li], leaf.bytes(), &mut slot.1.data[..]));
        }
    }
    for (li, (leaf, slot)) in t.act.leaves().iter().zip(b.actions.iter_mut()).enumerate() {
        numeric.push((&t.act_cols[li], leaf.bytes(), &mut slot.1.data[..]));
    }
    numeric.push((bytemuck::cast_slice(&t.rewards), 8, &mut b.rewards.data[..]));
    numeric.push((&t.terminations, 1, &mut b.terminated.data[..]));
    numeric.push((&t.truncations, 1, &mut b.truncated.data[..]));
    let span = |id: u32| {
        let w = windows[id as usize];
        let e = &t.episodes[w.episode as usize];
        let start = w.start as usize;
        (e, start, l.min(e.length - start))
    };
    for &id in ids.iter().take(PREFETCH_AHEAD) {
        let (e, start, n) = span(id);
        for (col, bytes, _) in &numeric {
            prefetch(col, (e.row + start) * bytes, n * bytes);
        }
    }
    for (wi, &id) in ids.iter().enumerate() {
        // Two stages, because finding a window's rows is itself two dependent lookups
        // (window, then episode) into tables larger than L1.
        if let Some(&far) = ids.get(wi + 3 * PREFETCH_AHEAD) {
            prefetch_line(&windows[far as usize]);
        }
        if let Some(&far) = ids.get(wi + 2 * PREFETCH_AHEAD) {
            prefetch_line(&t.episodes[windows[far as usize].episode as usize]);
        }
        if let Some(&ahead) = ids.get(wi + PREFETCH_AHEAD) {
            let (e, start, n) = span(ahead);
            for (col, bytes, _) in &numeric {
                prefetch(col, (e.row + start) * bytes, n * bytes);
            }
        }
        let (e, start, n) = span(id);
        let src = e.row + start;
        for (col, bytes, out) in numeric.iter_mut() {
            copy_rows(col, *bytes, src, n, l, out, wi);
        }
        let (first, mask) = (
            &mut b.first.data[wi * l..(wi + 1) * l],
            &mut b.mask.data[wi * l..(wi + 1) * l],
        );
        first.fill(0);
        if let Some(f) = first.first_mut() {
            *f = (start == 0) as u8;
        }
        mask[..n].fill(1);
        mask[n..].fill(0);
        b.episode_id.data[wi * 8..(wi + 1) * 8].copy_from_slice(&(e.id as i64).to_ne_bytes());
        b.step.data[wi * 8..(wi + 1) * 8].copy_from_slice(&(start as i64).to_ne_bytes());
    }
    if frame_fields.is_empty() {
        return Ok(());
    }
    // Frames are decoded in file order, whatever the shuffled order of the batch: a
    // video decoder then mostly continues forward instead of seeking back to a
    // keyframe for every window. Each window still lands in its own slot.
    let mut order: Vec<(usize, u64, usize)> = ids
        .iter()
        .enumerate()
        .map(|(wi, &id)| {
            let (e, start, _) = span(id);
            (e.shard, e.frame_start + start as u64, wi)
        })
        .collect();
    order.sort_unstable();
    for &(_, _, wi) in &order {
        let (e, start, n) = span(ids[wi]);
        for (li, fb, out) in frame_fields.iter_mut() {
            let shard = t.frames[e.shard][*li]
                .as_ref()
                .expect("frame leaves have frame files");
            // The window's frames are contiguous in the batch: one ranged read fills them.
            let d = wi * l * *fb;
            shard.frames(e.frame_start + start as u64, &mut out[d..d + n * *fb], *fb)?;
            out[(wi * l + n) * *fb..(wi + 1) * l * *fb].fill(0);
        }
    }
    Ok(())
}
