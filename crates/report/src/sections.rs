//! The report's sections that come from the index and the runs' stored summaries.

use std::collections::BTreeMap;

use rollway_core::Status;
use rollway_store::lives::LifeEnd;
use rollway_store::{Dataset, IndexEntry, RunInfo};
use serde_json::Value;

use crate::html::{cards, details, note, t, table};
use crate::svg::{self, num, Series};

fn completed<'a>(entries: &[&'a IndexEntry]) -> Vec<&'a IndexEntry> {
    entries.iter().copied().filter(|e| e.status != Status::GivenUp).collect()
}

fn share(n: usize, of: usize) -> String {
    format!("{:.1}%", 100.0 * n as f64 / of.max(1) as f64)
}

pub fn overview(ds: &Dataset, entries: &[&IndexEntry]) -> String {
    let done = completed(entries);
    let bytes: u64 = ds.shards().iter().flat_map(|s| &s.files).map(|f| f.bytes).sum();
    let labelled = done.iter().filter(|e| !e.labels.is_empty()).count();
    let mut out = cards(&[
        ("episodes", done.len().to_string()),
        ("steps", num(done.iter().map(|e| e.length as f64).sum())),
        ("given up", (entries.len() - done.len()).to_string()),
        ("labelled", format!("{labelled} ({})", share(labelled, done.len()))),
        ("runs", ds.metadata().runs.len().to_string()),
        ("shards", ds.shards().len().to_string()),
        ("on disk", if bytes >= 1_000_000 { format!("{:.1} MB", bytes as f64 / 1e6) } else { format!("{:.0} kB", bytes as f64 / 1e3) }),
    ]);
    for d in ds.damaged() {
        out +=
            &format!(r#"<p class="warn">Damaged shard {} left out: {}: {}</p>"#, d.shard, t(&d.path.display().to_string()), t(&d.message));
    }
    out
}

/// A space's JSON pretty-printed, with long arrays (an image space's bounds hold
/// a value per pixel) cut to their first values and a count.
fn pretty(v: &str) -> String {
    fn shorten(v: Value) -> Value {
        match v {
            Value::Array(a) if a.len() > 12 => {
                let n = a.len();
                let mut head: Vec<Value> = a.into_iter().take(8).map(shorten).collect();
                head.push(Value::String(format!("… {n} values in all")));
                Value::Array(head)
            }
            Value::Array(a) => Value::Array(a.into_iter().map(shorten).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, shorten(v))).collect()),
            v => v,
        }
    }
    match serde_json::from_str::<Value>(v) {
        Ok(j) => serde_json::to_string_pretty(&shorten(j)).unwrap_or_default(),
        Err(_) => v.to_string(),
    }
}

pub fn runs(ds: &Dataset, entries: &[&IndexEntry]) -> String {
    let meta = ds.metadata();
    let env = &meta.env;
    let mut out = table(
        &["env", "max episode steps", "frames", "format"],
        &[vec![
            t(&env.id),
            env.max_episode_steps.map_or("none".into(), |n| n.to_string()),
            if meta.frame_keys.is_empty() { "none".into() } else { t(&format!("{} as {}", meta.frame_keys.join(", "), meta.frame_media)) },
            format!("rollway v{}", meta.format_version),
        ]],
    );
    out += &details("observation space", &pretty(&env.observation_space));
    out += &details("action space", &pretty(&env.action_space));
    let rows: Vec<Vec<String>> = meta
        .runs
        .iter()
        .map(|r| {
            let mine: Vec<&&IndexEntry> = entries.iter().filter(|e| e.run == r.run).collect();
            let s = r.summary.as_ref();
            let f = |k: &str| s.and_then(|s| s[k].as_f64());
            vec![
                r.run.to_string(),
                t(&r.agent),
                r.seed.to_string(),
                id_span(&mine),
                num(mine.iter().map(|e| e.length as f64).sum()),
                wall(r, f("seconds")),
                f("steps_per_sec").map_or("—".into(), |x| format!("{}/s", num(x.round()))),
                t(s.and_then(|s| s["mode"].as_str()).unwrap_or("—")),
                ended_cleanly(r),
            ]
        })
        .collect();
    out += &table(&["run", "agent", "seed", "episodes", "steps", "wall", "steps/s", "mode", "ended cleanly"], &rows);
    out += &lives(&meta.runs);
    for r in &meta.runs {
        out += &details(
            &format!("run {} config (what --resume restarts from)", r.run),
            &serde_json::to_string_pretty(&r.config).unwrap_or_default(),
        );
    }
    out
}

/// A run's wall time: its summary's (its last life's), or, over many lives, the sum
/// of what each is known to have run.
fn wall(r: &RunInfo, last: Option<f64>) -> String {
    if r.lives.len() > 1 {
        let known: f64 = r.lives.iter().filter_map(|l| l.seconds).sum();
        return format!("{known:.2} s over {} lives", r.lives.len());
    }
    last.map_or("—".into(), |x| format!("{x:.2} s"))
}

/// Whether a run ended cleanly, and after how many kills (its lives, where kept).
fn ended_cleanly(r: &RunInfo) -> String {
    let kills = r.lives.iter().filter(|l| l.ended == Some(LifeEnd::Killed)).count();
    match (r.summary.is_some(), kills) {
        (true, 0) => "yes".into(),
        (true, k) => format!("yes, after {k} kill{} (see its lives)", if k == 1 { "" } else { "s" }),
        (false, _) => "no (killed, or still running)".into(),
    }
}

/// Every life of each run that was resumed or killed: when it started (after the
/// run's start), its wall time, and how it ended. A run of one clean life has none.
fn lives(runs: &[RunInfo]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| r.lives.len() > 1 || r.lives.iter().any(|l| l.ended == Some(LifeEnd::Killed)))
        .flat_map(|r| {
            let start = r.lives.first().map_or(0.0, |l| l.started_at);
            r.lives.iter().enumerate().map(move |(i, l)| {
                vec![
                    r.run.to_string(),
                    (i + 1).to_string(),
                    format!("+{:.1} s", l.started_at - start),
                    l.seconds.map_or("—".into(), |x| format!("{x:.2} s")),
                    match l.ended {
                        Some(LifeEnd::Clean) => "cleanly".into(),
                        Some(LifeEnd::Killed) if l.seconds.is_some() => "killed (wall time to its last commit)".into(),
                        Some(LifeEnd::Killed) => "killed before its first commit".into(),
                        None => "running, or killed (no resume since)".into(),
                    },
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    table(&["run", "life", "started", "wall", "ended"], &rows)
}

/// A run's episodes and the ids they span: a resumed rollout's lives share the
/// run's first id, and each goes on from where the last left off, so the span says
/// where each life's ids start.
fn id_span(mine: &[&&IndexEntry]) -> String {
    let ids = mine.iter().map(|e| e.episode_id);
    match (ids.clone().min(), ids.max()) {
        (Some(lo), Some(hi)) => format!("{}, ids {lo} – {hi}", mine.len()),
        _ => "0".into(),
    }
}

pub fn episodes(entries: &[&IndexEntry]) -> String {
    let done = completed(entries);
    let count = |s: Status| entries.iter().filter(|e| e.status == s).count();
    let mut out = table(
        &["terminated", "truncated", "given up"],
        &[vec![count(Status::Terminated).to_string(), count(Status::Truncated).to_string(), count(Status::GivenUp).to_string()]],
    );
    let mut labels: BTreeMap<&str, (usize, Vec<&str>)> = BTreeMap::new();
    for l in done.iter().flat_map(|e| &e.labels) {
        let slot = labels.entry(&l.label).or_default();
        slot.0 += 1;
        if !slot.1.contains(&l.filter.as_str()) {
            slot.1.push(&l.filter);
        }
    }
    if labels.is_empty() {
        out += &note("No labels: the runs had no filters, or none matched (`rollway relabel DIR --filter …` adds them).");
    } else {
        let rows: Vec<Vec<String>> =
            labels.iter().map(|(l, (n, f))| vec![t(l), n.to_string(), share(*n, done.len()), t(&f.join("; "))]).collect();
        out += &table(&["label", "episodes", "of completed", "filter"], &rows);
    }
    let returns: Vec<f64> = done.iter().map(|e| e.ret).collect();
    let lengths: Vec<f64> = done.iter().map(|e| e.length as f64).collect();
    out += r#"<div class="plots">"#;
    out += &svg::histogram("Episode returns", "return", &returns);
    out += &svg::histogram("Episode lengths", "steps", &lengths);
    out + "</div>"
}

/// Steps per second over a run, from its stored timeline of `[seconds, steps
/// acted, episodes]` samples, averaged over ~60 even slices so ticks do not show as noise.
fn rate_over_time(timeline: &[Value]) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = timeline.iter().filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?))).collect();
    let Some(&(end, _)) = pts.last() else { return vec![] };
    if end <= 0.0 {
        return vec![];
    }
    let at = |x: f64| -> f64 {
        // Cumulative steps at time x, linear between samples.
        match pts.iter().position(|p| p.0 >= x) {
            Some(0) => pts[0].1 * (x / pts[0].0.max(1e-9)).min(1.0),
            Some(i) => {
                let (a, b) = (pts[i - 1], pts[i]);
                a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0).max(1e-9)
            }
            None => pts[pts.len() - 1].1,
        }
    };
    let n = 60;
    (0..n)
        .map(|i| {
            let (x0, x1) = (end * i as f64 / n as f64, end * (i + 1) as f64 / n as f64);
            ((x0 + x1) / 2.0, (at(x1) - at(x0)) / (x1 - x0))
        })
        .collect()
}

pub fn throughput(ds: &Dataset, entries: &[&IndexEntry]) -> String {
    let runs = &ds.metadata().runs;
    let series: Vec<Series> = runs
        .iter()
        .filter_map(|r| {
            Some(Series { name: format!("run {}", r.run), points: rate_over_time(r.summary.as_ref()?["timeline"].as_array()?) })
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let mut out = String::from(r#"<div class="plots">"#);
    if !series.is_empty() {
        out += &svg::lines("Steps per second over the run", "seconds since the run started", "steps/s", &series);
    }
    // Per worker: (run, worker) → (episodes, steps); rates over the run's wall time.
    let mut per: BTreeMap<(u32, usize), (u64, u64)> = BTreeMap::new();
    for e in completed(entries) {
        let slot = per.entry((e.run, e.worker)).or_default();
        slot.0 += 1;
        slot.1 += e.length;
    }
    let name = |(r, w): (u32, usize)| if runs.len() > 1 { format!("r{r}/w{w}") } else { format!("w{w}") };
    let labels: Vec<String> = per.keys().map(|k| name(*k)).collect();
    let steps: Vec<f64> = per.values().map(|v| v.1 as f64).collect();
    out += &svg::bars("Steps per worker", "worker", "steps", &labels, &steps);
    out += "</div>";
    if series.len() < runs.len() {
        out += &note("Runs without a stored summary (killed, or still running) have no timeline; their counts come from the index.");
    }
    let seconds = |r: u32| runs.get(r as usize).and_then(|r| r.summary.as_ref()?["seconds"].as_f64());
    let rows: Vec<Vec<String>> = per
        .iter()
        .map(|(k, (eps, st))| {
            let rate = seconds(k.0).map_or("—".into(), |s| format!("{}/s", num((*st as f64 / s.max(1e-9)).round())));
            vec![t(&name(*k)), eps.to_string(), st.to_string(), rate]
        })
        .collect();
    out + &table(&["worker", "episodes", "steps", "steps/s over the run"], &rows)
}

pub fn faults(ds: &Dataset, entries: &[&IndexEntry]) -> String {
    let retried = entries.iter().filter(|e| e.attempt > 1).count();
    let failed: u64 = entries.iter().map(|e| u64::from(e.attempt.saturating_sub(1)) + u64::from(e.status == Status::GivenUp)).sum();
    let runs = &ds.metadata().runs;
    let summed = |k: &str| -> Option<f64> { runs.iter().map(|r| r.summary.as_ref().and_then(|s| s[k].as_f64())).sum() };
    let mut out = cards(&[
        ("attempts", entries.iter().map(|e| u64::from(e.attempt)).sum::<u64>().to_string()),
        ("failed attempts", failed.to_string()),
        ("episodes retried", retried.to_string()),
        ("restarts", summed("restarts").map_or("—".into(), num)),
        ("given up", entries.iter().filter(|e| e.status == Status::GivenUp).count().to_string()),
    ]);
    let given_up: Vec<Vec<String>> = entries
        .iter()
        .filter(|e| e.status == Status::GivenUp)
        .take(100)
        .map(|e| {
            vec![
                e.episode_id.to_string(),
                e.run.to_string(),
                e.seed.to_string(),
                e.attempt.to_string(),
                t(e.error.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    if !given_up.is_empty() {
        out += &table(&["given-up episode", "run", "seed", "attempts", "last error"], &given_up);
    }
    let logged: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|r| Some((r.run, r.summary.as_ref()?["faults"].as_array()?.clone())))
        .flat_map(|(run, fs)| fs.into_iter().map(move |f| (run, f)))
        .take(100)
        .map(|(run, f)| {
            let worker = f["worker"].as_u64().map_or("agent".into(), |w| format!("w{w}"));
            vec![run.to_string(), f["episode"].to_string(), f["attempt"].to_string(), worker, t(f["error"].as_str().unwrap_or(""))]
        })
        .collect();
    if !logged.is_empty() {
        out += &table(&["run", "episode index", "attempt", "where", "error"], &logged);
    } else if failed == 0 {
        out += &note("No attempt failed.");
    }
    out
}
