//! The report's section on a multi-agent env's agents: each agent's return per episode, from
//! the index (`agent_returns`, which the writer sums from the agents' rewards), so drawing it
//! reads no step data.

use rollway_core::Status;
use rollway_store::IndexEntry;

use crate::html::{note, t, table};
use crate::svg::{self, num};

/// Each agent's mean, lowest and highest return over the completed episodes, in `agents`' order,
/// and a histogram of every (agent, episode) return. `None` for a single-agent dataset.
pub fn agents(agents: Option<&Vec<String>>, entries: &[&IndexEntry]) -> Option<String> {
    let agents = agents?;
    let per_episode: Vec<&Vec<f64>> =
        entries.iter().filter(|e| e.status != Status::GivenUp).filter_map(|e| e.agent_returns.as_ref()).collect();
    if per_episode.is_empty() {
        return Some(note(&format!("{} agents; no completed episode records their returns yet.", agents.len())));
    }
    let rows: Vec<Vec<String>> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let r: Vec<f64> = per_episode.iter().filter_map(|e| e.get(i).copied()).collect();
            let mean = r.iter().sum::<f64>() / r.len().max(1) as f64;
            let (lo, hi) = r.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            vec![t(a), num(mean), num(lo), num(hi)]
        })
        .collect();
    let all: Vec<f64> = per_episode.iter().flat_map(|e| e.iter().copied()).collect();
    let mut out = note(&format!(
        "{} agents, {} completed episodes. An agent's return is the sum of the rewards the env gave it over the episode \
         (the steps it was not live add nothing).",
        agents.len(),
        per_episode.len()
    ));
    out += &table(&["agent", "mean return", "lowest", "highest"], &rows);
    out += r#"<div class="plots">"#;
    out += &svg::histogram("Return per agent and episode", "return", &all);
    Some(out + "</div>")
}
