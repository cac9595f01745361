//! A Rust learner's rollout, without Python: fragments of built-in CartPole acted on by a
//! built-in agent, assembled by the engine as `rollway.Rollout` is. It trains nothing; a
//! learner would update its policy between `collect` and `publish`.
//!
//!     cargo run --release -p rollway-engine --example rollout
//!
//! Each fragment is T steps × N envs, time-major, with the bootstrap observation
//! (`obs` holds T + 1 rows per env) and each finished episode's final observation.

use rollway_engine::{RolloutPlan, RolloutRequest, RolloutSources};

/// Three fragments, one line each; a learner's update would go between `collect` and `publish`.
pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    let request = RolloutRequest {
        env: "CartPole-v1".into(),
        agent: Some("random".into()),
        num_envs: 4,
        steps_per_fragment: 64,
        max_episode_steps: Some(40),
        ..RolloutRequest::default()
    };
    let plan = RolloutPlan::new(request, RolloutSources::default())?;
    let obs_row = rollway_core::Layout::of(&plan.spec().observation_space).row_bytes();
    let policy = plan.named_policy()?.ok_or("the request names its policy")?;
    let mut started = plan.start(policy)?;
    let rollout = started.rollout_mut();
    for update in 0..3 {
        let f = rollout.collect()?;
        assert_eq!(f.obs.len(), (f.steps + 1) * f.envs * obs_row);
        assert_eq!(f.final_obs.len(), f.finished.len() * obs_row);
        let truncated = f.finished.iter().filter(|e| !e.terminated).count();
        let mean = f.finished.iter().map(|e| e.ret).sum::<f64>() / f.finished.len().max(1) as f64;
        println!(
            "fragment {update}: version {}, {} episodes ended ({truncated} truncated), mean return {mean:.1}, {:.0} steps/s",
            f.version[0],
            f.finished.len(),
            f.stats.steps_per_s
        );
        // ... the learner's update on `f` goes here ...
        rollout.publish(None);
    }
    // Stops the envs and, had it `out=`, commits the dataset it recorded.
    started.close()?;
    Ok(())
}
