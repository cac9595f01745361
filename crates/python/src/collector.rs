//! The recording half of `rollway.DataCollector`: steps of a Python env, already
//! packed into the dataset's row layout by the package, go into a
//! `rollway_store::Recorder` and from there to the crash-safe writer, whose
//! background thread commits shards. Per step this is one call that copies two
//! small rows and pushes three numbers, so the wrapper adds little to the env's own
//! cost; a killed Python process loses at most the unfinished episode and whatever
//! finished episodes were not yet committed (see `max_buffer_steps`).

use std::path::PathBuf;

use pyo3::prelude::*;
use rollway_core::{EnvSpec, Info, Layout, Space, StepOutcome};
use rollway_engine::{Target, Want};
use rollway_store::{DatasetWriter, Recorder, WriterConfig};

use crate::errors::{input_error, ToPy};
use crate::rows::{fast_row, stepped, Stepped};

/// An open recording (the `rollway.DataCollector` class drives it). Unsendable:
/// a collector belongs to the thread that steps its env.
#[pyclass(module = "rollway._rollway", unsendable)]
pub struct RecorderHandle {
    rec: Option<Recorder>,
    /// Where it writes: pushed to the store at `close`, for an `s3://` path.
    target: Option<Target>,
    record_infos: bool,
    hooks: Option<Hooks>,
    /// Row layouts, for packing numpy values without a Python call.
    ol: Layout,
    al: Layout,
    /// What the writer recorded, once closed (`episodes` still answers then).
    closed: Option<u64>,
}

/// The Python callables `wrapped_step` uses: the env's `step`, the packers for values
/// the fast path does not take, and the info serializer.
struct Hooks {
    env_step: Py<PyAny>,
    pack_act: Py<PyAny>,
    pack_obs: Py<PyAny>,
    dump_info: Py<PyAny>,
}

fn parse_info(text: Option<&str>) -> PyResult<Option<Info>> {
    text.map(|t| serde_json::from_str::<Info>(t).map_err(|e| input_error(format!("info is not a JSON object: {e}")))).transpose()
}

#[pymethods]
impl RecorderHandle {
    /// Creates the dataset at `path` for an env with these spaces (Minari's space JSON).
    #[new]
    #[pyo3(signature = (path, env_id, observation_space, action_space, max_episode_steps=None, algorithm="python", record_infos=false, max_buffer_steps=None, max_buffer_episodes=None, frame_media=None, append=false, gymnasium_spec=None, agents=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: PathBuf,
        env_id: String,
        observation_space: &str,
        action_space: &str,
        max_episode_steps: Option<u64>,
        algorithm: &str,
        record_infos: bool,
        max_buffer_steps: Option<usize>,
        max_buffer_episodes: Option<usize>,
        frame_media: Option<String>,
        append: bool,
        gymnasium_spec: Option<String>,
        agents: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let observation_space = Space::from_json(observation_space).map_err(|e| input_error(format!("observation space: {e}")))?;
        let action_space = Space::from_json(action_space).map_err(|e| input_error(format!("action space: {e}")))?;
        let spec = EnvSpec {
            id: env_id,
            observation_space,
            action_space,
            max_episode_steps,
            render_fps: None,
            reward_threshold: None,
            gymnasium_spec,
            agents,
        };
        let d = WriterConfig::default();
        let cfg = WriterConfig {
            record_infos,
            max_buffer_steps: max_buffer_steps.or(d.max_buffer_steps),
            max_buffer_episodes: max_buffer_episodes.or(d.max_buffer_episodes),
            frame_media: frame_media.unwrap_or(d.frame_media.clone()),
            // Episodes come one at a time from the Python thread: sending must not wake the writer.
            linger: true,
            ..d
        };
        let config = serde_json::json!({"source": "rollway.DataCollector", "record_infos": record_infos});
        // On an object store the collector writes a work directory whose shards are pushed as they commit.
        let refusal = format!(
            "{} already holds a dataset: DataCollector records into a new one; pass append=True to add a run to it",
            path.display()
        );
        let want = if append { Want::Append } else { Want::New { refusal } };
        let target = Target::open(&path, want).py()?;
        let writer = DatasetWriter::create(target.dir(), &spec, algorithm, 0, config, cfg)
            .map_err(|e| crate::errors::to_py(anyhow::Error::from(e).context(format!("creating {}", path.display()))))?;
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let rec = Some(Recorder::new(writer, ol.clone(), al.clone()));
        Ok(RecorderHandle { rec, target: Some(target), record_infos, hooks: None, ol, al, closed: None })
    }

    /// Starts an episode at its reset observation (packed row), truncating an unfinished one.
    #[pyo3(signature = (seed, obs, info=None))]
    fn begin(&mut self, seed: u64, obs: &[u8], info: Option<&str>) -> PyResult<()> {
        let info = if self.record_infos { parse_info(info)? } else { None };
        self.open()?.begin(seed, obs, info).py()
    }

    /// Sets what `wrapped_step` calls: the env's `step`, the two packers, the info serializer.
    fn bind(&mut self, env_step: Py<PyAny>, pack_act: Py<PyAny>, pack_obs: Py<PyAny>, dump_info: Py<PyAny>) {
        self.hooks = Some(Hooks { env_step, pack_act, pack_obs, dump_info });
    }

    /// `DataCollector.step` in one call: steps the env, records the step, returns the
    /// env's own 5-tuple. Arrays of the space's dtype and shape (and ints for Discrete)
    /// are read in place; anything else goes through the Python packers.
    fn wrapped_step<'py>(&mut self, py: Python<'py>, action: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let h = self.hooks.as_ref().ok_or_else(|| input_error("the DataCollector is not bound to an env"))?;
        let out = h.env_step.bind(py).call1((&action,))?;
        let Stepped { obs, reward, terminated, truncated, info } = stepped(&out)?;
        let (mut act_row, mut obs_row) = (Vec::new(), Vec::new());
        if !fast_row(&self.al, &action, &mut act_row) {
            act_row = h.pack_act.bind(py).call1((&action,))?.extract::<Vec<u8>>()?;
        }
        if !fast_row(&self.ol, &obs, &mut obs_row) {
            obs_row = h.pack_obs.bind(py).call1((&obs,))?.extract::<Vec<u8>>()?;
        }
        let info = if self.record_infos { Some(h.dump_info.bind(py).call1((info,))?.extract::<String>()?) } else { None };
        let info = parse_info(info.as_deref())?;
        self.open()?.step(&act_row, &obs_row, &StepOutcome { reward, terminated, truncated }, info).py()?;
        Ok(out)
    }

    /// Commits every finished episode so far.
    fn save(&mut self, py: Python<'_>) -> PyResult<()> {
        let rec = self.open()?;
        py.detach(|| rec.save()).py()
    }

    /// Episodes recorded so far.
    #[getter]
    fn episodes(&self) -> u64 {
        self.rec.as_ref().map_or(self.closed.unwrap_or(0), Recorder::episodes)
    }

    /// Truncates the unfinished episode, commits and closes; returns
    /// (shards, episodes, steps, bytes) written. A second call does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<Option<(u64, u64, u64, u64)>> {
        let Some(rec) = self.rec.take() else { return Ok(None) };
        let s = py.detach(|| rec.close()).py()?;
        self.closed = Some(s.episodes);
        if let Some(target) = self.target.take() {
            py.detach(|| target.finish()).py()?;
        }
        Ok(Some((s.shards, s.episodes, s.steps, s.bytes)))
    }
}

impl RecorderHandle {
    fn open(&mut self) -> PyResult<&mut Recorder> {
        self.rec.as_mut().ok_or_else(|| input_error("the DataCollector is closed"))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RecorderHandle>()
}
