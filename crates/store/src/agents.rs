//! Many agents: what the index keeps of each agent of a multi-agent env's episode.
//!
//! A multi-agent env (a PettingZoo env, `rollway.multiagent` in the Python package) is
//! recorded as one env whose observation holds every agent's row and, under
//! [`AGENT_REWARD`], each agent's reward from the step that produced it (FORMAT.md, "Many
//! agents"). Summing that leaf over an episode's rows gives each agent's return, which
//! `inspect` and the report show per agent without reading the steps again: the writer
//! keeps it in the episode's index entry, at the cost of one pass over a float64 leaf of
//! rows it already holds.

use rollway_core::Layout;

/// The observation leaf holding each agent's reward from the step that produced the row.
pub const AGENT_REWARD: &str = "agents/reward";

/// Each agent's return over an episode's observation rows (`obs`: T + 1 rows of `layout`,
/// the reset's first): the [`AGENT_REWARD`] leaf summed over them (a reset row's rewards
/// are zeros). `None` when the layout has no float64 leaf of that name (one agent).
pub fn returns(layout: &Layout, obs: &[u8]) -> Option<Vec<f64>> {
    let leaf = layout.leaf_index(AGENT_REWARD)?;
    if layout.leaves()[leaf].dtype != rollway_core::DType::F64 || layout.row_bytes() == 0 {
        return None;
    }
    let leaf = &layout.leaves()[leaf];
    let mut sums = vec![0.0; leaf.len()];
    // Bytes, not a typed view: a trajectory's rows need not sit at an 8-byte boundary.
    for row in obs.chunks_exact(layout.row_bytes()) {
        for (s, r) in sums.iter_mut().zip(row[leaf.range()].chunks_exact(8)) {
            *s += f64::from_le_bytes(r.try_into().expect("chunks of 8 bytes"));
        }
    }
    Some(sums)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rollway_core::Space;

    #[test]
    fn each_agents_rewards_are_summed_over_the_rows_and_one_agent_has_none() {
        let status = Space::from_json(
            r#"{"type": "Dict", "subspaces": {"agents": {"type": "Dict", "subspaces": {"reward": {"type": "Box", "dtype": "float64", "shape": [2], "low": [-1e9, -1e9], "high": [1e9, 1e9]}}}, "obs": {"type": "Box", "dtype": "float32", "shape": [2, 1], "low": [[0], [0]], "high": [[1], [1]]}}}"#,
        )
        .unwrap();
        let layout = Layout::of(&status);
        let idx = layout.leaf_index(AGENT_REWARD).expect("the leaf's path");
        let mut obs = vec![0u8; 3 * layout.row_bytes()];
        for (t, rewards) in [[0.0f64, 0.0], [1.5, -2.0], [0.25, 4.0]].iter().enumerate() {
            let row = &mut obs[t * layout.row_bytes()..(t + 1) * layout.row_bytes()];
            let at = layout.leaves()[idx].offset;
            row[at..at + 8].copy_from_slice(&rewards[0].to_le_bytes());
            row[at + 8..at + 16].copy_from_slice(&rewards[1].to_le_bytes());
        }
        assert_eq!(returns(&layout, &obs), Some(vec![1.75, 2.0]));
        let one = Layout::of(&Space::discrete(2, 0).unwrap());
        assert_eq!(returns(&one, &[0u8; 16]), None);
    }
}
