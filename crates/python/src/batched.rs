//! A block of a batched simulator (`rollway.batched`: JAX envs of the gymnax interface):
//! the whole block steps in one Python call a round, where other Python envs take one
//! call per slot. Both hosts run it (`host.rs`, `inline_host.rs`) through
//! [`SlotEnvs::round`].
//!
//! A round hands the package the ops (a byte per slot), the seeds and the block's action
//! rows, and gets back the observations as one uint8 array (`[n, bytes]`, each row's
//! leading bytes: the simulator's own output viewed as bytes, no copy), the rewards and
//! the end flags; the observations are copied once, into the rows of the slots that had
//! an op. Infos are asked for once a round, for the slots whose infos the block's
//! [`InfoNeed`] wants: a call per ended slot cost more than the step itself on gymnax's
//! Breakout (~200 of 1,024 random episodes end on every second step).

use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rollway_core::{Info, InfoNeed, Layout, Op, StepOutcome};
use rollway_host::proto::SpecJson;

use crate::slots::{layouts, Episodes, OpResult, SlotEnvs};

// The op codes of a round (`rollway.batched`'s IDLE, STEP, RESET, RESET_UNSEEDED).
const STEP: u8 = 1;
const RESET: u8 = 2;
const RESET_UNSEEDED: u8 = 3;

/// The block `prepare`'s simulator made for `n` slots.
pub(crate) struct BatchEnvs {
    block: Py<PyAny>,
    ol: Layout,
    al: Layout,
    n: usize,
    episodes: Episodes,
    id: String,
}

impl BatchEnvs {
    /// `n` slots of the simulator `prepare` returned as its stepper (`stepper == "batch"`).
    pub fn new(prepared: &Bound<'_, PyTuple>, spec: &SpecJson, n: usize, infos: InfoNeed, cut: Option<u64>) -> PyResult<BatchEnvs> {
        let (ol, al) = layouts(spec)?;
        let block = prepared.get_item(0)?.call_method1("block", (n,))?.unbind();
        Ok(BatchEnvs { block, ol, al, n, episodes: Episodes::new(n, infos, cut), id: spec.id.clone() })
    }

    /// One call of the block for `ops`: each op's result, or the call's error for all.
    fn call(&mut self, py: Python<'_>, ops: &[(usize, Op)], act: &[u8], obs: &mut [u8]) -> PyResult<Vec<OpResult>> {
        let mut codes = vec![0u8; self.n];
        let mut seeds = vec![0u64; self.n];
        for &(slot, op) in ops {
            codes[slot] = match op {
                Op::Step => STEP,
                Op::Reset(Some(seed)) => {
                    seeds[slot] = seed;
                    RESET
                }
                Op::Reset(None) => RESET_UNSEEDED,
            };
        }
        let seed_bytes: Vec<u8> = seeds.iter().flat_map(|s| s.to_le_bytes()).collect();
        let args = (PyBytes::new(py, &codes), PyBytes::new(py, &seed_bytes), PyBytes::new(py, act));
        let answer = self.block.bind(py).call_method1(pyo3::intern!(py, "round"), args)?;
        let (o, rows, r, f): (PyReadonlyArray2<u8>, Option<PyReadonlyArray1<i64>>, PyReadonlyArray1<f64>, PyReadonlyArray1<u8>) =
            answer.extract()?;
        let (o, rewards, flags) = (o.as_array(), r.as_slice()?, f.as_slice()?);
        let row = self.ol.row_bytes();
        let k = o.ncols();
        if k > row || rewards.len() != self.n || flags.len() != self.n {
            let msg =
                format!("a round answered observations of {k} bytes for rows of {row}, {} rewards for {} slots", rewards.len(), self.n);
            return Err(crate::errors::input_error(msg));
        }
        let src = o.as_slice().ok_or_else(|| crate::errors::input_error("a round's observations are not one contiguous array"))?;
        // Row j of the answer is slot `rows[j]` (a round of resets answers only those), else slot j.
        let slots: Vec<usize> = match &rows {
            Some(rows) => rows.as_slice()?.iter().map(|&s| s as usize).collect(),
            None => (0..o.nrows()).collect(),
        };
        for (j, &slot) in slots.iter().enumerate() {
            if slot >= self.n {
                return Err(crate::errors::input_error(format!("a round answered a row for slot {slot} of {}", self.n)));
            }
            if codes[slot] != 0 {
                obs[slot * row..slot * row + k].copy_from_slice(&src[j * k..(j + 1) * k]);
            }
        }
        let mut out = Vec::with_capacity(ops.len());
        let mut wanted = Vec::new();
        for (i, &(slot, op)) in ops.iter().enumerate() {
            out.push(Ok(match op {
                Op::Step => {
                    let (terminated, truncated) = (flags[slot] & 1 != 0, flags[slot] & 2 != 0);
                    self.episodes.stepped(slot);
                    if self.episodes.info_wanted(slot, terminated || truncated) {
                        wanted.push((i, slot));
                    }
                    (StepOutcome { reward: rewards[slot], terminated, truncated }, None)
                }
                Op::Reset(_) => (StepOutcome::default(), self.episodes.started(slot).then(Info::new)),
            }));
        }
        if !wanted.is_empty() {
            self.fill_infos(py, &wanted, &mut out);
        }
        Ok(out)
    }

    /// The infos of the `wanted` steps (`(op index, slot)`), in one call of the block; a failed
    /// call or malformed answer fails those steps.
    fn fill_infos(&self, py: Python<'_>, wanted: &[(usize, usize)], out: &mut [OpResult]) {
        let slots: Vec<usize> = wanted.iter().map(|&(_, slot)| slot).collect();
        let answer = self.block.bind(py).call_method1(pyo3::intern!(py, "infos"), (slots,));
        let infos = answer
            .map_err(|e| e.to_string())
            .and_then(|a| crate::info_columns::infos_of(&a, wanted.len()).map_err(|e| format!("env {}: {e}", self.id)));
        match infos {
            Ok(infos) => {
                for (&(i, _), info) in wanted.iter().zip(infos) {
                    if let Ok((_, slot_info)) = &mut out[i] {
                        *slot_info = Some(info);
                    }
                }
            }
            Err(e) => wanted.iter().for_each(|&(i, _)| out[i] = Err(e.clone())),
        }
    }

    fn one(&mut self, py: Python<'_>, slot: usize, op: Op, act_row: &[u8], obs_row: &mut [u8]) -> OpResult {
        // A single op runs as a round of one: the block's rows, this slot's filled in.
        let (ar, or) = (self.al.row_bytes(), self.ol.row_bytes());
        let mut act = vec![0u8; ar * self.n];
        act[slot * ar..(slot + 1) * ar].copy_from_slice(act_row);
        let mut obs = vec![0u8; or * self.n];
        let mut out = Vec::new();
        self.round(py, &[(slot, op)], &act, &mut obs, &mut out);
        obs_row.copy_from_slice(&obs[slot * or..(slot + 1) * or]);
        out.pop().unwrap_or_else(|| Err("a round gave no result".into()))
    }
}

impl SlotEnvs for BatchEnvs {
    fn layouts(&self) -> (&Layout, &Layout) {
        (&self.ol, &self.al)
    }

    fn step(&mut self, py: Python<'_>, slot: usize, act: &[u8], obs: &mut [u8]) -> OpResult {
        self.one(py, slot, Op::Step, act, obs)
    }

    fn reset(&mut self, py: Python<'_>, slot: usize, seed: Option<u64>, obs: &mut [u8]) -> Result<Option<Info>, String> {
        self.one(py, slot, Op::Reset(seed), &vec![0u8; self.al.row_bytes()], obs).map(|(_, info)| info)
    }

    /// Nothing per slot: a slot's next reset starts it afresh.
    fn fail(&mut self, _py: Python<'_>, _slot: usize) {}

    fn close(&mut self, py: Python<'_>) {
        let _ = self.block.bind(py).call_method0("close");
    }

    fn round(&mut self, py: Python<'_>, ops: &[(usize, Op)], act: &[u8], obs: &mut [u8], out: &mut Vec<OpResult>) {
        match self.call(py, ops, act, obs) {
            Ok(results) => out.extend(results),
            Err(e) => {
                let error = format!("env {}: {}", self.id, e.value(py));
                out.extend(ops.iter().map(|_| Err(error.clone())));
            }
        }
    }
}
