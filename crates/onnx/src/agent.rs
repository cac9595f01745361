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

use rand::Rng;
use rollway_core::{ActBatch, Agent, DType, Error, Layout, LeafKind, Result, StepColumn};

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
}

impl OnnxAgent {
    fn fail(&self, message: String) -> Error {
        Error::Agent { agent: self.name.clone(), message }
    }

    /// One tensor per model input for the batch's `n` rows.
    fn gather(&self, batch: &mut ActBatch<'_>) -> Result<Vec<Tensor>> {
        let n = batch.len();
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
            batch.for_each_row(|row| {
                match feed {
                    Feed::Obs(l) => copy_leaf(&self.ol, *l, row.obs.bytes(), &mut data, r * len),
                    Feed::First => data.set(r, f64::from(u8::from(row.first))),
                    Feed::State(k) => {
                        let s = &self.plan.states[*k];
                        if row.memory.len() == self.plan.state_width {
                            let m = &row.memory[s.offset..s.offset + s.width];
                            m.iter().enumerate().for_each(|(i, &x)| data.set(r * len + i, f64::from(x)));
                        }
                    }
                }
                r += 1;
                Ok(())
            })?;
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
        let (al, plan, sample) = (&self.al, &self.plan, self.sample);
        let mut r = 0;
        let name = &self.name;
        batch.for_each_row(|mut row| {
            for (l, &(o, read)) in plan.actions.iter().enumerate() {
                let leaf = &al.leaves()[l];
                let bytes = &mut row.action.bytes_mut()[leaf.offset..];
                match (read, &leaf.kind) {
                    (Read::Logits, LeafKind::Discrete { n, start }) => {
                        let k = choose(&outs[o].data, r * *n as usize, *n as usize, sample.then_some(&mut *row.rng));
                        leaf.dtype.write_f64(bytes, 0, (start + k as i64) as f64);
                    }
                    (Read::Logits, LeafKind::MultiDiscrete { nvec, start }) => {
                        let mut at = r * nvec.iter().sum::<i64>() as usize;
                        for (e, (&m, &s)) in nvec.iter().zip(start).enumerate() {
                            let k = choose(&outs[o].data, at, m as usize, sample.then_some(&mut *row.rng));
                            leaf.dtype.write_f64(bytes, e, (s + k as i64) as f64);
                            at += m as usize;
                        }
                    }
                    _ => given(&outs[o].data, r, leaf.len().max(1), leaf.dtype, bytes).map_err(|message| Error::Action {
                        agent: name.clone(),
                        row: r,
                        message,
                    })?,
                }
            }
            if plan.state_width > 0 {
                row.memory.resize(plan.state_width, 0.0);
                for s in &plan.states {
                    let m = &mut row.memory[s.offset..s.offset + s.width];
                    m.iter_mut().enumerate().for_each(|(i, x)| *x = outs[s.output].data.get(r * s.width + i) as f32);
                }
            }
            r += 1;
            Ok(())
        })?;
        self.extras.resize_with(plan.extras.len(), StepColumn::default);
        for ((o, shape), col) in plan.extras.iter().zip(&mut self.extras) {
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

/// Copies observation leaf `l` of `row` into `data` from `at`, cast to its type.
#[inline]
fn copy_leaf(ol: &Layout, l: usize, row: &[u8], data: &mut Data, at: usize) {
    let leaf = &ol.leaves()[l];
    let bytes = &row[leaf.offset..leaf.offset + leaf.bytes()];
    let len = leaf.len();
    match (leaf.dtype, &mut *data) {
        (DType::F32, Data::F32(v)) => v[at..at + len].iter_mut().zip(bytes.chunks_exact(4)).for_each(|(x, b)| {
            *x = f32::from_ne_bytes(b.try_into().expect("4 bytes"));
        }),
        (DType::U8, Data::U8(v)) => v[at..at + len].copy_from_slice(bytes),
        (DType::U8, Data::F32(v)) => v[at..at + len].iter_mut().zip(bytes).for_each(|(x, &b)| *x = f32::from(b)),
        (dt, d) => (0..len).for_each(|i| d.set(at + i, dt.read_f64(bytes, i))),
    }
}

/// The argmax of `m` logits from `at` (the first of equal maxima), or with `rng`
/// a draw from their softmax.
fn choose(d: &Data, at: usize, m: usize, rng: Option<&mut rollway_core::AgentRng>) -> usize {
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
        let inputs = self.gather(batch)?;
        let outs = self.backend.run(inputs).map_err(|e| self.fail(e))?;
        std::mem::swap(&mut self.extras, extras);
        let res = self.scatter(batch, &outs);
        std::mem::swap(&mut self.extras, extras);
        res
    }
}
