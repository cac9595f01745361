//! `Collector`: Minari's `DataCollector` semantics in Rust. Wrap any env; every
//! `reset`/`step` is recorded; `reset` on an unfinished episode truncates it;
//! finished episodes go to the dataset writer (committed in the background).

use rollway_core::{Env, EpisodeResult, Info, Layout, RowMut, RowRef, Rows, Status, StepOutcome, Trajectory, Value};

use crate::{DatasetWriter, Result, WriteStats};

/// Amends the info recorded for a step (Minari's `StepDataCallback`).
pub type StepCallback = Box<dyn FnMut(&StepOutcome, &mut Info) + Send>;
/// Extra per-episode metadata, stored under the final info's `episode_metadata`
/// (Minari's `EpisodeMetadataCallback`).
pub type EpisodeCallback = Box<dyn FnMut(&EpisodeResult) -> Info + Send>;

/// Records an env's episodes into a dataset.
pub struct Collector {
    env: Box<dyn Env>,
    writer: DatasetWriter,
    ol: Layout,
    al: Layout,
    obs: Rows,
    act: Rows,
    cur: Option<EpisodeResult>,
    done: bool,
    next_index: u64,
    auto_seed: u64,
    on_step: Option<StepCallback>,
    on_episode: Option<EpisodeCallback>,
}

impl Collector {
    /// Wraps `env`, writing into `writer`.
    pub fn new(env: Box<dyn Env>, writer: DatasetWriter) -> Collector {
        let spec = env.spec().clone();
        let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
        let (obs, act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
        let auto_seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Collector { env, writer, ol, al, obs, act, cur: None, done: false, next_index: 0, auto_seed, on_step: None, on_episode: None }
    }

    /// Sets the step callback.
    pub fn with_step_callback(mut self, f: StepCallback) -> Self {
        self.on_step = Some(f);
        self
    }

    /// Sets the episode metadata callback.
    pub fn with_episode_callback(mut self, f: EpisodeCallback) -> Self {
        self.on_episode = Some(f);
        self
    }

    /// Starts an episode; an unfinished one is truncated and recorded first. Without a
    /// seed a fresh one is drawn (and recorded), as Minari does.
    pub fn reset(&mut self, seed: Option<u64>) -> Result<Value> {
        self.end_episode(true)?;
        let seed = seed.unwrap_or_else(|| {
            self.auto_seed = rollway_core::seed::derive_seed(self.auto_seed, 1);
            self.auto_seed >> 1
        });
        self.env.reset(Some(seed), None, RowMut::new(&self.ol, self.obs.row_mut(0)))?;
        let traj = Trajectory { obs: self.obs.row(0).to_vec(), infos: vec![self.env.info()], ..Default::default() };
        self.cur = Some(EpisodeResult {
            index: self.next_index,
            seed,
            length: 0,
            ret: 0.0,
            status: Status::Truncated,
            labels: vec![],
            info: Info::new(),
            worker: 0,
            attempt: 1,
            wall_ms: 0.0,
            error: None,
            trajectory: Some(Box::new(traj)),
        });
        self.done = false;
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
        if self.cur.is_none() || self.done {
            return Err(rollway_core::Error::Env { env: self.env.spec().id.clone(), message: "step called before reset (or after the episode ended)".into() }.into());
        }
        let out = self.env.step(RowRef::new(&self.al, self.act.row(0)), RowMut::new(&self.ol, self.obs.row_mut(0)))?;
        let mut info = self.env.info();
        if let Some(f) = &mut self.on_step {
            f(&out, &mut info);
        }
        let ep = self.cur.as_mut().expect("checked above");
        let t = ep.trajectory.as_mut().expect("collector episodes carry data");
        t.obs.extend_from_slice(self.obs.row(0));
        t.actions.extend_from_slice(self.act.row(0));
        t.rewards.push(out.reward);
        t.terminations.push(out.terminated);
        t.truncations.push(out.truncated);
        t.infos.push(info);
        ep.length += 1;
        ep.ret += out.reward;
        if out.terminated || out.truncated {
            ep.status = if out.terminated { Status::Terminated } else { Status::Truncated };
            self.done = true;
            self.end_episode(false)?;
        }
        Ok(out)
    }

    /// Sends the current episode to the writer; `truncate` marks an unfinished one truncated.
    fn end_episode(&mut self, truncate: bool) -> Result<()> {
        let Some(mut ep) = self.cur.take() else { return Ok(()) };
        if ep.length == 0 {
            // Reset twice in a row: nothing happened, nothing to record.
            return Ok(());
        }
        if truncate && !self.done {
            if let Some(t) = ep.trajectory.as_mut() {
                *t.truncations.last_mut().expect("length > 0") = true;
            }
            ep.status = Status::Truncated;
        }
        ep.info = ep.trajectory.as_ref().and_then(|t| t.infos.last().cloned()).unwrap_or_default();
        if let Some(f) = &mut self.on_episode {
            let extra = f(&ep);
            ep.info.insert("episode_metadata", serde_json::Value::Object(extra.0));
        }
        self.next_index += 1;
        self.writer.write(ep)
    }

    /// Commits every finished episode so far.
    pub fn save(&mut self) -> Result<()> {
        self.writer.flush()
    }

    /// Truncates and records the unfinished episode, commits, and closes the dataset.
    pub fn close(mut self) -> Result<WriteStats> {
        self.end_episode(true)?;
        let Collector { writer, .. } = self;
        writer.finish()
    }
}
