//! Seed derivation: every episode, env and agent stream gets a seed that depends
//! only on the run seed and the episode index, never on scheduling.

use rand::SeedableRng;

use crate::agent::AgentRng;

/// Stream id for the agent's random stream of an episode.
pub const AGENT_STREAM: u64 = 0xA6E7;

/// Mixes `base` and `stream` into a new well-spread 64-bit seed (SplitMix64 finalizer
/// over both inputs), so nearby indices give unrelated seeds.
pub fn derive_seed(base: u64, stream: u64) -> u64 {
    let mut z = base ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The env seed of episode `index` in a run seeded with `run_seed`.
pub fn episode_seed(run_seed: u64, index: u64) -> u64 {
    // Kept below 2^63 so it survives round trips through int64 columns and Python ints.
    derive_seed(run_seed, index) >> 1
}

/// The agent's random stream for an episode with env seed `episode_seed`.
pub fn agent_rng(episode_seed: u64) -> AgentRng {
    AgentRng::seed_from_u64(derive_seed(episode_seed, AGENT_STREAM))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_per_index_and_run() {
        let a: std::collections::HashSet<u64> = (0..10_000).map(|i| episode_seed(0, i)).collect();
        assert_eq!(a.len(), 10_000);
        assert_ne!(episode_seed(0, 1), episode_seed(1, 1));
        assert!(a.iter().all(|&s| s < 1 << 63));
    }
}
