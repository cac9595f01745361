//! The dataset writer's own ceiling: how many steps a second it commits when episodes cost nothing
//! to make, for rows of a given size. What a recording can reach at most, whatever the env: the
//! benchmarks that record (`bench/batched.py`, `bench/multiagent.py`) run this beside the env, with
//! their env's row size and episode length, to name the cap where recording falls short.
//!
//!     cargo run --release -p rollway-store --example writer_ceiling -- ROW_BYTES EPISODE_STEPS [SECONDS [ROWS_FILE]]
//!
//! One episode is built once, of the env's own rows where ROWS_FILE holds some (packed rows back to
//! back, used in turn: Snappy's speed depends on what it compresses), else of rows that compress
//! like frames (one value, a seventh of the bytes noise), and sent again and again for SECONDS,
//! from this thread (a copy an episode, as a recording makes its episodes), while the writer thread
//! encodes and commits, as a run's would (default settings: Parquet with Snappy, large leaves as
//! binary; a queue of two episodes, so that the copies do not run ahead into memory). Prints one
//! JSON line: steps/s and MB/s of observations, committed, with every commit included.

#[path = "common/frame_like.rs"]
mod frame_like;

use std::time::Instant;

use rollway_core::{DType, EnvSpec, EpisodeResult, Layout, Space, Trajectory};
use rollway_store::{DatasetWriter, WriterConfig};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    const USAGE: &str = "usage: writer_ceiling ROW_BYTES EPISODE_STEPS [SECONDS [ROWS_FILE]] (positive numbers)";
    let num = |i: usize, default: Option<usize>| {
        let n: usize = args.get(i).map_or(default, |a| a.parse().ok()).expect(USAGE);
        assert!(n > 0, "{USAGE}");
        n
    };
    let (row, steps, seconds) = (num(0, None), num(1, None), num(2, Some(5)));
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
    // Rows are padded to the layout's alignment: a row of 5,380 bytes takes 5,392.
    let obs_row = Layout::of(&spec.observation_space).row_bytes();
    let obs = match args.get(3) {
        Some(path) => {
            let rows = std::fs::read(path).expect("ROWS_FILE read");
            assert!(rows.len() >= obs_row && rows.len() % obs_row == 0, "ROWS_FILE holds whole rows of {obs_row} bytes");
            rows.chunks_exact(obs_row).cycle().take(steps + 1).flatten().copied().collect()
        }
        None => frame_like::frame_like(obs_row * (steps + 1)),
    };
    let mut t = Trajectory { obs, actions: vec![0; act_row * steps], rewards: vec![1.0; steps], ..Default::default() };
    t.terminations = vec![false; steps];
    t.truncations = vec![false; steps];
    t.terminations[steps - 1] = true;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cfg = WriterConfig { queue: 2, ..Default::default() };
    let w = DatasetWriter::create(dir.path(), &spec, "writer-ceiling", 0, serde_json::json!({}), cfg).expect("a dataset");
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
            "steps_per_s": rate, "obs_mb_per_s": rate * obs_row as f64 / 1e6,
        })
    );
}
