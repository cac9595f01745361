//! The dataset writer's own ceiling: how many steps a second it commits when episodes cost nothing
//! to make, for rows of a given size. What a recording can reach at most, whatever the env: the
//! benchmarks that record (`bench/batched.py`, `bench/multiagent.py`) run this beside the env, with
//! their env's row size and episode length, to name the cap where recording falls short.
//!
//!     cargo run --release -p rollway-store --example writer_ceiling -- ROW_BYTES EPISODE_STEPS [SECONDS]
//!
//! One episode is built once (rows that compress like frames: one value, a seventh of the bytes
//! noise) and sent again and again for SECONDS, from this thread, while the writer thread encodes
//! and commits, as a run's would (default settings: Parquet with Snappy, large leaves as binary).
//! Prints one JSON line: steps/s and MB/s of observations, committed, with every commit included.

use std::time::Instant;

use rollway_core::{DType, EnvSpec, EpisodeResult, Layout, Space, Trajectory};
use rollway_store::{DatasetWriter, WriterConfig};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().expect("numbers: ROW_BYTES EPISODE_STEPS [SECONDS]")).collect();
    let (row, steps, seconds) = (args[0], args[1], args.get(2).copied().unwrap_or(5));
    let spec = EnvSpec {
        id: format!("writer-ceiling-{row}"),
        observation_space: Space::boxed(DType::U8, &[row], 0.0, 255.0).expect("a Box"),
        action_space: Space::discrete(4, 0).expect("a Discrete"),
        max_episode_steps: None,
        render_fps: None,
        reward_threshold: None,
        gymnasium_spec: None,
        agents: None,
    };
    let act_row = Layout::of(&spec.action_space).row_bytes();
    let mut x = 1u32;
    let obs = (0..row * (steps + 1))
        .map(|i| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            if i % 7 == 0 {
                (x >> 24) as u8
            } else {
                87
            }
        })
        .collect();
    let mut t = Trajectory { obs, actions: vec![0; act_row * steps], rewards: vec![1.0; steps], ..Default::default() };
    t.terminations = vec![false; steps];
    t.truncations = vec![false; steps];
    t.terminations[steps - 1] = true;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let w = DatasetWriter::create(dir.path(), &spec, "writer-ceiling", 0, serde_json::json!({}), WriterConfig::default())
        .expect("a dataset");
    let start = Instant::now();
    let mut episodes = 0u64;
    while start.elapsed().as_secs_f64() < seconds as f64 {
        w.write(EpisodeResult::from_trajectory(episodes, episodes, t.clone())).expect("an episode written");
        episodes += 1;
    }
    let stats = w.finish().expect("the last commit");
    let took = start.elapsed().as_secs_f64();
    let rate = stats.steps as f64 / took;
    println!(
        "{}",
        serde_json::json!({
            "row_bytes": row, "episode_steps": steps, "episodes": stats.episodes, "seconds": took,
            "steps_per_s": rate, "obs_mb_per_s": rate * row as f64 / 1e6,
        })
    );
}
