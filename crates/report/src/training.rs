//! The training section: a dataset a rollout recorded (a learner's replay) drawn as
//! a trainer reads a run, by policy version. Each episode's index entry carries the
//! oldest and newest policy versions that acted in it; an episode counts for the
//! newest, the version that chose its last actions. Per version: the learning curve
//! (mean return with ± 1 standard deviation), the mean length, and how many episodes
//! and steps it acted; beside them, what the rollouts' stored summaries say of lag,
//! dropped steps and env faults. Cost: one pass over the index.

use std::collections::BTreeMap;

use rollway_core::Status;
use rollway_store::{Dataset, IndexEntry};

use crate::html::{cards, note};
use crate::svg::{self, Series};

/// Per policy version: (episodes, steps, sum of returns, sum of squared returns, sum of lengths).
type Tally = BTreeMap<u64, (u64, u64, f64, f64, u64)>;

fn tally(entries: &[&IndexEntry]) -> Tally {
    let mut by = Tally::new();
    for e in entries.iter().filter(|e| e.status != Status::GivenUp) {
        let Some([_, newest]) = e.policy_version else { continue };
        let t = by.entry(newest).or_default();
        *t = (t.0 + 1, t.1 + e.length, t.2 + e.ret, t.3 + e.ret * e.ret, t.4 + e.length);
    }
    by
}

fn series(name: &str, points: Vec<(f64, f64)>) -> Series {
    Series { name: name.into(), points }
}

/// A return curve with its spread: from `(x, episodes, sum of returns, sum of squared
/// returns)` per point, the lines of the mean and of ± 1 standard deviation.
pub(crate) fn mean_and_spread(points: impl IntoIterator<Item = (f64, f64, f64, f64)>) -> [Series; 3] {
    let (mut mean, mut lo, mut hi) = (vec![], vec![], vec![]);
    for (x, n, sum, sq) in points {
        let m = sum / n;
        let sd = (sq / n - m * m).max(0.0).sqrt();
        mean.push((x, m));
        lo.push((x, m - sd));
        hi.push((x, m + sd));
    }
    [series("mean", mean), series("− 1 std", lo), series("+ 1 std", hi)]
}

/// The section's markup, or `None` for a dataset no rollout recorded.
pub fn training(ds: &Dataset, entries: &[&IndexEntry]) -> Option<String> {
    let by = tally(entries);
    if by.is_empty() {
        return None;
    }
    let (mut length, mut episodes, mut steps) = (vec![], vec![], vec![]);
    for (&v, &(n, s, _, _, len)) in &by {
        let (x, n_f) = (v as f64, n as f64);
        length.push((x, len as f64 / n_f));
        episodes.push((x, n_f));
        steps.push((x, s as f64));
    }
    let mixed = entries.iter().filter(|e| e.policy_version.is_some_and(|[a, b]| a != b)).count();
    let (first, last) = (by.keys().next().copied().unwrap_or(0), by.keys().last().copied().unwrap_or(0));
    let mut facts = vec![
        ("policy versions", format!("{first} – {last} ({} acted in a finished episode)", by.len())),
        ("episodes acted by two versions or more", mixed.to_string()),
    ];
    for r in ds.metadata().runs.iter().filter_map(|r| r.summary.as_ref()).filter(|s| s["kind"] == "rollout") {
        let n = |k: &str| r.get(k).map_or_else(|| "–".into(), |v| v.to_string());
        facts.push((
            "a rollout: fragments, lag max, dropped steps, env faults",
            format!("{}, {}, {}, {}", n("fragments"), n("lag_max"), n("dropped_steps"), n("env_faults")),
        ));
    }
    let mut out = cards(&facts);
    out += &note("Each episode counts for the newest policy version that acted in it. A run without a stored summary (a learner killed before close) has no lag figures here.");
    out += r#"<div class="plots">"#;
    out += &svg::lines(
        "Return by policy version (mean, ± 1 std)",
        "policy version",
        "return",
        &mean_and_spread(by.iter().map(|(&v, &(n, _, sum, sq, _))| (v as f64, n as f64, sum, sq))),
    );
    out += &svg::lines("Episode length by policy version", "policy version", "steps", &[series("mean length", length)]);
    out += &svg::lines("Episodes by policy version", "policy version", "episodes", &[series("episodes", episodes)]);
    out += &svg::lines("Steps by policy version", "policy version", "steps", &[series("steps", steps)]);
    Some(out + "</div>")
}
