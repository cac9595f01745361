//! `Collector`: Minari's `DataCollector` semantics in Rust. Wrap any env; every
//! `reset`/`step` is recorded; `reset` on an unfinished episode truncates it;
//! finished episodes go to the dataset writer (committed in the background). The
//! episode rules themselves are [`crate::Recorder`]'s, shared with Python hosts.

use rollway_core::{Env, Info, Layout, RowMut, RowRef, Rows, StepOutcome, Value};

use crate::recorder::{EpisodeCallback, Recorder};
use crate::{DatasetWriter, Result, WriteStats};

/// Amends the info recorded for a step (Minari's `StepDataCallback`).
pub type StepCallback = Box<dyn FnMut(&StepOutcome, &mut Info) + Send>;

/// Records an env's episodes into a dataset.
pub struct Collector {
    env: Box<dyn Env>,
    rec: Recorder,
    ol: Layout,
    al: Layout,
    obs: Rows,
    act: Rows,
    auto_seed: u64,
    on_step: Option<StepCallback>,
}

impl Collector {
    /// Wraps `env`, writing into `writer`.
    pub fn new(env: Box<dyn Env>, writer: DatasetWriter) -> Collector {
        let spec = env.spec().clone();
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let (obs, act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let auto_seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let rec = Recorder::new(writer, ol.clone(), al.clone());
        Collector { env, rec, ol, al, obs, act, auto_seed, on_step: None }
    }

    /// Sets the step callback.
    pub fn with_step_callback(mut self, f: StepCallback) -> Self {
        self.on_step = Some(f);
        self
    }

    /// Sets the episode metadata callback.
    pub fn with_episode_callback(mut self, f: EpisodeCallback) -> Self {
        self.rec.set_episode_callback(f);
        self
    }

    /// Starts an episode; an unfinished one is truncated and recorded first. Without a
    /// seed a fresh one is drawn (and recorded), as Minari does.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<Value> {
        self.rec.end(true)?;
        let seed = seed.unwrap_or_else(|| {
            self.auto_seed = rollway_core::seed::derive_seed(self.auto_seed, 1);
            self.auto_seed >> 1
        });
        self.env.reset(Some(seed), None, RowMut::new(&self.ol, self.obs.row_mut(0)))?;
        self.rec.begin(seed, self.obs.row(0), Some(self.env.info()))?;
        Ok(self.ol.read_value(self.obs.row(0)))
    }

    /// Steps with an owned action value.
    pub fn step(&mut self, action: &Value) -> Result<(Value, StepOutcome)> {
        self.al.write_value(action, self.act.row_mut(0))?;
        let out = self.step_row()?;
        Ok((self.ol.read_value(self.obs.row(0)), out))
    }

    /// Steps with a Discrete action (convenience for tests and simple envs).
    pub fn step_discrete(&mut self, a: i64) -> Result<StepOutcome> {
        self.act.row_mut(0)[..8].copy_from_slice(&a.to_ne_bytes());
        self.step_row()
    }

    fn step_row(&mut self) -> Result<StepOutcome> {
        if !self.rec.in_episode() {
            // Checked before the env steps: a finished env must not be stepped.
            return Err(rollway_core::Error::Env {
                env: self.env.spec().id.clone(),
                message: "step called before reset (or after the episode ended)".into(),
            }
            .into());
        }
        let out = self.env.step(RowRef::new(&self.al, self.act.row(0)), RowMut::new(&self.ol, self.obs.row_mut(0)))?;
        let mut info = self.env.info();
        if let Some(f) = &mut self.on_step {
            f(&out, &mut info);
        }
        self.rec.step(self.act.row(0), self.obs.row(0), &out, Some(info))?;
        Ok(out)
    }

    /// Commits every finished episode so far.
    pub fn save(&mut self) -> Result<()> {
        self.rec.save()
    }

    /// Truncates and records the unfinished episode, commits, and closes the dataset.
    pub fn close(self) -> Result<WriteStats> {
        self.rec.close()
    }
}
