//! `inspect`, `verify`, `relabel`: dataset commands, flags → `rollway_store` calls.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use rollway_core::{Space, Status};
use rollway_store::{Dataset, IndexEntry, OpenOptions};

use crate::args::{DataArgs, LoadArgs, RelabelArgs, VerifyArgs};
use crate::input;
use rollway_engine::dataset::{relabel_dataset, write_report};

/// Writes the dataset's HTML report (`rollway report`) to `out` (default beside
/// the dataset) and prints where.
pub fn report(dir: &Path, out: Option<&Path>) -> Result<()> {
    let (path, bytes) = write_report(dir, out)?;
    print_report(&path, bytes);
    Ok(())
}

/// The line saying where a report was written.
pub fn print_report(path: &Path, bytes: usize) {
    println!("  {:<18} {} ({:.0} kB; open it in a browser)", "report", path.display(), bytes as f64 / 1e3);
}

/// Opens a dataset for reading; with `skip_damaged`, shards whose index is damaged
/// are left out with a warning on stderr instead of failing the command.
fn open(dir: &Path, skip_damaged: bool) -> Result<Dataset> {
    let ds = input(Dataset::open_with(dir, OpenOptions { skip_damaged }).with_context(|| format!("opening {}", dir.display())))?;
    for d in ds.damaged() {
        eprintln!("rollway: warning: skipping damaged shard {}: {}: {}", d.shard, d.path.display(), d.message);
    }
    Ok(ds)
}

pub fn inspect(a: &DataArgs) -> Result<bool> {
    let ds = open(&a.dir, a.skip_damaged)?;
    let m = ds.metadata();
    let done: Vec<&IndexEntry> = ds.select(|_| true).collect();
    let given_up = ds.episodes().filter(|e| e.status == Status::GivenUp).count();
    let steps: u64 = done.iter().map(|e| e.length).sum();
    let mut labels: BTreeMap<String, u64> = BTreeMap::new();
    for e in &done {
        for l in &e.labels {
            *labels.entry(l.label.clone()).or_default() += 1;
        }
    }
    let bytes = rollway_store::format::dir_bytes(&a.dir);
    let shards: Vec<serde_json::Value> = ds
        .shards()
        .iter()
        .map(|s| {
            let steps: u64 = s.episodes.iter().filter(|e| e.status != Status::GivenUp).map(|e| e.length).sum();
            serde_json::json!({"shard": s.shard, "episodes": s.episodes.len(), "steps": steps, "rows": s.rows, "parquet_bytes": s.parquet_bytes})
        })
        .collect();
    let n = done.len().max(1) as f64;
    if a.json {
        let v = serde_json::json!({
            "path": a.dir, "format_version": m.format_version, "env": m.env.id,
            // As rollway.json stores them: Minari's space JSON, whose infinite bounds
            // (`Infinity`) are not JSON numbers, so they stay strings.
            "observation_space": m.env.observation_space, "action_space": m.env.action_space,
            "runs": m.runs.len(), "rollway_versions": m.runs.iter().map(|r| r.rollway_version.as_str()).collect::<Vec<_>>(), "episodes": done.len(), "given_up": given_up, "steps": steps,
            "labels": labels, "label_rates": labels.iter().map(|(k, &v)| (k.clone(), v as f64 / n)).collect::<BTreeMap<_, _>>(),
            "bytes": bytes, "bytes_per_step": bytes as f64 / steps.max(1) as f64, "frame_keys": m.frame_keys, "frame_media": m.frame_media, "shards": shards,
            "agents": m.env.agents, "agent_mean_returns": agent_means(&done),
        });
        println!("{}", serde_json::to_string_pretty(&v).expect("json serializes"));
        return Ok(true);
    }
    let (obs, act) = input(m.env.spaces().map_err(Into::into))?;
    let row = |k: &str, v: String| println!("  {k:<14} {v}");
    row("dataset", format!("{} (rollway format v{})", a.dir.display(), m.format_version));
    row("env", m.env.id.clone());
    row("observation", Space::describe(&obs));
    row("action", Space::describe(&act));
    for r in &m.runs {
        let by = if r.rollway_version.is_empty() { String::new() } else { format!(", rollway {}", r.rollway_version) };
        row(&format!("run {}", r.run), format!("agent {}, seed {}, first episode id {}{by}", r.agent, r.seed, r.first_episode_id));
    }
    row(
        "episodes",
        format!("{} committed{}", done.len(), if given_up > 0 { format!(" ({given_up} given up, no data)") } else { String::new() }),
    );
    row("steps", steps.to_string());
    if let (Some(agents), Some(means)) = (&m.env.agents, agent_means(&done)) {
        row("agents", format!("{}, mean return per episode: {}", agents.len(), agent_list(agents, &means)));
    }
    for (k, v) in &labels {
        row(&format!("label {k}"), format!("{v} ({:.1}%)", 100.0 * *v as f64 / n));
    }
    // A dataset without image observations has no frames to speak of (nor a media).
    let frames = if m.frame_keys.is_empty() { String::new() } else { format!(", frames: {} ({})", m.frame_keys.join(", "), m.frame_media) };
    row("size", format!("{:.2} MB, {:.1} bytes/step{frames}", bytes as f64 / 1e6, bytes as f64 / steps.max(1) as f64));
    println!("\n  {:>6} {:>9} {:>10} {:>10} {:>12}", "shard", "episodes", "steps", "rows", "parquet");
    for s in &shards {
        let n = |k: &str| s[k].as_u64().unwrap_or(0);
        println!("  {:>6} {:>9} {:>10} {:>10} {:>12}", n("shard"), n("episodes"), n("steps"), n("rows"), n("parquet_bytes"));
    }
    Ok(true)
}

/// A multi-agent dataset's mean return per agent and episode (the index's `agent_returns`), in
/// `env.agents`' order; `None` for one agent.
fn agent_means(done: &[&IndexEntry]) -> Option<Vec<f64>> {
    let rows: Vec<&Vec<f64>> = done.iter().filter_map(|e| e.agent_returns.as_ref()).collect();
    let k = rows.first()?.len();
    let n = rows.len() as f64;
    Some((0..k).map(|i| rows.iter().filter_map(|r| r.get(i)).sum::<f64>() / n).collect())
}

/// `agent_0 -22.9, agent_1 -23.4, …`: the first few agents with their mean returns (`--json` has all).
fn agent_list(agents: &[String], means: &[f64]) -> String {
    const SHOWN: usize = 8;
    let mut s = agents.iter().zip(means).take(SHOWN).map(|(a, m)| format!("{a} {m:.2}")).collect::<Vec<_>>().join(", ");
    if agents.len() > SHOWN {
        s += &format!(", … ({} more: --json lists all)", agents.len() - SHOWN);
    }
    s
}

/// `rollway verify [--repair]`; `repaired`: a repair done already (on an object
/// store, before its replica was pulled).
pub fn verify(a: &VerifyArgs, repaired: Option<rollway_store::RepairReport>) -> Result<bool> {
    // Damaged shards are what verify is for: report them, check the rest.
    let ds = input(Dataset::open_with(&a.dir, OpenOptions { skip_damaged: true }).with_context(|| format!("opening {}", a.dir.display())))?;
    let report = rollway_store::verify(&ds);
    drop(ds);
    let repaired = match repaired {
        Some(r) => Some(r),
        None if a.repair => Some(rollway_engine::target::repair(&a.dir).with_context(|| format!("repairing {}", a.dir.display()))?),
        None => None,
    };
    if a.json {
        let mut v = serde_json::to_value(&report).expect("json serializes");
        if let Some(r) = &repaired {
            v["repair"] = serde_json::to_value(r).expect("json serializes");
        }
        println!("{}", serde_json::to_string_pretty(&v).expect("json serializes"));
    } else {
        print_verify(&a.dir, &report);
        if let Some(r) = &repaired {
            println!("repair: {} file(s) published, {} moved to quarantine", r.published, r.quarantined.len());
            for (from, to) in &r.quarantined {
                println!("  {} -> {}", from.display(), to.display());
            }
            if !r.damaged.is_empty() {
                println!("  shards with a damaged index, left as they are: {:?}", r.damaged);
            }
        }
    }
    Ok(report.problems.is_empty())
}

fn print_verify(dir: &Path, report: &rollway_store::VerifyReport) {
    if report.problems.is_empty() {
        println!("ok: {} episodes ({} steps) in {} shards verified", report.episodes, report.steps, report.shards);
    } else {
        println!("DAMAGED: {} problem(s) in {} ({} episodes checked)", report.problems.len(), dir.display(), report.episodes);
        for p in &report.problems {
            let shard = p.shard.map_or("dataset".to_string(), |s| format!("shard {s}"));
            let ep = p.episode.map_or(String::new(), |e| format!(" episode {e}"));
            println!("  {shard}{ep}: {}", p.message);
        }
    }
    for n in &report.notes {
        println!("  note: {n}");
    }
}

pub fn relabel(a: &RelabelArgs) -> Result<bool> {
    let changed = relabel_dataset(&a.dir, &a.filter)?;
    println!("relabelled: {changed} episode(s) changed labels");
    Ok(true)
}

pub(crate) fn load_config(a: &LoadArgs) -> rollway_loader::LoaderConfig {
    let r = &a.replay;
    rollway_loader::LoaderConfig {
        clip_len: a.clip,
        stride: a.stride,
        pad: a.pad,
        batch_size: a.batch,
        shuffle: !a.no_shuffle,
        replacement: a.replacement,
        seed: a.seed,
        rank: a.rank,
        world_size: a.world_size,
        prefetch_batches: a.prefetch,
        threads: a.threads.unwrap_or_else(rollway_loader::default_threads),
        drop_last: false,
        next_observations: a.next_observations,
        select: rollway_loader::Selection {
            labels: a.label.clone(),
            min_return: a.min_return,
            max_return: a.max_return,
            min_length: a.min_length,
            max_length: a.max_length,
            last_episodes: r.last_episodes,
            last_steps: r.last_steps,
            min_policy_version: r.min_policy_version,
        },
        follow: r.follow.then_some(rollway_loader::Follow {
            max_version_lag: None,
            max_reuse: r.max_reuse,
            round_windows: r.round_windows,
        }),
    }
}

/// The next batch; following, waits while no window is eligible and ends after
/// the last batch of round `rounds - 1`.
fn next(loader: &mut rollway_loader::Loader, follow: bool, rounds: u64) -> Result<Option<&rollway_loader::Batch>> {
    if !follow {
        return Ok(loader.next_batch()?);
    }
    let s = loader.state();
    if s.epoch + 1 >= rounds && s.batches > 0 && s.batches >= loader.batches_per_epoch() {
        return Ok(None);
    }
    while loader.next_batch()?.is_none() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(loader.current())
}

/// `rollway load`; `replica`: the dataset is a replica of one on an object store,
/// which a following loader pulls again before each round.
pub fn load(a: &LoadArgs, replica: Option<rollway_engine::target::Replica>) -> Result<bool> {
    let ds = open(&a.dir, a.skip_damaged)?;
    let cfg = load_config(a);
    let opened = std::time::Instant::now();
    let mut loader = input(rollway_loader::Loader::new(&ds, cfg).map_err(Into::into))?;
    if let Some(r) = replica {
        loader.before_read(r.into_hook());
    }
    let setup = opened.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let (mut windows, mut bytes, mut batches) = (0u64, 0u64, 0u64);
    let total = a.epochs * loader.batches_per_epoch();
    let bar = rollway_engine::progress::Bar::new(a.json, "loading", "batches");
    let follow = a.replay.follow;
    // Following, one pass: `next` counts the rounds.
    for _ in 0..if follow { 1 } else { a.epochs } {
        while let Some(b) = next(&mut loader, follow, a.epochs)? {
            windows += b.len() as u64;
            bytes += b.bytes() as u64;
            batches += 1;
            // A few updates a second are plenty, and a batch can take microseconds.
            if batches % 256 == 0 {
                // A following loader's rounds change size: the current one's stands for all.
                bar.update(batches, if follow { (a.epochs * loader.batches_per_epoch()).max(batches) } else { total });
                bar.message(format!(
                    "{}/s windows",
                    rollway_engine::progress::human(windows as f64 / started.elapsed().as_secs_f64().max(1e-9))
                ));
            }
        }
    }
    drop(bar);
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let v = serde_json::json!({
        "windows": windows, "batches": batches, "epochs": a.epochs, "clip": loader.clip_len(),
        "windows_per_sec": windows as f64 / secs, "mb_per_sec": bytes as f64 / 1e6 / secs,
        "bytes": bytes, "seconds": secs, "setup_seconds": setup,
        "episodes": loader.episodes().len(), "windows_per_epoch": loader.num_windows(),
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v).expect("json serializes"));
    } else {
        println!(
            "  loaded {windows} windows of {} steps in {batches} batches over {} epoch(s): {}/s windows, {:.0} MB/s ({:.2} s, setup {:.2} s)",
            loader.clip_len(),
            a.epochs,
            rollway_engine::progress::human(windows as f64 / secs),
            bytes as f64 / 1e6 / secs,
            secs,
            setup
        );
    }
    Ok(true)
}
