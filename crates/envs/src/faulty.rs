//! `Faulty-v0`: a tiny counting env that fails on purpose, for testing restarts
//! and accounting. Each instance panics (or returns an error) on its N-th step
//! call, counted across episodes, so a rebuilt instance works again for a while —
//! like a simulator that crashes now and then. An episode whose seed is listed in
//! `poison_seeds` fails every time, so it must end up given up, not lost. It can
//! also answer wrong without failing (a NaN observation or reward, an observation
//! above its space's bound), for the engine's checks.

use rollway_core::{DType, Env, EnvEntry, EnvSpec, Error, Info, Params, Result, RowMut, RowRef, Space, StepOutcome};

/// Registry entry.
pub static ENTRY: EnvEntry = EnvEntry {
    id: "Faulty-v0",
    summary: "counting env that panics or errors on chosen step calls (for fault-injection tests)",
    params: &[
        ("length", "steps per episode (default 20)"),
        ("panic_every", "panic on every N-th step call of an instance (0 = never)"),
        ("panic_rate", "panic on a step call with this probability, drawn per instance (unlike panic_every, instances fail independently)"),
        ("error_every", "return an error on every N-th step call of an instance (0 = never)"),
        ("poison_seeds", "`;`-separated episode seeds that always fail"),
        ("nan_obs_every", "return a NaN observation on every N-th step call of an instance (0 = never)"),
        ("nan_reward_every", "return a NaN reward on every N-th step call of an instance (0 = never)"),
        ("high", "the observation space's upper bound (default: f32::MAX); the observation counts steps"),
    ],
    make,
};

/// Instances made so far in this process: each draws `panic_rate` from its own stream.
static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn make(p: &Params) -> Result<Box<dyn Env>> {
    p.expect_only(&["length", "panic_every", "panic_rate", "error_every", "poison_seeds", "nan_obs_every", "nan_reward_every", "high"])?;
    let poison = match p.raw("poison_seeds") {
        None => vec![],
        Some(s) => s
            .split(';')
            .filter(|x| !x.is_empty())
            .map(|x| x.parse().map_err(|e| Error::Param { name: "poison_seeds".into(), message: format!("`{x}`: {e}") }))
            .collect::<Result<_>>()?,
    };
    Ok(Box::new(Faulty {
        spec: EnvSpec {
            id: ENTRY.id.into(),
            observation_space: Space::boxed(DType::F32, &[1], 0.0, p.get("high", f32::MAX as f64)?)?,
            action_space: Space::discrete(2, 0)?,
            max_episode_steps: None,
            render_fps: None,
            reward_threshold: None,
            gymnasium_spec: None,
            agents: None,
        },
        length: p.get("length", 20)?,
        panic_every: p.get("panic_every", 0)?,
        error_every: p.get("error_every", 0)?,
        panic_rate: p.get("panic_rate", 0.0)?,
        // Each instance its own stream, so instances stepped in lockstep do not fail together.
        rng: rollway_core::seed::agent_rng(INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
        nan_obs_every: p.get("nan_obs_every", 0)?,
        nan_reward_every: p.get("nan_reward_every", 0)?,
        poison,
        calls: 0,
        t: 0,
        seed: 0,
    }))
}

struct Faulty {
    spec: EnvSpec,
    length: u64,
    panic_every: u64,
    error_every: u64,
    panic_rate: f64,
    rng: rollway_core::AgentRng,
    nan_obs_every: u64,
    nan_reward_every: u64,
    poison: Vec<u64>,
    calls: u64,
    t: u64,
    seed: u64,
}

impl Env for Faulty {
    fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    fn reset(&mut self, seed: Option<u64>, _options: Option<&Info>, mut obs: RowMut<'_>) -> Result<()> {
        self.t = 0;
        self.seed = seed.unwrap_or(0);
        obs.leaf_mut::<f32>(0)[0] = 0.0;
        Ok(())
    }

    fn step(&mut self, action: RowRef<'_>, mut obs: RowMut<'_>) -> Result<StepOutcome> {
        self.calls += 1;
        self.t += 1;
        if self.panic_every > 0 && self.calls.is_multiple_of(self.panic_every) {
            panic!("Faulty-v0: injected panic on step call {}", self.calls);
        }
        if self.panic_rate > 0.0 && rand::Rng::random_bool(&mut self.rng, self.panic_rate) {
            panic!("Faulty-v0: injected panic on step call {} (panic_rate)", self.calls);
        }
        if self.error_every > 0 && self.calls.is_multiple_of(self.error_every) {
            return Err(Error::Env { env: self.spec.id.clone(), message: format!("injected error on step call {}", self.calls) });
        }
        if self.poison.contains(&self.seed) && self.t == self.length / 2 {
            panic!("Faulty-v0: poisoned seed {}", self.seed);
        }
        let every = |n: u64| n > 0 && self.calls.is_multiple_of(n);
        obs.leaf_mut::<f32>(0)[0] = if every(self.nan_obs_every) { f32::NAN } else { self.t as f32 };
        // Reward depends on seed and action so that results are checkable across reruns.
        let reward = if every(self.nan_reward_every) { f64::NAN } else { (self.seed % 7) as f64 + action.discrete(0) as f64 };
        Ok(StepOutcome { reward, terminated: self.t >= self.length, truncated: false })
    }

    fn info(&self) -> Info {
        let mut i = Info::new();
        i.insert("t", self.t);
        i
    }
}
