//! The env process's half of hosting Python envs (the worker's half, and the
//! design, are in `rollway_host`): `python -m rollway._host` calls [`host_serve`],
//! which reads the setup, asks the package to make the env factory, and then runs
//! rounds until told to stop or until its input closes (the run is gone).
//!
//! The round loop is here rather than in Python so that hosting costs little next
//! to the env itself: per op it is one call of `env.step`/`env.reset` (or, for
//! `atari:` envs, the emulator's own calls), shared with the in-process host
//! ([`SlotEnvs`]).
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rollway_core::{InfoNeed, Op};
use rollway_host::proto::{self, Hello, RoundReply, Setup, SpecJson};
use rollway_host::shm::{self, Region};

use crate::atari::AtariEnvs;
use crate::batched::BatchEnvs;
use crate::mujoco::MujocoEnvs;
use crate::pyenvs::PyEnvs;
use crate::slots::SlotEnvs;

/// One env block served over shared memory.
struct Host {
    envs: Box<dyn SlotEnvs>,
    region: Region,
}

/// Serves one env block on this process's stdin and `reply_fd`, until told to quit.
///
/// A process asked for the spec alone (`n = 0`) keeps what it made and waits: the run
/// may hand it a block's setup next (`rollway_host`'s spare), which it then serves
/// without importing and making its env a second time.
#[pyfunction]
pub fn host_serve(py: Python<'_>, reply_fd: i32, prepare: Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: `rollway/_host.py` dup'ed the process's stdout to `reply_fd` for this
    // function alone and passes it here once; nothing else reads, writes or closes it.
    let mut out = unsafe { File::from_raw_fd(reply_fd) };
    let mut input = std::io::stdin().lock();
    let Some(frame) = proto::read_frame(&mut input)? else { return Ok(()) };
    let mut setup = read_setup(&frame)?;
    let pickled = if setup.pickled { proto::read_frame(&mut input)?.unwrap_or_default() } else { Vec::new() };
    let hello = |out: &mut File, hello: Hello| proto::write_frame(out, &serde_json::to_vec(&hello).expect("hellos serialize"));
    let setup_json = serde_json::to_string(&setup).expect("setups serialize");
    let prepared = match prepare.call1((setup_json, PyBytes::new(py, &pickled))) {
        Ok(t) => t,
        Err(e) => return Ok(hello(&mut out, Hello { spec: None, error: Some(e.to_string()) })?),
    };
    let mut host = loop {
        match start(&setup, &prepared) {
            Ok((host, spec)) => {
                hello(&mut out, Hello { spec: Some(spec), error: None })?;
                if let Some(h) = host {
                    break h;
                }
            }
            Err(e) => return Ok(hello(&mut out, Hello { spec: None, error: Some(e.to_string()) })?),
        }
        // The spec alone was asked for: a block's setup may follow (anything else ends it).
        match proto::read_frame(&mut input) {
            Ok(Some(frame)) if frame.first() == Some(&b'{') => setup = read_setup(&frame)?,
            _ => {
                let _ = prepared.cast::<PyTuple>()?.get_item(1)?.call_method0("close");
                return Ok(());
            }
        }
    };
    loop {
        match proto::read_frame(&mut input) {
            Ok(Some(cmd)) if cmd == [proto::ROUND] => {
                let reply = host.round(py);
                let bytes = if reply.is_empty() { Vec::new() } else { serde_json::to_vec(&reply).expect("replies serialize") };
                proto::write_frame(&mut out, &bytes)?;
            }
            _ => break,
        }
    }
    host.envs.close(py);
    out.flush()?;
    Ok(())
}

fn read_setup(frame: &[u8]) -> PyResult<Setup> {
    serde_json::from_slice(frame).map_err(|e| crate::errors::input_error(format!("host setup: {e}")))
}

/// The spec, and (for a block, `n > 0`) the host, from what `prepare` returned:
/// `(make, first_env, spec_json, pack_obs, unpack_act, dump_info)`.
fn start(setup: &Setup, made: &Bound<'_, PyAny>) -> PyResult<(Option<Host>, SpecJson)> {
    let t = made.cast::<PyTuple>()?;
    let spec: SpecJson =
        serde_json::from_str(&t.get_item(2)?.extract::<String>()?).map_err(|e| crate::errors::input_error(format!("env spec: {e}")))?;
    let Some(path) = setup.shm.as_deref().filter(|_| setup.n > 0) else {
        return Ok((None, spec));
    };
    let infos = match setup.infos.as_str() {
        "all" => InfoNeed::All,
        "final" => InfoNeed::Final,
        _ => InfoNeed::None,
    };
    let envs = slot_envs(t, &spec, setup.n, (infos, setup.cut))?;
    let (ol, al) = envs.layouts();
    let region = Region::open(path.as_ref(), setup.n, al.row_bytes(), ol.row_bytes())?;
    Ok((Some(Host { envs, region }), spec))
}

impl Host {
    fn round(&mut self, py: Python<'_>) -> RoundReply {
        let mut reply = RoundReply::default();
        let mut ops = Vec::new();
        for (slot, &code) in self.region.ops().iter().enumerate() {
            let op = match code {
                shm::IDLE => continue,
                shm::STEP => Op::Step,
                shm::RESET => Op::Reset(Some(self.region.seed(slot))),
                shm::RESET_UNSEEDED => Op::Reset(None),
                op => {
                    reply.errors.insert(slot, format!("unknown op {op}"));
                    continue;
                }
            };
            ops.push((slot, op));
        }
        for slot in reply.errors.keys() {
            self.region.flags_mut()[*slot] = shm::FAILED;
        }
        let mut results = Vec::with_capacity(ops.len());
        let (act, obs) = self.region.act_obs_rows_mut();
        self.envs.round(py, &ops, act, obs, &mut results);
        for (&(slot, _), res) in ops.iter().zip(results) {
            match res {
                Ok((o, info)) => {
                    let flags = if o.terminated { shm::TERMINATED } else { 0 } | if o.truncated { shm::TRUNCATED } else { 0 };
                    self.region.flags_mut()[slot] = flags;
                    self.region.set_reward(slot, o.reward);
                    if let Some(info) = info {
                        reply.infos.insert(slot, info);
                    }
                }
                Err(e) => {
                    self.region.flags_mut()[slot] = shm::FAILED;
                    reply.errors.insert(slot, e);
                }
            }
        }
        reply
    }
}

/// The envs `prepare` made for a block of `n` slots: an `atari:` game, a MuJoCo task
/// rollway steps, else Python envs.
pub(crate) fn slot_envs(
    prepared: &Bound<'_, PyTuple>,
    spec: &SpecJson,
    n: usize,
    options: (InfoNeed, Option<u64>),
) -> PyResult<Box<dyn SlotEnvs>> {
    let (infos, cut) = options;
    // `prepare` hands back a stepper (with its name) where rollway steps the envs itself.
    let stepper = prepared.get_item(0)?.getattr("stepper").ok().map(|s| s.extract::<String>()).transpose()?;
    Ok(match stepper.as_deref() {
        Some("atari") => Box::new(AtariEnvs::new(prepared, spec, n, infos, cut)?),
        Some("mujoco") => Box::new(MujocoEnvs::new(prepared, spec, n, infos, cut)?),
        Some("batch") => Box::new(BatchEnvs::new(prepared, spec, n, infos, cut)?),
        _ => Box::new(PyEnvs::new(prepared, spec, n, infos, cut)?),
    })
}
