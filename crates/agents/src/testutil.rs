//! Test helper: runs a registered agent on a registered env, one episode per
//! seed, with the same per-episode agent stream the runner gives, so agent tests
//! need neither the runner crate nor their own loops.

use rollway_core::{seed, ActBatch, Layout, Memory, Params, RowMut, RowRef, Rows, Segment};

/// What one episode came to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Episode {
    /// Sum of rewards.
    pub ret: f64,
    /// Steps taken.
    pub len: u64,
    /// Ended by termination (not the time limit).
    pub terminated: bool,
}

/// Plays one episode of `env_id` per seed with `agent`.
pub(crate) fn run(env_id: &str, agent: &str, seeds: impl IntoIterator<Item = u64>) -> Vec<Episode> {
    let mut env = rollway_envs::make(env_id, &Params::new()).unwrap();
    let spec = env.spec().clone();
    let mut agent = crate::make(agent, &spec, &Params::new()).unwrap();
    let (ol, al) = (Layout::of(&spec.observation_space), Layout::of(&spec.action_space));
    let (mut obs, mut act) = (Rows::new(ol.row_bytes(), 1), Rows::new(al.row_bytes(), 1));
    let mut memory: Vec<Memory> = vec![Vec::new()];
    seeds
        .into_iter()
        .map(|s| {
            env.reset(Some(s), None, RowMut::new(&ol, obs.row_mut(0))).unwrap();
            let mut rng = [seed::agent_rng(s)];
            memory[0].clear();
            let mut ep = Episode { ret: 0.0, len: 0, terminated: false };
            loop {
                let first = [ep.len == 0];
                let segment = Segment { obs: obs.row(0), actions: act.row_mut(0), first: &first, memory: &mut memory, rng: &mut rng };
                agent.act(&mut ActBatch { obs_layout: &ol, act_layout: &al, segments: vec![segment] }).unwrap();
                assert!(al.contains_row(act.row(0)), "the agent wrote an action outside the space");
                let out = env.step(RowRef::new(&al, act.row(0)), RowMut::new(&ol, obs.row_mut(0))).unwrap();
                ep.ret += out.reward;
                ep.len += 1;
                if out.terminated || out.truncated {
                    ep.terminated = out.terminated;
                    return ep;
                }
            }
        })
        .collect()
}

/// Mean of `f` over `eps`.
pub(crate) fn mean(eps: &[Episode], f: impl Fn(&Episode) -> f64) -> f64 {
    eps.iter().map(f).sum::<f64>() / eps.len() as f64
}
