//! The training run over wall time, beside [`crate::training`]'s view by policy
//! version: the run's lives (a resumed rollout adds a run to its replay, so each
//! life of the learner is one, and only a life that closed stored a summary), the
//! learning curve and the throughput by wall time (from each episode's `ended_at`,
//! so a kill shows as a gap), what each actor of a distributed rollout recorded,
//! and, for pixel envs, clips of episodes acted early and late in training.
//!
//! Cost: one pass over the index, plus decoding and encoding the clips' frames
//! (four episodes, as the frames section's own clips).

use std::collections::BTreeMap;

use rollway_core::Status;
use rollway_store::{Dataset, IndexEntry, RunInfo};

use crate::error::Result;
use crate::html::{note, table};
use crate::media::ReportMedia;
use crate::svg::{self, num, Series};

/// Time bins the wall-time plots draw.
const BINS: usize = 50;
/// The throughput's window: this fraction of the run.
const WINDOWS: f64 = 15.0;
/// Episodes shown as clips: the earliest versions' and the latest's.
const CLIPS: usize = 2;

/// The slots of the episode numbering a distributed rollout's runs share, and the envs per actor.
fn actors(run: &RunInfo) -> Option<(u64, u64)> {
    run.rollout_slots().filter(|&(slots, per)| per > 0 && slots > per)
}

/// One row per run: versions, episodes, steps, how it ended.
fn lives(ds: &Dataset, entries: &[&IndexEntry]) -> String {
    let rows: Vec<Vec<String>> = ds
        .metadata()
        .runs
        .iter()
        .map(|r| {
            let mine: Vec<&&IndexEntry> = entries.iter().filter(|e| e.run == r.run).collect();
            let versions = mine.iter().filter_map(|e| e.policy_version);
            let (lo, hi) = versions.fold((u64::MAX, 0), |(lo, hi), [a, b]| (lo.min(a), hi.max(b)));
            let steps: u64 = mine.iter().filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum();
            let rate = r.summary.as_ref().and_then(|s| s.get("steps_per_sec")).and_then(|v| v.as_f64());
            vec![
                r.run.to_string(),
                if lo <= hi { format!("{lo} – {hi}") } else { "–".into() },
                mine.len().to_string(),
                steps.to_string(),
                rate.map_or("–".into(), |r| format!("{r:.0}")),
                if r.summary.is_some() { "closed cleanly".into() } else { "killed (or still running): no summary".into() },
            ]
        })
        .collect();
    table(&["run", "policy versions", "episodes", "steps", "steps/s", "ended"], &rows)
}

/// Return (mean, ± 1 std) in [`BINS`] bins of wall time, and env steps per second
/// over a sliding window of a [`WINDOWS`]th of the run: episodes of equal length end
/// together (8 envs × 200 steps, every few seconds), so narrow bins would draw their
/// rhythm instead of the rate.
fn by_time(entries: &[&IndexEntry]) -> Option<String> {
    let mut timed: Vec<(f64, f64, u64)> =
        entries.iter().filter(|e| e.status != Status::GivenUp).filter_map(|e| e.ended_at.map(|t| (t, e.ret, e.length))).collect();
    timed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (t0, span) = (timed.first()?.0, timed.last()?.0 - timed.first()?.0);
    if span <= 0.0 {
        return None;
    }
    let width = span / BINS as f64;
    let mut bins = vec![(0u64, 0.0f64, 0.0f64); BINS];
    for &(t, ret, _) in &timed {
        let b = &mut bins[(((t - t0) / width) as usize).min(BINS - 1)];
        *b = (b.0 + 1, b.1 + ret, b.2 + ret * ret);
    }
    let returns =
        bins.iter().enumerate().filter(|(_, b)| b.0 > 0).map(|(i, &(n, sum, sq))| ((i as f64 + 0.5) * width / 60.0, n as f64, sum, sq));
    let window = span / WINDOWS;
    let rate = (1..=BINS)
        .map(|i| {
            let at = t0 + span * i as f64 / BINS as f64;
            let from = (at - window).max(t0);
            let steps: u64 = timed.iter().filter(|x| x.0 > from && x.0 <= at).map(|x| x.2).sum();
            ((at - t0) / 60.0, steps as f64 / (at - from))
        })
        .collect();
    let s = |name: &str, points| Series { name: name.into(), points };
    let mut out = svg::lines(
        "Return by wall time (mean, ± 1 std)",
        "minutes since the first episode ended",
        "return",
        &crate::training::mean_and_spread(returns),
    );
    let xlabel = format!("minutes (each point: the last 1/{WINDOWS} of the run)");
    out += &svg::lines("Throughput over time (steps recorded)", &xlabel, "env steps / s", &[s("steps/s", rate)]);
    Some(out)
}

/// Steps and episodes per actor of a distributed rollout (episode ids say whose slot ended them).
fn per_actor(ds: &Dataset, entries: &[&IndexEntry]) -> Option<String> {
    let runs = &ds.metadata().runs;
    let (slots, per) = runs.last().and_then(actors)?;
    let mut by: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.status != Status::GivenUp) {
        let Some(first) = runs.get(e.run as usize).map(|r| r.first_episode_id) else { continue };
        let a = ((e.episode_id - first) % slots) / per;
        let t = by.entry(a).or_default();
        *t = (t.0 + 1, t.1 + e.length);
    }
    let labels: Vec<String> = by.keys().map(|a| format!("actor {a}")).collect();
    let steps: Vec<f64> = by.values().map(|v| v.1 as f64).collect();
    let episodes: Vec<f64> = by.values().map(|v| v.0 as f64).collect();
    Some(
        svg::bars("Steps per actor", "actor", "env steps", &labels, &steps)
            + &svg::bars("Episodes per actor", "actor", "episodes", &labels, &episodes),
    )
}

/// The markup: lives, wall-time plots, actors, and clips early vs late.
pub fn over_time(ds: &Dataset, entries: &[&IndexEntry], m: &ReportMedia) -> Result<String> {
    let mut out = String::from("<h3>The run's lives</h3>");
    out += &note("In a replay, each run is a life of the learner (a resumed rollout adds one); in an evaluation dataset (Rollout.evaluate), each run is one evaluation.");
    out += &lives(ds, entries);
    let plots = [by_time(entries), per_actor(ds, entries)].into_iter().flatten().collect::<String>();
    if plots.is_empty() {
        out += &note("No episode carries the time it ended (a dataset from before rollway kept it), so nothing is drawn by wall time.");
    } else {
        out += &format!(r#"<div class="plots">{plots}</div>"#);
    }
    let Some(key) = ds.metadata().frame_keys.first() else { return Ok(out) };
    let mut acted: Vec<&IndexEntry> =
        entries.iter().copied().filter(|e| e.status != Status::GivenUp && e.rows > 0 && e.policy_version.is_some()).collect();
    acted.sort_by_key(|e| (e.policy_version.map(|[_, b]| b), e.episode_id));
    let early = acted.iter().take(CLIPS);
    let late = acted.iter().skip(CLIPS.max(acted.len().saturating_sub(CLIPS)));
    let chosen: Vec<&IndexEntry> = early.chain(late).copied().collect();
    let caption = |e: &IndexEntry| {
        let v = e.policy_version.map_or(0, |[_, b]| b);
        format!("policy version {v} · episode {} · return {} · {} steps", e.episode_id, num(e.ret), e.length)
    };
    out += "<h3>How the agent acts: earliest policy versions, then the latest</h3>";
    out += &crate::gallery::clips(ds, key, &chosen, m, &caption)?;
    Ok(out)
}
