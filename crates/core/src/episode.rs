//! What a finished episode looks like to filters, summaries and recorders.

use crate::Info;
use serde::{Deserialize, Serialize};

/// How an episode ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The MDP reached a terminal state.
    Terminated,
    /// Cut off by the env's time limit or the run's `max_steps`.
    Truncated,
    /// Every attempt failed; no data. Counted, never dropped.
    GivenUp,
}

/// A label an episode earned, and which filter gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Label {
    /// Label name (MineStudio's default is `status`).
    pub label: String,
    /// The filter that gave it, as written by its `describe()`.
    pub filter: String,
}

/// Per-step data of one episode, Gymnasium's convention: T+1 observations
/// (the reset observation first), T actions, rewards and flags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectory {
    /// T+1 observation rows, back to back.
    pub obs: Vec<u8>,
    /// T action rows.
    pub actions: Vec<u8>,
    /// T rewards.
    pub rewards: Vec<f64>,
    /// T termination flags.
    pub terminations: Vec<bool>,
    /// T truncation flags.
    pub truncations: Vec<bool>,
    /// T+1 infos (reset info first) when infos are recorded, else empty.
    pub infos: Vec<Info>,
    /// The agent's recurrent state after each step's action: T rows of `state_width`
    /// floats, when the agent keeps one (VPT's `memory`); empty otherwise.
    pub states: Vec<f32>,
    /// Floats per row of `states` (0: the agent keeps none).
    pub state_width: usize,
    /// Per-step values a training policy returned beside its actions (log-probs,
    /// values, logits), each T rows: recorded as columns of their own.
    pub extras: Vec<StepColumn>,
    /// The policy version that chose each action (T), when a training rollout
    /// recorded the episode; empty otherwise.
    pub versions: Vec<u64>,
}

/// A named per-step float32 column of an episode: T rows of `shape`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepColumn {
    /// Its name (the dataset column is `extras.<name>`).
    pub name: String,
    /// The shape of one row (`[]` for a scalar).
    pub shape: Vec<usize>,
    /// T rows, back to back.
    pub values: Vec<f32>,
}

impl StepColumn {
    /// Floats per row.
    pub fn width(&self) -> usize {
        self.shape.iter().product()
    }
}

impl Trajectory {
    /// Appends row `row` of a batch's `extras` (an agent's per-step outputs) as this
    /// step's: the first call fixes the columns' names and shapes.
    pub fn push_extras(&mut self, extras: &[StepColumn], row: usize) {
        if self.extras.is_empty() {
            self.extras = extras.iter().map(|e| StepColumn { name: e.name.clone(), shape: e.shape.clone(), values: Vec::new() }).collect();
        }
        for (col, e) in self.extras.iter_mut().zip(extras) {
            let w = e.width();
            col.values.extend_from_slice(&e.values[row * w..(row + 1) * w]);
        }
    }

    /// Appends the state the agent left after the latest step (`rewards` already holds
    /// that step). The first non-empty state fixes the width (earlier steps read as
    /// zeros); a later state of another length is cut or zero-filled to it.
    pub fn push_state(&mut self, state: &[f32]) {
        if self.state_width == 0 {
            if state.is_empty() {
                return;
            }
            self.state_width = state.len();
            self.states.resize(self.rewards.len().saturating_sub(1) * state.len(), 0.0);
        }
        let (w, start) = (self.state_width, self.states.len());
        self.states.extend(state.iter().take(w));
        self.states.resize(start + w, 0.0);
    }
}

/// One finished (or given-up) episode.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EpisodeResult {
    /// Episode index in the run (`0..`), the index's `run_index`; `index` in
    /// JSON (`--episodes-json`), as it always was.
    #[serde(rename = "index")]
    pub run_index: u64,
    /// The env seed it was reset with.
    pub seed: u64,
    /// Steps taken.
    pub length: u64,
    /// Sum of rewards.
    #[serde(rename = "return")]
    pub ret: f64,
    /// How it ended.
    pub status: Status,
    /// Labels from filters.
    pub labels: Vec<Label>,
    /// The final info.
    pub info: Info,
    /// Worker that ran the final attempt.
    pub worker: usize,
    /// Attempt number of the final attempt (1 = first try).
    pub attempt: u32,
    /// Wall time of the final attempt, milliseconds.
    pub wall_ms: f64,
    /// The last failure, for given-up episodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per-step data, when the run records steps.
    #[serde(skip)]
    pub trajectory: Option<Box<Trajectory>>,
}

impl EpisodeResult {
    /// A finished episode made from recorded steps (an import, a conversion): its
    /// length and return follow from the trajectory, it terminated when its last
    /// step says so (else it was truncated), and its final info is the last info.
    pub fn from_trajectory(index: u64, seed: u64, t: Trajectory) -> EpisodeResult {
        EpisodeResult {
            run_index: index,
            seed,
            length: t.rewards.len() as u64,
            ret: t.rewards.iter().sum(),
            status: if t.terminations.last() == Some(&true) { Status::Terminated } else { Status::Truncated },
            labels: vec![],
            info: t.infos.last().cloned().unwrap_or_default(),
            worker: 0,
            attempt: 1,
            wall_ms: 0.0,
            error: None,
            trajectory: Some(Box::new(t)),
        }
    }

    /// The fields that depend only on the run seed and episode index (not on
    /// scheduling), as one JSON line: what determinism checks compare.
    pub fn outcome_json(&self) -> String {
        serde_json::json!({
            "index": self.run_index,
            "seed": self.seed,
            "length": self.length,
            "return": self.ret,
            "status": self.status,
            "labels": self.labels,
            "info": self.info,
        })
        .to_string()
    }
}

/// A failed attempt, kept for the summary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Fault {
    /// Episode index.
    pub episode: u64,
    /// Which attempt failed.
    pub attempt: u32,
    /// Worker it ran on (`None` for agent failures, which hit a batch).
    pub worker: Option<usize>,
    /// Panic message or error text.
    pub error: String,
}
