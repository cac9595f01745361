//! `Recorder`: episodes assembled step by step and handed to the dataset writer,
//! with Minari's `DataCollector` rules: a `begin` on an unfinished episode truncates
//! it, an episode that never stepped is not recorded, and the episode ends on the
//! step that terminates or truncates it. [`crate::Collector`] drives one from a
//! Rust env; the Python package's `DataCollector` drives one from a Gymnasium env.
//!
//! Steps arrive as rows in the dataset's layout (checked against the spaces, so a
//! wrong shape or an out-of-range action is an error naming the step, not a
//! corrupt dataset); everything else is appending to vectors.

use rollway_core::{EpisodeResult, Info, Layout, Status, StepOutcome, Trajectory};

use crate::{DatasetWriter, Result, WriteStats};

/// Extra per-episode metadata, stored under the final info's `episode_metadata`
/// (Minari's `EpisodeMetadataCallback`).
pub type EpisodeCallback = Box<dyn FnMut(&EpisodeResult) -> Info + Send>;

/// Builds episodes from steps and writes them (see the module docs).
pub struct Recorder {
    writer: DatasetWriter,
    ol: Layout,
    al: Layout,
    cur: Option<EpisodeResult>,
    done: bool,
    next_index: u64,
    on_episode: Option<EpisodeCallback>,
}

impl Recorder {
    /// Records into `writer`, whose dataset's spaces give the row layouts.
    pub fn new(writer: DatasetWriter, ol: Layout, al: Layout) -> Recorder {
        Recorder { writer, ol, al, cur: None, done: false, next_index: 0, on_episode: None }
    }

    /// Sets the episode metadata callback.
    pub fn set_episode_callback(&mut self, f: EpisodeCallback) {
        self.on_episode = Some(f);
    }

    /// True between `begin` and the step that ends the episode.
    pub fn in_episode(&self) -> bool {
        self.cur.is_some() && !self.done
    }

    /// Episodes handed to the writer so far.
    pub fn episodes(&self) -> u64 {
        self.next_index
    }

    /// Starts an episode at its reset observation; an unfinished one is truncated and
    /// recorded first. `info` is the reset info (`None` when infos are not kept).
    pub fn begin(&mut self, seed: u64, obs: &[u8], info: Option<Info>) -> Result<()> {
        self.end(true)?;
        self.check(&self.ol, obs, "reset observation", 0)?;
        let traj = Trajectory { obs: obs.to_vec(), infos: info.into_iter().collect(), ..Default::default() };
        self.cur = Some(EpisodeResult {
            run_index: self.next_index,
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
        Ok(())
    }

    /// Appends a step (the action taken, what it led to); returns true when it ended
    /// the episode, which is then recorded.
    pub fn step(&mut self, action: &[u8], obs: &[u8], out: &StepOutcome, info: Option<Info>) -> Result<bool> {
        let Some(step) = self.cur.as_ref().filter(|_| !self.done).map(|e| e.length + 1) else {
            let message = "step called before reset (or after the episode ended)".into();
            return Err(crate::Error::BadEpisode { episode: self.next_index, message });
        };
        self.check(&self.al, action, "action", step)?;
        self.check(&self.ol, obs, "observation", step)?;
        let ep = self.cur.as_mut().expect("checked above");
        let t = ep.trajectory.as_mut().expect("recorder episodes carry data");
        t.obs.extend_from_slice(obs);
        t.actions.extend_from_slice(action);
        t.rewards.push(out.reward);
        t.terminations.push(out.terminated);
        t.truncations.push(out.truncated);
        t.infos.extend(info);
        ep.length += 1;
        ep.ret += out.reward;
        if out.terminated || out.truncated {
            ep.status = if out.terminated { Status::Terminated } else { Status::Truncated };
            self.done = true;
            self.end(false)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn check(&self, layout: &Layout, row: &[u8], what: &str, step: u64) -> Result<()> {
        let space = || layout.space().describe();
        let message = if row.len() != layout.row_bytes() {
            format!("{what} at step {step} has {} bytes, the space {} takes {}", row.len(), space(), layout.row_bytes())
        } else if !layout.contains_row(row) {
            format!("{what} at step {step} is not in the space {}", space())
        } else {
            return Ok(());
        };
        Err(crate::Error::BadEpisode { episode: self.next_index, message })
    }

    /// Sends the current episode to the writer; `truncate` marks an unfinished one truncated.
    pub fn end(&mut self, truncate: bool) -> Result<()> {
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
        self.end(true)?;
        self.writer.finish()
    }
}
