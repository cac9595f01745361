//! A run's lives: its first start and each resume, each to a clean end or a kill.
//!
//! A kill leaves no word of itself: the killed process writes nothing. So a life is
//! written when it starts ([`begin`]), and the next resume, finding the last life
//! without an end, marks it killed ([`killed`]), with the wall time it is known to
//! have run: from its start to the last episode it committed (each index entry says
//! when the writer took it). A clean end ([`ended_clean`]) stores the run's own wall
//! time. `rollway report` shows every life, so a resumed run does not read as one
//! clean run of its last life's length.

use crate::format::{IndexEntry, RunInfo};
pub use crate::format::{Life, LifeEnd};

/// Now, in Unix seconds.
pub fn now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// A new life of `run`, starting `at`.
pub fn begin(run: &mut RunInfo, at: f64) {
    run.lives.push(Life { started_at: at, ended: None, seconds: None });
}

/// Marks `run`'s last life killed when it has no end, with the wall time its last
/// committed episode (of `entries`, the dataset's) proves it ran.
pub fn killed(run: &mut RunInfo, entries: &[IndexEntry]) {
    let id = run.run;
    let Some(life) = run.lives.last_mut().filter(|l| l.ended.is_none()) else { return };
    let last = entries.iter().filter(|e| e.run == id).filter_map(|e| e.ended_at).filter(|&t| t >= life.started_at).reduce(f64::max);
    life.ended = Some(LifeEnd::Killed);
    life.seconds = last.map(|t| t - life.started_at);
}

/// Marks `run`'s last life ended cleanly after `seconds` (else the time since it started).
pub fn ended_clean(run: &mut RunInfo, seconds: Option<f64>) {
    if let Some(life) = run.lives.last_mut().filter(|l| l.ended.is_none()) {
        life.ended = Some(LifeEnd::Clean);
        life.seconds = Some(seconds.unwrap_or_else(|| now() - life.started_at));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> RunInfo {
        serde_json::from_value(serde_json::json!({"run": 0, "agent": "random", "seed": 0, "first_episode_id": 0, "config": {}})).unwrap()
    }

    fn entry(run: u32, ended_at: Option<f64>) -> IndexEntry {
        let mut e: IndexEntry = serde_json::from_value(serde_json::json!({
            "episode_id": 0, "run": run, "run_index": 0, "seed": 0, "shard": 0, "row_start": 0, "rows": 0, "length": 0,
            "return": 0.0, "status": "terminated", "worker": 0, "attempt": 0, "wall_ms": 0.0
        }))
        .unwrap();
        e.ended_at = ended_at;
        e
    }

    #[test]
    fn a_killed_life_runs_to_its_last_commit_and_a_clean_one_to_its_end() {
        let mut r = run();
        begin(&mut r, 100.0);
        // Another run's later episode, and an episode from before this life, say nothing of it.
        killed(&mut r, &[entry(0, Some(104.5)), entry(1, Some(200.0)), entry(0, Some(99.0)), entry(0, None)]);
        assert_eq!(r.lives[0], Life { started_at: 100.0, ended: Some(LifeEnd::Killed), seconds: Some(4.5) });
        begin(&mut r, 110.0);
        killed(&mut r, &[entry(0, Some(104.5))]);
        assert_eq!(r.lives[1].seconds, None, "killed before its first commit");
        begin(&mut r, 120.0);
        ended_clean(&mut r, Some(7.0));
        ended_clean(&mut r, Some(9.0));
        assert_eq!(r.lives[2], Life { started_at: 120.0, ended: Some(LifeEnd::Clean), seconds: Some(7.0) }, "an ended life stays ended");
        killed(&mut r, &[]);
        assert_eq!(r.lives[2].ended, Some(LifeEnd::Clean), "a clean life is never marked killed");
    }

    #[test]
    fn lives_round_trip_and_older_metadata_has_none() {
        let mut r = run();
        assert!(r.lives.is_empty());
        assert!(!serde_json::to_string(&r).unwrap().contains("lives"), "no key in datasets without lives");
        begin(&mut r, 1.0);
        let back: RunInfo = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.lives, r.lives);
    }
}
