//! The engine of `rollway.make_vec`: N of rollway's Rust envs stepped together, for
//! a `gymnasium.vector.VectorEnv` driven from Python (EnvPool's use case).
//!
//! One call steps all N envs with the GIL released and returns fresh arrays (the
//! caller may keep every observation it was given). Observations are written into
//! one block of rows and split into per-leaf arrays `[N, ...]` on the way out;
//! actions arrive as the leaves' packed bytes. Autoreset follows Gymnasium's default
//! (next-step): the step after an episode ended resets that env instead of stepping
//! it, returning the reset observation with reward 0 and both flags false.
//!
//! Envs are stepped on `threads` threads when asked (each takes a contiguous slice,
//! the caller's thread one of them); the others are started per step (~15 µs each),
//! which pays only when a slice's steps cost more than that (large N, costly envs),
//! so one thread (the caller's) is the default.
//!
//! Ids a Python process hosts (`gym:ID`, `atari:GAME`, `module:callable`) are
//! stepped in env blocks instead, in the caller's thread or in env processes
//! (`vec_blocks.rs`), with the same autoreset and the same arrays out.

use pyo3::prelude::*;
use rollway_core::check::{Role, RowCheck};
use rollway_core::{DType, Env, Info, Layout, Op, Params, RowMut, RowRef, Rows, StepOutcome};

use crate::arrays;
use crate::errors::{input_error, ToPy};
use crate::vec_blocks::Blocks;
use rollway_engine::Host;

/// The envs themselves: rollway's, stepped here, or hosted ones in blocks.
enum Backend {
    Envs(Vec<Box<dyn Env>>),
    Blocks(Box<Blocks>),
}

/// N envs of one id (the `rollway.VectorEnv` class drives them). Unsendable: envs
/// are `Send` but not `Sync`, and a vector env belongs to the thread that steps it.
#[pyclass(module = "rollway._rollway", unsendable)]
pub struct VecEnvHandle {
    backend: Backend,
    n: usize,
    ol: Layout,
    al: Layout,
    obs: Rows,
    act: Rows,
    /// The env's episode ended on the last step: the next step resets it.
    ended: Vec<bool>,
    /// The env has been reset: an unseeded reset continues its stream.
    started: Vec<bool>,
    threads: usize,
    /// What an action row is checked for, as a rollout checks its policy's: outside a
    /// Discrete space or NaN is refused; a Box action outside its bounds passes, as in Gymnasium.
    act_check: RowCheck,
}

/// What one env did in a step, written by whichever thread stepped it.
#[derive(Clone, Copy, Default)]
struct Out {
    reward: f64,
    terminated: bool,
    truncated: bool,
}

/// A contiguous share of the envs with their rows and results: one thread's work.
struct Slice<'a> {
    envs: &'a mut [Box<dyn Env>],
    obs: &'a mut [u8],
    act: &'a [u8],
    ended: &'a [bool],
    outs: &'a mut [Out],
}

impl Slice<'_> {
    fn step(self, ol: &Layout, al: &Layout) -> rollway_core::Result<()> {
        let (obs_w, act_w) = (ol.row_bytes(), al.row_bytes());
        for (i, env) in self.envs.iter_mut().enumerate() {
            let row = RowMut::new(ol, &mut self.obs[i * obs_w..(i + 1) * obs_w]);
            self.outs[i] = if self.ended[i] {
                env.reset(None, None, row)?;
                Out::default()
            } else {
                let o: StepOutcome = env.step(RowRef::new(al, &self.act[i * act_w..(i + 1) * act_w]), row)?;
                Out { reward: o.reward, terminated: o.terminated, truncated: o.truncated }
            };
        }
        Ok(())
    }
}

#[pymethods]
impl VecEnvHandle {
    #[new]
    #[pyo3(signature = (env_id, num_envs, params=vec![], threads=1))]
    fn new(env_id: &str, num_envs: usize, params: Vec<(String, String)>, threads: usize) -> PyResult<Self> {
        if num_envs == 0 {
            return Err(input_error("num_envs must be at least 1"));
        }
        let params = Params(params.into_iter().collect());
        let envs = (0..num_envs).map(|_| rollway_envs::make(env_id, &params)).collect::<Result<Vec<_>, _>>().py()?;
        let spec = envs[0].spec().clone();
        Ok(VecEnvHandle::with(Backend::Envs(envs), &spec, num_envs, threads))
    }

    /// `num_envs` hosted envs (`gym:ID`, `atari:GAME`, `module:callable`) hosted by
    /// `python`, where `host` says (`"auto"`, `"inline"`, `"process"`), over `workers`
    /// env processes (`None`: as a rollout's default, [`Host::workers`]); `"auto"` is
    /// inline as [`Host::auto_inline`] says.
    #[staticmethod]
    #[pyo3(signature = (env_id, num_envs, params, workers, host, python))]
    fn hosted(
        py: Python<'_>,
        env_id: &str,
        num_envs: usize,
        params: Vec<(String, String)>,
        workers: Option<usize>,
        host: String,
        python: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        if num_envs == 0 {
            return Err(input_error("num_envs must be at least 1"));
        }
        let host = Host::try_from(host).map_err(input_error)?;
        let workers = host.workers(env_id, workers, num_envs);
        let inline = match host {
            Host::Inline => true,
            Host::Process => false,
            // A vector env is stepped by its caller: no policy runs ahead of it.
            Host::Auto => Host::auto_inline(env_id, workers, 0),
        };
        let blocks = Blocks::new(py, env_id, &Params(params.into_iter().collect()), num_envs, workers, inline, python)?;
        let spec = blocks.spec().clone();
        Ok(VecEnvHandle::with(Backend::Blocks(Box::new(blocks)), &spec, num_envs, 1))
    }

    /// (observation space, action space) of one env, as space JSON; and its time limit.
    fn spec(&self) -> (String, String, Option<u64>) {
        let s = match &self.backend {
            Backend::Envs(envs) => envs[0].spec(),
            Backend::Blocks(b) => b.spec(),
        };
        (s.observation_space.to_json(), s.action_space.to_json(), s.max_episode_steps)
    }

    /// Resets every env: env i with `seeds[i]` (None continues its stream). Returns the
    /// observations and the infos (JSON list, or None when all are empty).
    #[pyo3(signature = (seeds, options=None))]
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        seeds: Vec<Option<u64>>,
        options: Option<&str>,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        if seeds.len() != self.n {
            return Err(input_error(format!("{} seeds for {} envs", seeds.len(), self.n)));
        }
        let options: Option<Info> =
            options.map(serde_json::from_str).transpose().map_err(|e| input_error(format!("reset options: {e}")))?;
        let seeds = self.first_seeds(seeds);
        let (ol, obs) = (&self.ol, &mut self.obs);
        match &mut self.backend {
            Backend::Envs(envs) => {
                for (i, env) in envs.iter_mut().enumerate() {
                    env.reset(seeds[i], options.as_ref(), RowMut::new(ol, obs.row_mut(i))).py()?;
                }
            }
            Backend::Blocks(_) if options.is_some() => {
                return Err(input_error("reset options are not passed to envs hosted in Python; reset with a seed only"));
            }
            Backend::Blocks(blocks) => {
                let ops: Vec<Option<Op>> = seeds.into_iter().map(|s| Some(Op::Reset(s))).collect();
                blocks.round(py, &ops, &self.act, obs)?;
            }
        }
        self.ended.iter_mut().for_each(|e| *e = false);
        Ok((self.observations(py)?, self.infos(py, false)?))
    }

    /// Steps every env with its action (the action rows, as `load_actions` takes them);
    /// returns (observations, rewards, terminations, truncations, infos, finals). Infos
    /// are a JSON list, or None when every one is empty; with `columns`, flat ones come
    /// as Gymnasium's vector layout already (`info_columns.rs`). Next-step autoreset by default (`finals` is None); with `same_step`, an
    /// env whose episode ended is reset within the call (Gymnasium's `SAME_STEP`, SB3's
    /// `VecEnv`): the observations are then the reset ones, and `finals` the final
    /// observations (every env's rows; those that ended are marked) and the ended mask.
    #[pyo3(signature = (actions, same_step=false, columns=false))]
    fn step<'py>(&mut self, py: Python<'py>, actions: &[u8], same_step: bool, columns: bool) -> PyResult<Stepped<'py>> {
        self.load_actions(actions)?;
        let n = self.n;
        let outs = if let Backend::Blocks(blocks) = &mut self.backend {
            let ops: Vec<Option<Op>> = self.ended.iter().map(|&e| Some(if e { Op::Reset(None) } else { Op::Step })).collect();
            let done = blocks.round(py, &ops, &self.act, &mut self.obs)?;
            done.into_iter()
                .map(|d| d.map_or_else(Out::default, |d| Out { reward: d.reward, terminated: d.terminated, truncated: d.truncated }))
                .collect()
        } else {
            let mut outs = vec![Out::default(); n];
            py.detach(|| self.step_all(&mut outs)).py()?;
            outs
        };
        for (e, o) in self.ended.iter_mut().zip(&outs) {
            *e = o.terminated || o.truncated;
        }
        let rewards = arrays::from_vec(py, outs.iter().map(|o| o.reward).collect::<Vec<f64>>(), DType::F64, &[n])?;
        let term = arrays::from_bools(py, &outs.iter().map(|o| o.terminated).collect::<Vec<_>>())?;
        let trunc = arrays::from_bools(py, &outs.iter().map(|o| o.truncated).collect::<Vec<_>>())?;
        let infos = self.infos(py, columns)?;
        let finals = if same_step && self.ended.iter().any(|&e| e) {
            let finals = (self.observations(py)?, arrays::from_bools(py, &self.ended)?);
            self.reset_ended(py)?;
            Some(finals)
        } else {
            None
        };
        Ok((self.observations(py)?, rewards, term, trunc, infos, finals))
    }
}

/// What `step` returns (see there).
type Stepped<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
    Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
);

impl VecEnvHandle {
    /// The seeds of a reset, where an env's first reset without one gets one drawn from OS
    /// entropy: Gymnasium's vector envs do the same (each env's `np_random` from entropy), so
    /// `make_vec(id, n).reset()` gives `n` different episodes, and a hosted env (made at its
    /// first reset) has a seed to start from. Later unseeded resets continue each env's stream.
    fn first_seeds(&mut self, seeds: Vec<Option<u64>>) -> Vec<Option<u64>> {
        use std::hash::{BuildHasher, RandomState};
        let fresh = |i: usize| RandomState::new().hash_one(i) >> 1;
        let out = seeds.into_iter().enumerate().map(|(i, s)| if self.started[i] { s } else { s.or_else(|| Some(fresh(i))) }).collect();
        self.started.iter_mut().for_each(|s| *s = true);
        out
    }

    /// Resets (unseeded) every env whose episode ended, now.
    fn reset_ended(&mut self, py: Python<'_>) -> PyResult<()> {
        let (ol, obs) = (&self.ol, &mut self.obs);
        match &mut self.backend {
            Backend::Envs(envs) => {
                for (i, env) in envs.iter_mut().enumerate().filter(|(i, _)| self.ended[*i]) {
                    env.reset(None, None, RowMut::new(ol, obs.row_mut(i))).py()?;
                }
            }
            Backend::Blocks(blocks) => {
                let ops: Vec<Option<Op>> = self.ended.iter().map(|&e| e.then_some(Op::Reset(None))).collect();
                blocks.round(py, &ops, &self.act, obs)?;
            }
        }
        self.ended.iter_mut().for_each(|e| *e = false);
        Ok(())
    }

    fn with(backend: Backend, spec: &rollway_core::EnvSpec, n: usize, threads: usize) -> VecEnvHandle {
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let (obs, act) = (Rows::new(ol.row_bytes(), n), Rows::new(al.row_bytes(), n));
        let act_check = RowCheck::new(&al, Role::Action);
        let threads = threads.clamp(1, n);
        VecEnvHandle { backend, n, ol, al, obs, act, ended: vec![false; n], started: vec![false; n], threads, act_check }
    }

    /// Copies the action rows in (the layout's rows, as `rollway.spaces.batch_packer` packs
    /// them: of the batch's shapes, converted without loss), checking each as a rollout
    /// checks its policy's.
    fn load_actions(&mut self, rows: &[u8]) -> PyResult<()> {
        let (n, row_bytes) = (self.n, self.act.row_bytes());
        if rows.len() != n * row_bytes {
            let space = self.al.space().describe();
            return Err(input_error(format!("actions: {} bytes for {n} envs of {space} ({row_bytes} bytes a row)", rows.len())));
        }
        self.act.bytes_mut().copy_from_slice(rows);
        for i in 0..n {
            if let Some(problem) = self.act_check.check(self.act.row(i)) {
                return Err(input_error(problem.describe(&format!("the action of env {i}:"))));
            }
        }
        Ok(())
    }

    fn step_all(&mut self, outs: &mut [Out]) -> rollway_core::Result<()> {
        let (ol, al, n) = (&self.ol, &self.al, self.n);
        let Backend::Envs(envs) = &mut self.backend else { unreachable!("only rollway's own envs are stepped here") };
        let chunk = n.div_ceil(self.threads);
        let (obs_w, act_w) = (self.obs.row_bytes().max(1), self.act.row_bytes().max(1));
        let slices = envs
            .chunks_mut(chunk)
            .zip(self.obs.bytes_mut().chunks_mut(chunk * obs_w))
            .zip(self.act.bytes().chunks(chunk * act_w))
            .zip(self.ended.chunks(chunk).zip(outs.chunks_mut(chunk)))
            .map(|(((envs, obs), act), (ended, outs))| Slice { envs, obs, act, ended, outs });
        if self.threads == 1 {
            return slices.into_iter().try_for_each(|s| s.step(ol, al));
        }
        // The caller's thread takes the last slice itself: one thread start fewer per step.
        let mut slices: Vec<Slice<'_>> = slices.collect();
        let mine = slices.pop();
        std::thread::scope(|scope| {
            let handles: Vec<_> = slices.into_iter().map(|s| scope.spawn(move || s.step(ol, al))).collect();
            let own = mine.map_or(Ok(()), |s| s.step(ol, al));
            handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))?;
            own
        })
    }

    /// The observation rows split into one fresh array `[N, ...]` per leaf.
    fn observations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.n;
        let mut cols = Vec::new();
        for leaf in self.ol.leaves() {
            let (b, w) = (leaf.bytes(), self.obs.row_bytes());
            let data: Vec<u8> = if b == w {
                self.obs.bytes().to_vec()
            } else {
                (0..n).flat_map(|i| &self.obs.row(i)[leaf.offset..leaf.offset + b]).copied().collect()
            };
            let shape: Vec<usize> = std::iter::once(n).chain(leaf.shape.iter().copied()).collect();
            let a = rollway_core::Array { dtype: leaf.dtype, shape, data };
            cols.push((leaf.path.clone(), arrays::owned(py, a)?));
        }
        let named: Vec<(String, Bound<'py, PyAny>)> =
            cols.into_iter().map(|(p, a)| (if p.is_empty() { "observation".to_string() } else { format!("observation/{p}") }, a)).collect();
        arrays::leaves(py, named.iter().map(|(c, a)| (c.as_str(), a.clone())).collect())
    }

    /// The envs' infos as a JSON list, or None when every one is empty (the common case);
    /// with `columns`, as Gymnasium's vector layout when they are flat.
    fn infos<'py>(&mut self, py: Python<'py>, columns: bool) -> PyResult<Option<Bound<'py, PyAny>>> {
        let infos: Vec<Info> = match &mut self.backend {
            Backend::Envs(envs) => envs.iter().map(|e| e.info()).collect(),
            Backend::Blocks(blocks) => blocks.infos(),
        };
        if infos.iter().all(|i| i.0.is_empty()) {
            return Ok(None);
        }
        if let Some(laid_out) = columns.then(|| crate::info_columns::columns(py, &infos)).transpose()?.flatten() {
            return Ok(Some(laid_out.into_any()));
        }
        Ok(Some(serde_json::to_string(&infos).expect("infos serialize").into_pyobject(py)?.into_any()))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<VecEnvHandle>()
}
