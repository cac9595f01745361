//! The `onnx:` agent: one model call per batch.
//!
//! Per call: gather the batch's rows into one tensor per model input (observation
//! leaves cast to the input's type; same-type leaves are a `memcpy` per row), run
//! the model, and scatter its outputs: actions into the action rows, each slot's
//! recurrent state into its memory, extras into columns. Discrete actions from
//! logits are the argmax (the first of equal maxima, as `torch.argmax`), or with
//! `sample=true` a draw from the softmax with the episode's own stream
//! ([`rollway_core::AgentRng`]), so an episode's actions do not depend on which
//! envs shared its batches.
//!
//! **Determinism.** Same seed, same actions, whatever the batch sizes, workers or
//! engine, as long as the model's logits compare the same way: rows are computed
//! independently, but an engine may pick another kernel for another batch size,
//! so logits, extras and states can differ in their last bits between batch sizes
//! or engines (argmax flips only at near-ties). `tests/python/test_onnx.py` checks
//! equal datasets across batch sizes and engines for the README's networks.

use std::time::{Duration, Instant};

use rand::Rng;
use rollway_core::{ActBatch, Agent, AgentRng, DType, Error, Layout, LeafKind, Result, StepColumn};

use crate::backend::{Backend, Data, Tensor};
use crate::binding::{Feed, Plan, Read};

/// A loaded model bound to one env's spaces.
pub struct OnnxAgent {
    pub(crate) name: String,
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) plan: Plan,
    pub(crate) ol: Layout,
    pub(crate) al: Layout,
    pub(crate) sample: bool,
    /// The last call's extras, reused.
    pub(crate) extras: Vec<StepColumn>,
    /// Model calls made, the time spent in them, and in the whole of the agent's
    /// calls (gathering and scattering rows too), for the summary.
    pub(crate) calls: u64,
    pub(crate) model_time: Duration,
    pub(crate) agent_time: Duration,
}

impl OnnxAgent {
    fn fail(&self, message: String) -> Error {
        Error::Agent { agent: self.name.clone(), message }
    }

    /// One tensor per model input for the batch's `n` rows. The rows are read
    /// segment by segment (not through `for_each_row`): at 256 CartPole rows per
    /// call a per-row closure was a quarter of the agent's own time.
    fn gather(&self, batch: &ActBatch<'_>) -> Result<Vec<Tensor>> {
        let n = batch.len();
        let ob = self.ol.row_bytes();
        let mut out = Vec::with_capacity(self.plan.feeds.len());
        for (feed, port) in self.plan.feeds.iter().zip(self.backend.inputs()) {
            let (row_shape, len): (Vec<usize>, usize) = match feed {
                Feed::Obs(l) => (self.ol.leaves()[*l].shape.clone(), self.ol.leaves()[*l].len()),
                Feed::First => (vec![], 1),
                Feed::State(k) => {
                    let w = self.plan.states[*k].width;
                    (port.dims[1..].iter().map(|d| d.unwrap_or(w)).collect(), w)
                }
            };
            let mut data = Data::zeros(&port.elem, n * len).ok_or_else(|| self.fail(format!("input {} cannot be fed", port.describe())))?;
            let mut r = 0;
            for seg in &batch.segments {
                match feed {
                    Feed::Obs(l) => {
                        let leaf = &self.ol.leaves()[*l];
                        let whole = leaf.offset == 0 && ob == leaf.bytes();
                        match (leaf.dtype, &mut data) {
                            // A row that is one float32 leaf is the tensor's row: the segment is one copy.
                            (DType::F32, Data::F32(v)) if whole => {
                                v[r * len..(r + seg.len()) * len].copy_from_slice(bytemuck::cast_slice(seg.obs))
                            }
                            (_, data) => {
                                seg.obs.chunks_exact(ob).enumerate().for_each(|(i, row)| copy_leaf(leaf, row, data, (r + i) * len))
                            }
                        }
                    }
                    Feed::First => seg.first.iter().enumerate().for_each(|(i, &f)| data.set(r + i, f64::from(u8::from(f)))),
                    Feed::State(k) => {
                        let s = &self.plan.states[*k];
                        for (i, m) in seg.memory.iter().enumerate().filter(|(_, m)| m.len() == self.plan.state_width) {
                            let m = &m[s.offset..s.offset + s.width];
                            m.iter().enumerate().for_each(|(j, &x)| data.set((r + i) * len + j, f64::from(x)));
                        }
                    }
                }
                r += seg.len();
            }
            // A scalar per row goes in as the model declared it: [n] or [n,1].
            let shape = if port.dims.len() == 1 + row_shape.len() { row_shape } else { vec![1] };
            out.push(Tensor { shape: [vec![n], shape].concat(), data });
        }
        Ok(out)
    }

    /// Writes the model's outputs into the batch: actions, memories and extras.
    fn scatter(&mut self, batch: &mut ActBatch<'_>, outs: &[Tensor]) -> Result<()> {
        let n = batch.len();
        for (l, &(o, read)) in self.plan.actions.iter().enumerate() {
            let leaf = &self.al.leaves()[l];
            let per_row = match (read, &leaf.kind) {
                (Read::Logits, LeafKind::Discrete { n, .. }) => *n as usize,
                (Read::Logits, LeafKind::MultiDiscrete { nvec, .. }) => nvec.iter().sum::<i64>() as usize,
                _ => leaf.len().max(1),
            };
            self.expect(&outs[o], o, n * per_row)?;
        }
        for s in &self.plan.states {
            self.expect(&outs[s.output], s.output, n * s.width)?;
        }
        for (o, shape) in &self.plan.extras {
            self.expect(&outs[*o], *o, n * shape.iter().product::<usize>())?;
        }
        let ab = self.al.row_bytes();
        let mut r = 0;
        for seg in &mut batch.segments {
            for (l, &(o, read)) in self.plan.actions.iter().enumerate() {
                let leaf = &self.al.leaves()[l];
                for (i, row) in seg.actions.chunks_exact_mut(ab).enumerate() {
                    let rng = self.sample.then_some(&mut seg.rng[i]);
                    let bytes = &mut row[leaf.offset..];
                    write_action(leaf, read, &outs[o].data, r + i, rng, bytes).map_err(|message| Error::Action {
                        agent: self.name.clone(),
                        row: r + i,
                        message,
                    })?;
                }
            }
            if self.plan.state_width > 0 {
                for (i, m) in seg.memory.iter_mut().enumerate() {
                    m.resize(self.plan.state_width, 0.0);
                    for s in &self.plan.states {
                        let d = &outs[s.output].data;
                        let m = &mut m[s.offset..s.offset + s.width];
                        m.iter_mut().enumerate().for_each(|(j, x)| *x = d.get((r + i) * s.width + j) as f32);
                    }
                }
            }
            r += seg.len();
        }
        self.extras.resize_with(self.plan.extras.len(), StepColumn::default);
        for ((o, shape), col) in self.plan.extras.iter().zip(&mut self.extras) {
            col.name.clone_from(&self.backend.outputs()[*o].name);
            col.shape.clone_from(shape);
            col.values.clear();
            let d = &outs[*o].data;
            col.values.extend((0..d.len()).map(|i| d.get(i) as f32));
        }
        Ok(())
    }

    fn expect(&self, t: &Tensor, o: usize, len: usize) -> Result<()> {
        if t.data.len() == len {
            return Ok(());
        }
        let port = &self.backend.outputs()[o];
        Err(self.fail(format!("output {} came back with shape {:?} ({} values; {len} expected)", port.describe(), t.shape, t.data.len())))
    }
}

/// Copies `leaf` of `row` into `data` from `at`, cast to its type (same-type
/// leaves as one slice copy: rows and leaves start at 8-byte boundaries).
#[inline]
fn copy_leaf(leaf: &rollway_core::Leaf, row: &[u8], data: &mut Data, at: usize) {
    let (len, bytes) = (leaf.len(), &row[leaf.offset..leaf.offset + leaf.bytes()]);
    match (leaf.dtype, &mut *data) {
        (DType::F32, Data::F32(v)) => v[at..at + len].copy_from_slice(bytemuck::cast_slice(bytes)),
        (DType::U8, Data::U8(v)) => v[at..at + len].copy_from_slice(bytes),
        (DType::I64, Data::I64(v)) => v[at..at + len].copy_from_slice(bytemuck::cast_slice(bytes)),
        (DType::U8, Data::F32(v)) => v[at..at + len].iter_mut().zip(bytes).for_each(|(x, &b)| *x = f32::from(b)),
        (dt, d) => (0..len).for_each(|i| d.set(at + i, dt.read_f64(bytes, i))),
    }
}

/// Writes batch row `r`'s action for `leaf` into its `bytes`.
#[inline]
fn write_action(
    leaf: &rollway_core::Leaf,
    read: Read,
    d: &Data,
    r: usize,
    mut rng: Option<&mut AgentRng>,
    bytes: &mut [u8],
) -> std::result::Result<(), String> {
    match (read, &leaf.kind) {
        (Read::Logits, LeafKind::Discrete { n, start }) => {
            let k = start + choose(d, r * *n as usize, *n as usize, rng) as i64;
            match leaf.dtype {
                DType::I64 => bytes[..8].copy_from_slice(&k.to_ne_bytes()),
                dt => dt.write_f64(bytes, 0, k as f64),
            }
        }
        (Read::Logits, LeafKind::MultiDiscrete { nvec, start }) => {
            let mut at = r * nvec.iter().sum::<i64>() as usize;
            for (e, (&m, &s)) in nvec.iter().zip(start).enumerate() {
                let k = choose(d, at, m as usize, rng.as_deref_mut());
                leaf.dtype.write_f64(bytes, e, (s + k as i64) as f64);
                at += m as usize;
            }
        }
        _ => given(d, r, leaf.len().max(1), leaf.dtype, bytes)?,
    }
    Ok(())
}

/// The argmax of `m` logits from `at` (the first of equal maxima), or with `rng`
/// a draw from their softmax.
#[inline]
fn choose(d: &Data, at: usize, m: usize, rng: Option<&mut AgentRng>) -> usize {
    if let (Data::F32(v), None) = (d, &rng) {
        let row = &v[at..at + m];
        return (1..m).fold(0, |b, k| if row[k] > row[b] { k } else { b });
    }
    let logit = |k: usize| d.get(at + k);
    let best = (0..m).fold(0, |b, k| if logit(k) > logit(b) { k } else { b });
    let Some(rng) = rng else { return best };
    let top = logit(best);
    let total: f64 = (0..m).map(|k| (logit(k) - top).exp()).sum();
    let mut u = rng.random::<f64>() * total;
    for k in 0..m {
        u -= (logit(k) - top).exp();
        if u < 0.0 {
            return k;
        }
    }
    best
}

/// Writes row `r`'s `len` given action values; a float for an integer leaf must be whole.
fn given(d: &Data, r: usize, len: usize, dtype: DType, bytes: &mut [u8]) -> std::result::Result<(), String> {
    for i in 0..len {
        let x = d.get(r * len + i);
        if !dtype.is_float() && x.fract() != 0.0 {
            return Err(format!("the model gave action {x}, which is not a whole number ({} action)", dtype.name()));
        }
        dtype.write_f64(bytes, i, x);
    }
    Ok(())
}

impl Agent for OnnxAgent {
    fn act(&mut self, batch: &mut ActBatch<'_>) -> Result<()> {
        let mut extras = std::mem::take(&mut self.extras);
        let res = self.act_with_extras(batch, &mut extras);
        self.extras = extras;
        res
    }

    fn act_with_extras(&mut self, batch: &mut ActBatch<'_>, extras: &mut Vec<StepColumn>) -> Result<()> {
        if batch.is_empty() {
            extras.clear();
            return Ok(());
        }
        let start = Instant::now();
        let inputs = self.gather(batch)?;
        let t = Instant::now();
        let outs = self.backend.run(inputs).map_err(|e| self.fail(e))?;
        self.model_time += t.elapsed();
        self.calls += 1;
        std::mem::swap(&mut self.extras, extras);
        let res = self.scatter(batch, &outs);
        std::mem::swap(&mut self.extras, extras);
        self.agent_time += start.elapsed();
        res
    }

    fn about(&self) -> Option<String> {
        let bound: Vec<String> = self.backend.inputs().iter().chain(self.backend.outputs()).map(|p| p.describe()).collect();
        let (model, agent) = (self.model_time.as_secs_f64(), self.agent_time.as_secs_f64());
        let per = model * 1e6 / self.calls.max(1) as f64;
        let share = 100.0 * model / agent.max(f64::MIN_POSITIVE);
        let time = format!("{} calls: the model {per:.1} µs each, {model:.3} s, {share:.0}% of the agent's time", self.calls);
        Some(format!("{} · {} · {time}", self.backend.describe(), bound.join(" ")))
    }
}
