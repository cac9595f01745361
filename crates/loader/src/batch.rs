//! Batches: every field one contiguous array, reused from batch to batch.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use rollway_core::{Array, DType};
use rollway_store::format::{column_name, is_frame_leaf};

use crate::config::Window;
use crate::error::Result;
use crate::table::Table;

/// One batch of windows; field arrays are `[B, L, ...]` (`[B]` for per-window fields).
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Position of the batch in its epoch.
    pub index: u64,
    /// Observations by column name (frames included), `[B, L, ...shape]`.
    pub observations: Vec<(String, Array)>,
    /// With [`crate::LoaderConfig::next_observations`]: the observation after each
    /// step, by column name, `[B, L, ...shape]`: `observations` shifted by one, and at
    /// an episode's last step its final observation (what a TD target bootstraps
    /// from); zeros on padding. Empty otherwise.
    pub next_observations: Vec<(String, Array)>,
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
    /// `[B, S]` float32: the agent's recurrent state going into each window's first
    /// step (the state it left after the step before; zeros at an episode's start),
    /// when the dataset stores agent states; `S = 0` when it does not.
    pub state: Array,
    /// A training rollout's policy extras by name (`log_prob`), `[B, L, ...shape]`
    /// float32, zeros on padding; empty when the dataset records none.
    pub extras: Vec<(String, Array)>,
    /// `[B, L]` uint64: the policy version that chose each step's action (0 on
    /// padding), when the dataset records versions; shape `[0]` otherwise.
    pub policy_version: Array,
    /// Scratch reused from batch to batch: where each window's rows are.
    spans: Vec<Span>,
    /// Scratch reused from batch to batch: the windows' rows before they are split.
    scratch: Vec<u8>,
}

fn reshape(a: &mut Array, dtype: DType, outer: &[usize], inner: &[usize]) {
    // Same shape as last time (every batch but a short last one): nothing to allocate.
    if a.dtype != dtype
        || a.shape.len() != outer.len() + inner.len()
        || a.shape[..outer.len()] != *outer
        || a.shape[outer.len()..] != *inner
    {
        a.dtype = dtype;
        a.shape = [outer, inner].concat();
    }
    let n: usize = a.shape.iter().product::<usize>() * dtype.size();
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

    /// True for a buffer that has never held a batch (nothing allocated yet).
    pub(crate) fn is_cold(&self) -> bool {
        self.scratch.capacity() == 0 && self.rewards.data.capacity() == 0
    }

    /// Bytes of data in all fields.
    pub fn bytes(&self) -> usize {
        let fields = [
            &self.state,
            &self.rewards,
            &self.terminated,
            &self.truncated,
            &self.first,
            &self.mask,
            &self.episode_id,
            &self.step,
            &self.policy_version,
        ];
        let cols = self.observations.iter().chain(&self.next_observations).chain(&self.actions).chain(&self.extras);
        cols.map(|(_, a)| a.data.len()).sum::<usize>() + fields.iter().map(|a| a.data.len()).sum::<usize>()
    }

    fn shape_for(&mut self, t: &Table, b: usize, l: usize, next: bool) {
        let (obs, act) = (&t.obs, &t.act);
        let n = obs.leaves().len();
        self.observations.resize_with(n, Default::default);
        self.next_observations.resize_with(if next { n } else { 0 }, Default::default);
        let now = self.observations.iter_mut().zip(obs.leaves());
        for (slot, leaf) in now.chain(self.next_observations.iter_mut().zip(obs.leaves())) {
            if slot.0.is_empty() {
                slot.0 = column_name("observations", leaf);
            }
            reshape(&mut slot.1, leaf.dtype, &[b, l], &leaf.shape);
        }
        self.actions.resize_with(act.leaves().len(), Default::default);
        for (slot, leaf) in self.actions.iter_mut().zip(act.leaves()) {
            if slot.0.is_empty() {
                slot.0 = column_name("actions", leaf);
            }
            reshape(&mut slot.1, leaf.dtype, &[b, l], &leaf.shape);
        }
        reshape(&mut self.rewards, DType::F64, &[b, l], &[]);
        for a in [&mut self.terminated, &mut self.truncated, &mut self.first, &mut self.mask] {
            reshape(a, DType::Bool, &[b, l], &[]);
        }
        reshape(&mut self.episode_id, DType::I64, &[b], &[]);
        reshape(&mut self.step, DType::I64, &[b], &[]);
        reshape(&mut self.state, DType::F32, &[b], &[t.state_width]);
        self.extras.resize_with(t.extras.len(), Default::default);
        for (slot, x) in self.extras.iter_mut().zip(&t.extras) {
            if slot.0 != x.name {
                slot.0.clone_from(&x.name);
            }
            reshape(&mut slot.1, DType::F32, &[b, l], &x.shape);
        }
        let versions: &[usize] = if t.versions.is_empty() { &[0] } else { &[b, l] };
        reshape(&mut self.policy_version, DType::U64, versions, &[]);
    }
}

/// Asks the CPU to start loading `bytes` bytes at `p`: windows are scattered over a
/// table far larger than L2, and without this every copy waits on its first miss
/// (the profile was two thirds stalls on loads inside `memcpy`).
#[inline(always)]
fn prefetch(col: &[u8], from: usize, bytes: usize) {
    // Line by line from the line holding `from` (an unaligned start spills into one
    // more line); a prefetch never faults, so addresses need no bounds checks.
    let base = col.as_ptr().wrapping_add(from);
    let mut line = base.wrapping_sub(base as usize & 63);
    let end = base.wrapping_add(bytes);
    while line < end {
        prefetch_line(line);
        line = line.wrapping_add(64);
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

/// Windows whose rows are prefetched ahead of the copy, for a window of `bytes` bytes:
/// about 2 KiB in flight, which is what one core keeps outstanding without stalling
/// on the prefetches themselves.
fn lookahead(bytes: usize) -> usize {
    (2048 / (bytes + 64)).clamp(2, 32)
}

/// Where one window's rows are: first row in the table and real steps (`< l` only when padded).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    row: usize,
    steps: usize,
}

/// Fills `b` with the windows `wins`, each `l` steps, and with `next` their next
/// observations too.
pub(crate) fn fill(t: &Table, wins: &[Window], l: usize, next: bool, index: u64, b: &mut Batch) -> Result<()> {
    b.index = index;
    b.shape_for(t, wins.len(), l, next);
    let mut spans = std::mem::take(&mut b.spans);
    resolve(t, wins, l, b, &mut spans);
    let result = if next { fill_next(t, wins, l, &mut spans, b) } else { Ok(()) };
    if let Err(e) = result {
        b.spans = spans;
        return Err(e);
    }
    // Destinations of the table's row fields, in the table's field order.
    let (mut outs, mut frame_fields) = observation_outs(t, &mut b.observations);
    outs.extend(b.actions.iter_mut().map(|slot| &mut slot.1.data[..]));
    outs.extend([&mut b.rewards.data[..], &mut b.terminated.data[..], &mut b.truncated.data[..]]);
    gather(t, l, &spans, &mut outs, &mut b.scratch);
    let result = frames(t, wins, l, 0, &spans, &mut frame_fields);
    b.spans = spans;
    result
}

/// The next observations: the same windows one row later. An episode's rows are its
/// T + 1 observations, so the row after a window's last step is always there (at an
/// episode's end, its final observation). Costs what the observations cost again;
/// the row fields past the observations' are not split out.
fn fill_next(t: &Table, wins: &[Window], l: usize, spans: &mut [Span], b: &mut Batch) -> Result<()> {
    spans.iter_mut().for_each(|s| s.row += 1);
    let (mut outs, mut frame_fields) = observation_outs(t, &mut b.next_observations);
    // The observations' fields come first in a row: `gather` splits only as many fields as it is given.
    gather(t, l, spans, &mut outs, &mut b.scratch);
    let result = frames(t, wins, l, 1, spans, &mut frame_fields);
    spans.iter_mut().for_each(|s| s.row -= 1);
    result
}

/// A batch's observation columns as destinations: the numeric leaves' (split out of
/// the row table, in its field order) and the frame leaves' (leaf index, bytes per
/// frame, buffer; decoded from their files).
type FrameOut<'a> = (usize, usize, &'a mut [u8]);

fn observation_outs<'a>(t: &Table, cols: &'a mut [(String, Array)]) -> (Vec<&'a mut [u8]>, Vec<FrameOut<'a>>) {
    let (mut outs, mut frame_fields) = (Vec::with_capacity(t.fields.len()), Vec::new());
    for (li, (leaf, slot)) in t.obs.leaves().iter().zip(cols.iter_mut()).enumerate() {
        if is_frame_leaf(leaf) {
            frame_fields.push((li, leaf.bytes(), &mut slot.1.data[..]));
        } else {
            outs.push(&mut slot.1.data[..]);
        }
    }
    (outs, frame_fields)
}

/// Finds every window's rows and writes the per-window fields (`first`, `mask`,
/// `episode_id`, `step`). The episode lookup is prefetched far ahead: the episodes'
/// table does not stay in L2 beside the rows streaming through (8 windows ahead was
/// 10–15% slower overall than 24; 64 no better than 24).
fn resolve(t: &Table, wins: &[Window], l: usize, b: &mut Batch, spans: &mut Vec<Span>) {
    const AHEAD: usize = 32;
    spans.clear();
    b.first.data.fill(0);
    b.mask.data.fill(1);
    for (wi, &w) in wins.iter().enumerate() {
        if let Some(ahead) = wins.get(wi + AHEAD) {
            prefetch_line(&t.episodes[ahead.episode as usize]);
        }
        let e = &t.episodes[w.episode as usize];
        let start = w.start as usize;
        let steps = l.min(e.length - start);
        spans.push(Span { row: e.row + start, steps });
        b.first.data[wi * l] = (start == 0) as u8;
        if steps < l {
            b.mask.data[wi * l + steps..(wi + 1) * l].fill(0);
        }
        b.episode_id.data[wi * 8..(wi + 1) * 8].copy_from_slice(&(e.id as i64).to_ne_bytes());
        b.step.data[wi * 8..(wi + 1) * 8].copy_from_slice(&(start as i64).to_ne_bytes());
        training_fields(t, e.row + start, steps, wi * l, l, b);
        let sw = t.state_width;
        if sw > 0 {
            let dst = &mut b.state.data[wi * sw * 4..(wi + 1) * sw * 4];
            match start.checked_sub(1) {
                Some(prev) => dst.copy_from_slice(bytemuck::cast_slice(&t.states[(e.row + prev) * sw..(e.row + prev + 1) * sw])),
                None => dst.fill(0),
            }
        }
    }
}

/// Copies a window's extras and policy versions (`steps` rows from table row `row`)
/// to batch row `at`, zeroing its padding. Kept beside the row table, not in it: a
/// training rollout's extras are float32 values no narrowing helps, and datasets
/// without them pay nothing here.
fn training_fields(t: &Table, row: usize, steps: usize, at: usize, l: usize, b: &mut Batch) {
    for (x, (_, out)) in t.extras.iter().zip(b.extras.iter_mut()) {
        let w = x.width() * 4;
        let dst = &mut out.data[at * w..(at + l) * w];
        dst[..steps * w].copy_from_slice(bytemuck::cast_slice(&x.values[row * x.width()..(row + steps) * x.width()]));
        dst[steps * w..].fill(0);
    }
    if !t.versions.is_empty() {
        let dst = &mut b.policy_version.data[at * 8..(at + l) * 8];
        dst[..steps * 8].copy_from_slice(bytemuck::cast_slice(&t.versions[row..row + steps]));
        dst[steps * 8..].fill(0);
    }
}

/// Copies every window's rows out of the row table into each field's slot, padding
/// rows zeroed. A chunk of windows at a time: their rows (each window one contiguous
/// run, prefetched a few windows ahead) are copied whole into `scratch`, small enough
/// to stay in L1, then each field is split out of the whole chunk in one loop —
/// per-window, per-field calls cost as much as the copying.
fn gather(t: &Table, l: usize, spans: &[Span], outs: &mut [&mut [u8]], scratch: &mut Vec<u8>) {
    let stride = t.stride;
    let w = l * stride;
    let chunk = (16 * 1024 / w.max(1)).max(1);
    scratch.resize(chunk.min(spans.len()) * w, 0);
    let ahead = lookahead(w);
    for s in spans.iter().take(ahead) {
        prefetch(&t.rows, s.row * stride, s.steps * stride);
    }
    for (ci, group) in spans.chunks(chunk).enumerate() {
        let first = ci * chunk;
        for (k, (s, dst)) in group.iter().zip(scratch.chunks_exact_mut(w)).enumerate() {
            if let Some(a) = spans.get(first + k + ahead) {
                prefetch(&t.rows, a.row * stride, a.steps * stride);
            }
            let n = s.steps * stride;
            dst[..n].copy_from_slice(&t.rows[s.row * stride..s.row * stride + n]);
            if n < w {
                dst[n..].fill(0);
            }
        }
        let rows = group.len() * l;
        for (f, out) in t.fields.iter().zip(outs.iter_mut()) {
            let ow = f.out_width();
            f.split(&scratch[..rows * stride], stride, &mut out[first * l * ow..(first * l + rows) * ow]);
        }
    }
}

/// Decodes the frame fields, in file order whatever the shuffled order of the batch: a
/// video decoder then mostly continues forward instead of seeking back to a keyframe
/// for every window. Each window still lands in its own slot.
fn frames(t: &Table, wins: &[Window], l: usize, shift: u64, spans: &[Span], fields: &mut [(usize, usize, &mut [u8])]) -> Result<()> {
    if fields.is_empty() {
        return Ok(());
    }
    let mut order: Vec<(usize, u64, usize)> = wins
        .iter()
        .enumerate()
        .map(|(wi, w)| {
            let e = &t.episodes[w.episode as usize];
            (e.shard, e.frame_start + w.start as u64 + shift, wi)
        })
        .collect();
    order.sort_unstable();
    for (shard, frame, wi) in order {
        let n = spans[wi].steps;
        for (li, fb, out) in fields.iter_mut() {
            let file = t.frames[shard][*li].as_ref().expect("frame leaves have frame files");
            // The window's frames are contiguous in the batch: one ranged read fills them.
            let d = wi * l * *fb;
            file.frames(frame, &mut out[d..d + n * *fb], *fb)?;
            out[d + n * *fb..(wi + 1) * l * *fb].fill(0);
        }
    }
    Ok(())
}
