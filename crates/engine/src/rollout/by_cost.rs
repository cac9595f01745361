//! `host="auto"` for a rollout's Python envs, by what one step costs.
//!
//! Inline, the rollout's thread steps its N envs one after another under the GIL:
//! a round costs N steps on one core. In processes, one per core, the envs step in
//! parallel, and each round pays the processes' round trip: a fixed part (the pipe,
//! the wake-ups) and a part per env (its observation and action through the pipe and
//! the packers). So processes pay when what they save, `N · t · (1 − 1/W)` for a step
//! of `t` on `W` processes, is more than what they cost, [`ROUND_S`] + N · [`PER_ENV_S`].
//! The front measures `t` on the env it makes anyway to read the spec (the median of
//! up to 200 random steps within ~50 ms: `rollway._host.step_cost`), so the choice
//! costs no process start and no second env; a run, whose target says how long it
//! lasts, measures both hosts instead (`host_choice.rs`).
//!
//! The two constants were measured on a 2-core VM (`bench/python_envs.py` and
//! `bench/rollout_hosted.py`: rounds of Gymnasium's CartPole at N = 8 to 256 and of
//! costly envs, inline and in two processes), the fixed part rounded up: near the
//! crossover either host is about as fast, and a probe that reads a cheap env's step
//! as slower (a busy machine) must not send it to processes that lose by 40%
//! (CartPole at N = 64: 58k steps/s in processes, 88k inline). On that machine
//! CartPole (~9 µs a step) stays inline at every N up to 256, and an env of ~110 µs or
//! more goes to processes from N = 8 (`docs/concepts/hosts.md` has the figures). More
//! cores lower the bar: `1 − 1/W` grows toward 1.

/// What a round of env processes costs beyond the envs' own steps, whatever N.
pub const ROUND_S: f64 = 400e-6;
/// What each env adds to a round of env processes.
pub const PER_ENV_S: f64 = 4e-6;

/// Where `host="auto"` steps a rollout's Python envs, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ByCost {
    /// In the rollout's thread; else in `workers` env processes.
    pub inline: bool,
    /// Env processes when not inline: one per core, at most one per env.
    pub workers: usize,
    /// The figures the choice was made on, for the user (`Rollout.host_choice`).
    pub why: String,
}

/// The choice for `num_envs` envs whose step costs `step_s` seconds, on `cores` cores.
pub fn by_cost(num_envs: usize, cores: usize, step_s: f64) -> ByCost {
    let n = num_envs.max(1) as f64;
    let workers = cores.min(num_envs).max(1);
    let saved = n * step_s * (1.0 - 1.0 / workers as f64);
    let cost = ROUND_S + n * PER_ENV_S;
    let inline = workers == 1 || saved <= cost;
    let (host, place) = if inline { ("inline", "in this thread") } else { ("process", "in env processes") };
    let why = format!(
        "{host}: a step costs {}; {} processes would save {} a round of {num_envs} envs and cost {} in round trips, \
         so the envs step {place}",
        micros(step_s),
        workers,
        micros(saved),
        micros(cost)
    );
    ByCost { inline, workers: if inline { 1 } else { workers }, why }
}

fn micros(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cheap_envs_stay_inline_and_costly_ones_go_to_a_process_per_core() {
        // Gymnasium's CartPole on the 2-core VM the constants come from.
        assert!(by_cost(8, 2, 9e-6).inline);
        assert!(by_cost(64, 2, 9e-6).inline);
        // The Python Atari stack (~1 ms a step) at N = 8: both cores.
        let atari = by_cost(8, 2, 1e-3);
        assert_eq!((atari.inline, atari.workers), (false, 2));
        assert!(atari.why.starts_with("process: a step costs 1.00 ms"), "{}", atari.why);
        // Never more processes than envs, and one core has nothing to share.
        assert_eq!(by_cost(3, 16, 1e-3).workers, 3);
        assert!(by_cost(8, 1, 1.0).inline);
        assert!(by_cost(1, 16, 1.0).inline, "one env has nothing to step beside it");
    }

    #[test]
    fn more_cores_lower_the_bar() {
        let bar = |cores| (1..=256).find(|&n| !by_cost(n, cores, 30e-6).inline);
        let (two, sixteen) = (bar(2).expect("30 µs envs reach processes on 2 cores"), bar(16).expect("and on 16"));
        assert!(sixteen < two, "16 cores: from N = {sixteen}; 2 cores: from N = {two}");
    }
}
