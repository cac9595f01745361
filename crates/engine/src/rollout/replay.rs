//! The dataset a rollout records into (`out`): created, joined as one of many
//! writers, or with `resume` continued in a new run whose env slots number and seed
//! their episodes on from what the replay committed.

use rollway_core::EnvSpec;
use rollway_store::{DatasetWriter, IndexEntry, RunInfo, WriterConfig};

use crate::error::{InputContext, Result};
use crate::rollout::request::{stored, RolloutRequest};
use crate::target::{Target, Want};

/// The dataset writer of `out`: a new dataset (or, with `resume`, a new run
/// continuing the one there), committing at least every `commit_every` seconds so
/// that a follow-mode loader sees episodes soon; or, with `join`, one of many
/// writers of a run already there.
pub(crate) fn open(request: &RolloutRequest, spec: &EnvSpec, slots: u64) -> Result<OpenedOut> {
    let Some(at) = &request.out else { return Ok(OpenedOut::default()) };
    let d = WriterConfig::default();
    let frame_media = request.frame_media.clone().unwrap_or_else(|| d.frame_media.clone());
    let wc = WriterConfig { max_buffer_age: request.commit_age()?, frame_media, ..d };
    let said = || format!("out={}", at.display());
    let want = match (&request.join, request.resume) {
        (Some((_, id)), _) => Want::Join { id: id.clone() },
        (None, true) => Want::Append,
        // Appending would restart the versions at 0 beside the last run's: a staleness
        // bound counted from the new learner's version would keep the old run's data.
        (None, false) => Want::New {
            refusal: format!("{}: already holds a dataset; a rollout records into a new one (resume=True continues it)", said()),
        },
    };
    let target = Target::open(at, want)?;
    let (dir, seed) = (target.dir(), request.seed);
    let config = || serde_json::json!({ "rollout": stored(request) });
    let (w, resumed) = if let Some((run, id)) = &request.join {
        (DatasetWriter::join(dir, *run, id, wc).input(said)?, None)
    } else if request.resume {
        let check = |last: Option<&RunInfo>, entries: &[IndexEntry]| continued(last, entries, seed, slots);
        let (w, resumed) = DatasetWriter::continue_runs(dir, spec, ("policy", seed, config()), wc, check).input(said)?;
        (w, Some(resumed))
    } else {
        (DatasetWriter::create(dir, spec, "policy", seed, config(), wc).input(said)?, None)
    };
    Ok(OpenedOut { writer: Some(w), target: Some(target), resumed })
}

/// The dataset a rollout records into, as opened.
#[derive(Default)]
pub(crate) struct OpenedOut {
    pub(crate) writer: Option<DatasetWriter>,
    pub(crate) target: Option<Target>,
    /// Resumed: what the replay held.
    pub(crate) resumed: Option<Resumed>,
}

/// What a resumed rollout found in its replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resumed {
    /// The episodes each slot of the stream has taken (`episode_ids`' slots of them).
    pub starts: Vec<u64>,
    /// Committed episodes, of every earlier life.
    pub episodes: u64,
    /// Their steps.
    pub steps: u64,
}

/// How far each of a recorded rollout's `slots` env slots got: one past the highest
/// episode it committed (its run index, `(k × slots + slot)`), so that the resumed
/// rollout numbers and seeds its episodes as the unbroken stream would, reusing only
/// numbers no committed episode has (those of episodes lost with the last life).
/// Refuses a dataset whose last run is no rollout, or one of another seed or slot count.
fn continued(last: Option<&RunInfo>, entries: &[IndexEntry], seed: u64, slots: u64) -> std::result::Result<Resumed, String> {
    let mut starts = vec![0; slots as usize];
    let steps = entries.iter().filter(|e| e.status != rollway_core::Status::GivenUp).map(|e| e.length).sum();
    let Some(last) = last else { return Ok(Resumed { starts, episodes: 0, steps: 0 }) };
    if last.config.get("rollout").is_none() {
        return Err(format!("its last run ({}) was not recorded by a rollout; resume=True continues a rollout's replay", last.run));
    }
    let was = last.rollout_slots().map(|(slots, _)| slots);
    if last.seed != seed || was != Some(slots) {
        return Err(format!(
            "resume=True continues the rollout recorded there with seed={} over {} env slots (num_envs, times num_actors on Ray); \
             this one has seed={seed} over {slots}",
            last.seed,
            was.map_or("unknown".into(), |w| w.to_string())
        ));
    }
    for e in entries.iter().filter(|e| e.episode_id >= last.first_episode_id) {
        let i = e.episode_id - last.first_episode_id;
        let s = &mut starts[(i % slots) as usize];
        *s = (*s).max(i / slots + 1);
    }
    Ok(Resumed { starts, episodes: entries.len() as u64, steps })
}
