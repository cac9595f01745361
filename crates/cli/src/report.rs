//! The end-of-run summary table and the `envs` / `agents` listings.

use std::path::Path;

use rollway_core::Layout;
use rollway_runner::Summary;

use rollway_engine::progress::human;

pub fn summary_table(s: &Summary) -> String {
    let mut out = String::new();
    let mut row = |k: &str, v: String| out.push_str(&format!("  {k:<18} {v}\n"));
    row("env / agent", format!("{} / {}  (seed {}, {} mode, {}×{} envs)", s.env, s.agent, s.seed, s.mode, s.workers, s.envs_per_worker));
    if let Some(how) = &s.inference {
        row("inference", how.clone());
    }
    row("episodes", format!("{}  ({} terminated, {} truncated)", s.episodes, s.terminated, s.truncated));
    row("steps", s.steps.to_string());
    row("attempts", format!("{}  ({} failed, {} restarts)", s.attempts, s.failed_attempts, s.restarts));
    if s.given_up > 0 {
        let shown: Vec<String> = s.given_up_episodes.iter().take(20).map(u64::to_string).collect();
        row("GIVEN UP", format!("{} episodes: {}{}", s.given_up, shown.join(", "), if s.given_up > 20 { ", …" } else { "" }));
    }
    if s.untried > 0 {
        row("UNTRIED", format!("{} episodes: no live worker was left to run them (see --max-restarts)", s.untried));
    }
    if s.discarded > 0 {
        row("discarded", format!("{} episodes past the step target", s.discarded));
    }
    let st = |x: &rollway_runner::Stat| format!("mean {:.3}  std {:.3}  min {:.3}  max {:.3}", x.mean, x.std, x.min, x.max);
    row("return", st(&s.ret));
    row("length", st(&s.length));
    for (label, n) in &s.labels {
        row(&format!("label {label}"), format!("{n} ({:.1}%)", 100.0 * s.label_rates[label]));
    }
    row("throughput", format!("{}/s steps, {}/s episodes, {:.2} s", human(s.steps_per_sec), human(s.episodes_per_sec), s.seconds));
    if let Some(c) = &s.calibration {
        let tried: Vec<String> =
            c.probes.iter().map(|p| format!("{} {} → {}/s", p.envs_per_worker, p.mode.name(), human(p.steps_per_s))).collect();
        row(
            "calibrated",
            format!(
                "{} envs per worker, {} (tried {}; {:.2} s; --envs-per-worker skips this)",
                c.envs_per_worker,
                c.mode.name(),
                tried.join(", "),
                c.seconds
            ),
        );
    }
    out
}

/// Says on stderr what a run left undone; true when it left nothing.
pub fn shortfall(s: &Summary, out: Option<&Path>) -> bool {
    for w in &s.warnings {
        eprintln!("rollway: warning: {w}");
    }
    let Some(text) = s.shortfall() else { return true };
    let how = match out {
        Some(d) if s.untried > 0 => format!("; `rollway run --resume {}` runs the untried ones", d.display()),
        _ => String::new(),
    };
    eprintln!("rollway: run ended short: {text}{how}");
    false
}

/// What to try on a dataset a run just recorded, with its own path and labels.
pub fn next_steps(dir: &Path, s: &Summary) -> String {
    let d = dir.display();
    let label = s.labels.keys().next().map_or(String::new(), |l| format!(" --label {l}"));
    // Exports are written locally: one of a dataset on a store goes here.
    let export = if rollway_engine::target::on_store(dir) {
        dir.file_name().unwrap_or("dataset".as_ref()).to_string_lossy()
    } else {
        dir.to_string_lossy()
    };
    let lines = [
        format!("rollway inspect {d}"),
        format!("rollway report {d}    (an HTML page: plots, faults, clips)"),
        format!("rollway load {d} --clip 16 --stride 16 --batch 8{label}"),
        format!("rollway export {d} --to lerobot {export}-lerobot    (or --to minari)"),
        format!("python -c 'import rollway; print(rollway.Dataset(\"{d}\")[0])'    (with rollway's Python package installed)"),
    ];
    let mut out = String::new();
    for (i, cmd) in lines.iter().enumerate() {
        out.push_str(&format!("  {:<18} {cmd}\n", if i == 0 { "next" } else { "" }));
    }
    out
}

pub fn list_envs() -> String {
    let mut out = String::new();
    for e in rollway_envs::REGISTRY {
        out.push_str(&format!("{:<16} {}\n", e.id, e.summary));
        match rollway_envs::make(e.id, &Default::default()) {
            Ok(env) => {
                let s = env.spec();
                out.push_str(&format!("{:<16}   observation: {}\n", "", s.observation_space.describe()));
                out.push_str(&format!("{:<16}   action:      {}\n", "", s.action_space.describe()));
                let limit = s.max_episode_steps.map_or("none".into(), |m| m.to_string());
                out.push_str(&format!(
                    "{:<16}   time limit:  {limit}, obs bytes/step: {}\n",
                    "",
                    Layout::of(&s.observation_space).row_bytes()
                ));
            }
            Err(err) => out.push_str(&format!("{:<16}   (cannot build with defaults: {err})\n", "")),
        }
        for (k, help) in e.params {
            out.push_str(&format!("{:<16}   --env-opt {k}=…  {help}\n", ""));
        }
    }
    out
}

pub fn list_agents() -> String {
    let mut out = String::new();
    for a in rollway_agents::REGISTRY {
        let envs = if a.envs.is_empty() { "any env".to_string() } else { a.envs.join(", ") };
        out.push_str(&format!("{:<20} {}  [{envs}]\n", a.name, a.summary));
        for (k, help) in a.params {
            out.push_str(&format!("{:<20}   --agent-opt {k}=…  {help}\n", ""));
        }
    }
    let onnx = format!("{}PATH", rollway_onnx::PREFIX);
    out.push_str(&format!("{onnx:<20} {}  [any env]\n", rollway_onnx::SUMMARY));
    for (k, help) in rollway_onnx::PARAMS {
        out.push_str(&format!("{:<20}   --agent-opt {k}=…  {help}\n", ""));
    }
    out
}
