//! The env process's half of hosting Python envs (the worker's half, and the
//! design, are in `rollway_host`): `python -m rollway._host` calls [`host_serve`],
//! which reads the setup, asks the package to make the env factory, and then runs
//! rounds until told to stop or until its input closes (the run is gone).
//!
//! The round loop is here rather than in Python so that hosting costs little next
//! to the env itself: per op it is one call of `env.step`/`env.reset`, and the
//! action and observation cross between the shared rows and Python without a
//! Python-level packer for the common spaces (see [`crate::rows`]).

use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use rollway_core::{Info, InfoNeed, Layout, Space};
use rollway_host::proto::{self, Hello, RoundReply, Setup, SpecJson};
use rollway_host::shm::{self, Region};

use crate::rows::{fast_row, fast_value, stepped, Stepped};

/// What `rollway._host.prepare` made of the setup.
struct Host<'py> {
    make: Bound<'py, PyAny>,
    pack_obs: Bound<'py, PyAny>,
    unpack_act: Bound<'py, PyAny>,
    dump_info: Bound<'py, PyAny>,
    envs: Vec<Option<Bound<'py, PyAny>>>,
    ol: Layout,
    al: Layout,
    infos: InfoNeed,
    region: Region,
    buf: Vec<u8>,
}

/// Serves one env block on this process's stdin and `reply_fd`, until told to quit.
#[pyfunction]
pub fn host_serve(py: Python<'_>, reply_fd: i32, prepare: Bound<'_, PyAny>) -> PyResult<()> {
    // SAFETY: `rollway/_host.py` dup'ed the process's stdout to `reply_fd` for this
    // function alone and passes it here once; nothing else reads, writes or closes it.
    let mut out = unsafe { File::from_raw_fd(reply_fd) };
    let mut input = std::io::stdin().lock();
    let Some(frame) = proto::read_frame(&mut input)? else { return Ok(()) };
    let setup: Setup = serde_json::from_slice(&frame).map_err(|e| crate::errors::input_error(format!("host setup: {e}")))?;
    let pickled = if setup.pickled { proto::read_frame(&mut input)?.unwrap_or_default() } else { Vec::new() };
    let hello = |out: &mut File, hello: Hello| proto::write_frame(out, &serde_json::to_vec(&hello).expect("hellos serialize"));
    let setup_json = serde_json::to_string(&setup).expect("setups serialize");
    let made = prepare.call1((setup_json, PyBytes::new(py, &pickled))).and_then(|t| start(&setup, t));
    let mut host = match made {
        Ok((host, spec)) => {
            hello(&mut out, Hello { spec: Some(spec), error: None })?;
            match host {
                Some(h) => h,
                None => return Ok(()),
            }
        }
        Err(e) => return Ok(hello(&mut out, Hello { spec: None, error: Some(e.to_string()) })?),
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
    for env in host.envs.into_iter().flatten() {
        let _ = env.call_method0("close");
    }
    out.flush()?;
    Ok(())
}

/// The spec, and (for a block, `n > 0`) the host, from what `prepare` returned:
/// `(make, first_env, spec_json, pack_obs, unpack_act, dump_info)`.
fn start<'py>(setup: &Setup, made: Bound<'py, PyAny>) -> PyResult<(Option<Host<'py>>, SpecJson)> {
    let t = made.cast_into::<PyTuple>()?;
    let spec: SpecJson =
        serde_json::from_str(&t.get_item(2)?.extract::<String>()?).map_err(|e| crate::errors::input_error(format!("env spec: {e}")))?;
    let first = t.get_item(1)?;
    let Some(path) = setup.shm.as_deref().filter(|_| setup.n > 0) else {
        let _ = first.call_method0("close");
        return Ok((None, spec));
    };
    let layout = |json: &str| Space::from_json(json).map(|s| Layout::of(&s)).map_err(|e| crate::errors::input_error(format!("space: {e}")));
    let (ol, al) = (layout(&spec.observation_space)?, layout(&spec.action_space)?);
    let region = Region::open(path.as_ref(), setup.n, al.row_bytes(), ol.row_bytes())?;
    let infos = match setup.infos.as_str() {
        "all" => InfoNeed::All,
        "final" => InfoNeed::Final,
        _ => InfoNeed::None,
    };
    let mut envs = vec![None; setup.n];
    envs[0] = Some(first);
    let host = Host {
        make: t.get_item(0)?,
        pack_obs: t.get_item(3)?,
        unpack_act: t.get_item(4)?,
        dump_info: t.get_item(5)?,
        envs,
        ol,
        al,
        infos,
        region,
        buf: Vec::new(),
    };
    Ok((Some(host), spec))
}

impl<'py> Host<'py> {
    fn round(&mut self, py: Python<'py>) -> RoundReply {
        let mut reply = RoundReply::default();
        for slot in 0..self.region.len() {
            let res = match self.region.ops()[slot] {
                shm::IDLE => continue,
                shm::STEP => self.step(py, slot),
                shm::RESET => self.reset(py, slot),
                op => Err(format!("unknown op {op}")),
            };
            match res {
                Ok((flags, reward, info)) => {
                    self.region.flags_mut()[slot] = flags;
                    self.region.set_reward(slot, reward);
                    if let Some(info) = info {
                        reply.infos.insert(slot, info);
                    }
                }
                Err(e) => {
                    self.region.flags_mut()[slot] = shm::FAILED;
                    reply.errors.insert(slot, e);
                    // A failed env is closed and replaced at the slot's next reset.
                    if let Some(env) = self.envs[slot].take() {
                        let _ = env.call_method0("close");
                    }
                }
            }
        }
        reply
    }

    fn step(&mut self, py: Python<'py>, slot: usize) -> Result<(u8, f64, Option<Info>), String> {
        let env = self.envs[slot].as_ref().ok_or("step of a slot without an env")?;
        let action = match fast_value(py, &self.al, self.region.act(slot)) {
            Some(v) => v,
            None => self.unpack_act.call1((PyBytes::new(py, self.region.act(slot)),)),
        }
        .map_err(|e| format!("action: {e}"))?;
        let out = env.call_method1("step", (action,)).map_err(|e| e.to_string())?;
        let Stepped { obs, reward, terminated, truncated, info } = stepped(&out).map_err(|e| e.value(py).to_string())?;
        self.write_obs(slot, &obs)?;
        let wanted = self.infos == InfoNeed::All || (self.infos == InfoNeed::Final && (terminated || truncated));
        let info = if wanted { Some(self.info(&info)?) } else { None };
        let flags = if terminated { shm::TERMINATED } else { 0 } | if truncated { shm::TRUNCATED } else { 0 };
        Ok((flags, reward, info))
    }

    fn reset(&mut self, py: Python<'py>, slot: usize) -> Result<(u8, f64, Option<Info>), String> {
        if self.envs[slot].is_none() {
            self.envs[slot] = Some(self.make.call0().map_err(|e| format!("making the env: {e}"))?);
        }
        let env = self.envs[slot].as_ref().expect("just made");
        let kwargs = PyDict::new(py);
        kwargs.set_item("seed", self.region.seed(slot)).map_err(|e| e.to_string())?;
        let out = env.call_method("reset", (), Some(&kwargs)).map_err(|e| e.to_string())?;
        let t = out.cast::<PyTuple>().ok().filter(|t| t.len() == 2).ok_or("env.reset must return (obs, info)")?;
        self.write_obs(slot, &t.get_item(0).map_err(|e| e.to_string())?)?;
        let info = if self.infos == InfoNeed::All { Some(self.info(&t.get_item(1).map_err(|e| e.to_string())?)?) } else { None };
        Ok((0, 0.0, info))
    }

    fn write_obs(&mut self, slot: usize, obs: &Bound<'py, PyAny>) -> Result<(), String> {
        if !fast_row(&self.ol, obs, &mut self.buf) {
            self.buf = self
                .pack_obs
                .call1((obs,))
                .and_then(|b| b.extract::<Vec<u8>>())
                .map_err(|e| format!("observation does not fit the observation space: {e}"))?;
        }
        let row = self.region.obs_mut(slot);
        if self.buf.len() != row.len() {
            return Err(format!("observation packs to {} bytes; the observation space's row has {}", self.buf.len(), row.len()));
        }
        row.copy_from_slice(&self.buf);
        Ok(())
    }

    fn info(&self, info: &Bound<'py, PyAny>) -> Result<Info, String> {
        let text: String = self.dump_info.call1((info,)).and_then(|s| s.extract()).map_err(|e| format!("info: {e}"))?;
        serde_json::from_str(&text).map_err(|e| format!("info is not a JSON object: {e}"))
    }
}
