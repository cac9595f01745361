//! Helpers shared by the Gymnasium classic-control envs: reset options, seeded
//! uniform draws exactly as numpy makes them, action checks and numpy-exact powers.

use rollway_core::{EnvSpec, Error, Info, Result, RowRef, Space};

/// The random generator of the classic-control envs: numpy's `PCG64` seeded
/// through `SeedSequence`, as Gymnasium's `np_random`, so seeded resets start
/// where Gymnasium's do (see [`crate::np_random`]).
pub(crate) type EnvRng = crate::np_random::NpRandom;

/// What every classic-control env keeps besides its parameters: its spec, its
/// generator (numpy's, seeded as Gymnasium seeds it) and its physical state of `N`
/// numbers (none before the first reset); and the reset each of them makes.
pub(crate) struct Classic<const N: usize> {
    pub(crate) spec: EnvSpec,
    pub(crate) rng: EnvRng,
    pub(crate) state: Option<[f64; N]>,
}

impl<const N: usize> Classic<N> {
    /// Env `id` with these spaces, registered as Gymnasium registers it (time limit,
    /// render fps, reward threshold), unseeded and not reset.
    pub(crate) fn new(id: &str, observation_space: Space, action_space: Space, registered: (u64, u32, Option<f64>)) -> Classic<N> {
        let (limit, fps, reward_threshold) = registered;
        let spec = EnvSpec {
            id: id.into(),
            observation_space,
            action_space,
            max_episode_steps: Some(limit),
            render_fps: Some(fps),
            reward_threshold,
            gymnasium_spec: None,
            agents: None,
        };
        Classic { spec, rng: default_rng(), state: None }
    }

    /// Gymnasium's `reset`: reseeded when `seed` is given, the state `draw`n from the
    /// generator (given the options and the env's id), or the rollway-only option
    /// `state`'s exact one; kept and returned.
    pub(crate) fn reset(
        &mut self,
        seed: Option<u64>,
        options: Option<&Info>,
        draw: impl FnOnce(&mut EnvRng, &str) -> Result<[f64; N]>,
    ) -> Result<[f64; N]> {
        maybe_reseed(&mut self.rng, seed);
        let mut state = draw(&mut self.rng, &self.spec.id)?;
        if let Some(exact) = state_option::<N>(options, &self.spec.id)? {
            state = exact;
        }
        self.state = Some(state);
        Ok(state)
    }

    /// The state to step from: an error before the first reset.
    #[inline]
    pub(crate) fn current(&self) -> Result<[f64; N]> {
        self.state.ok_or_else(|| not_reset(&self.spec.id))
    }
}

/// `state()` and `set_state()`, public so that tests and replays can start where
/// Gymnasium was, for a classic env whose [`Classic`] is its field `c`.
macro_rules! physical_state {
    ($n:literal, $what:literal) => {
        #[doc = concat!("The physical state `", $what, "`, if reset.")]
        pub fn state(&self) -> Option<[f64; $n]> {
            self.c.state
        }

        /// Overrides the physical state (the observation is not rewritten).
        pub fn set_state(&mut self, state: [f64; $n]) {
            self.c.state = Some(state);
        }
    };
}
pub(crate) use physical_state;

/// Seed used when an env is reset without ever having been seeded. Gymnasium draws
/// OS entropy there; a fixed seed keeps every rollway run reproducible instead, so
/// an env's first unseeded reset is its `reset(seed=0)`.
const DEFAULT_SEED: u64 = 0;

/// A generator with the default seed.
pub(crate) fn default_rng() -> EnvRng {
    EnvRng::new(DEFAULT_SEED)
}

/// Reseeds `rng` when `seed` is given, like Gymnasium's `Env.reset(seed=...)`;
/// `None` keeps the stream going.
pub(crate) fn maybe_reseed(rng: &mut EnvRng, seed: Option<u64>) {
    if let Some(s) = seed {
        *rng = EnvRng::new(s);
    }
}

/// numpy's `Generator.uniform(low, high)`: `low + (high - low) * u` with `u` in `[0, 1)`.
/// One call per element, in element order, as numpy fills `size=(n,)`.
#[inline]
pub(crate) fn uniform(rng: &mut EnvRng, low: f64, high: f64) -> f64 {
    rng.uniform(low, high)
}

/// An `Error::Env` for env `id`.
pub(crate) fn env_error(id: &str, message: impl Into<String>) -> Error {
    Error::Env { env: id.into(), message: message.into() }
}

/// Reads option `key` as a float like Gymnasium's `verify_number_and_cast`
/// (numbers, booleans and numeric strings), or `default` when absent.
pub(crate) fn option_f64(options: Option<&Info>, key: &str, default: f64, id: &str) -> Result<f64> {
    let Some(v) = options.and_then(|o| o.get(key)) else { return Ok(default) };
    let parsed = match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::Bool(b) => Some(f64::from(u8::from(*b))),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| env_error(id, format!("reset option `{key}` ({v}) could not be converted to a float")))
}

/// Gymnasium's `maybe_parse_reset_bounds`: options `low` / `high`, checked `low <= high`.
pub(crate) fn reset_bounds(options: Option<&Info>, low: f64, high: f64, id: &str) -> Result<(f64, f64)> {
    let low = option_f64(options, "low", low, id)?;
    let high = option_f64(options, "high", high, id)?;
    if low > high {
        return Err(env_error(id, format!("reset option low ({low}) must not exceed high ({high})")));
    }
    uniform_bounds(low, high, id)?;
    Ok((low, high))
}

/// The checks numpy's `Generator.uniform` makes before drawing: `high - low` must
/// be finite (NaN and infinite bounds fail) and not negative. Gymnasium surfaces
/// them as exceptions from `reset`; we return them as errors.
pub(crate) fn uniform_bounds(low: f64, high: f64, id: &str) -> Result<()> {
    let range = high - low;
    if !range.is_finite() {
        return Err(env_error(id, format!("reset range high - low ({high} - {low}) exceeds valid bounds")));
    }
    if range < 0.0 {
        return Err(env_error(id, format!("reset range high - low ({high} - {low}) is negative")));
    }
    Ok(())
}

/// The rollway-only reset option `state`: an exact physical state to start from
/// (a list of N numbers), so tests and replays can begin where Gymnasium was.
pub(crate) fn state_option<const N: usize>(options: Option<&Info>, id: &str) -> Result<Option<[f64; N]>> {
    let Some(v) = options.and_then(|o| o.get("state")) else { return Ok(None) };
    let bad = || env_error(id, format!("reset option `state` must be a list of {N} numbers, got {v}"));
    let list = v.as_array().filter(|a| a.len() == N).ok_or_else(bad)?;
    let mut out = [0.0; N];
    for (o, x) in out.iter_mut().zip(list) {
        *o = x.as_f64().ok_or_else(bad)?;
    }
    Ok(Some(out))
}

/// The Discrete action of `action`, checked against `0..n` like Gymnasium's
/// `action_space.contains` assertion (an error here instead of a crash).
#[inline]
pub(crate) fn discrete_action(action: RowRef<'_>, n: i64, id: &str) -> Result<i64> {
    let a = action.discrete(0);
    if (0..n).contains(&a) {
        Ok(a)
    } else {
        Err(env_error(id, format!("action {a} is outside the action space Discrete({n})")))
    }
}

/// The error for stepping an env that was never reset.
pub(crate) fn not_reset(id: &str) -> Error {
    env_error(id, "step called before reset")
}

/// `x ** 2` for a numpy float64 scalar, which numpy computes with libm's `pow`,
/// not `x * x`; the two differ in the last bit for about 0.1% of inputs.
/// `black_box` keeps LLVM from rewriting `pow(x, 2.0)` into `x * x`.
#[inline]
pub(crate) fn np_pow2(x: f64) -> f64 {
    x.powf(std::hint::black_box(2.0))
}

/// `x ** 2` for a numpy float32 scalar (libm's `powf`), see [`np_pow2`].
#[inline]
pub(crate) fn np_pow2_f32(x: f32) -> f32 {
    x.powf(std::hint::black_box(2.0))
}

/// numpy's float64 `%` (`npy_divmod`): the result takes the divisor's sign.
#[inline]
pub(crate) fn np_mod(a: f64, b: f64) -> f64 {
    let m = a % b;
    if m == 0.0 {
        0.0f64.copysign(b)
    } else if (b < 0.0) != (m < 0.0) {
        m + b
    } else {
        m
    }
}

/// Bounds as Gymnasium stores them: the float32 values of `x`, widened to f64.
pub(crate) fn f32_values(x: &[f64]) -> Vec<f64> {
    x.iter().map(|&v| f64::from(v as f32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_like_gymnasium() {
        let mut o = Info::new();
        o.insert("low", -0.1);
        o.insert("high", "0.2");
        assert_eq!(reset_bounds(Some(&o), -0.05, 0.05, "X").unwrap(), (-0.1, 0.2));
        assert_eq!(reset_bounds(None, -0.05, 0.05, "X").unwrap(), (-0.05, 0.05));
        o.insert("high", -0.2);
        assert!(reset_bounds(Some(&o), -0.05, 0.05, "X").is_err());
        o.insert("high", serde_json::json!([1]));
        assert!(reset_bounds(Some(&o), -0.05, 0.05, "X").is_err());
        // numpy's own range checks, which Gymnasium's `low <= high` check lets through.
        o.insert("low", "nan");
        o.insert("high", 0.2);
        assert!(reset_bounds(Some(&o), -0.05, 0.05, "X").is_err());
        o.insert("low", -1e308);
        o.insert("high", 1e308);
        assert!(reset_bounds(Some(&o), -0.05, 0.05, "X").is_err());
        assert!(uniform_bounds(1.0, -1.0, "X").is_err());
        assert!(uniform_bounds(2.5, 2.5, "X").is_ok());
    }

    #[test]
    fn state_option_checks_length() {
        let mut o = Info::new();
        o.insert("state", serde_json::json!([1.0, 2.0]));
        assert_eq!(state_option::<2>(Some(&o), "X").unwrap(), Some([1.0, 2.0]));
        assert!(state_option::<3>(Some(&o), "X").is_err());
        assert_eq!(state_option::<3>(None, "X").unwrap(), None);
    }

    #[test]
    fn numpy_mod_sign() {
        let two_pi = 2.0 * std::f64::consts::PI;
        assert_eq!(np_mod(-7.5, two_pi), 5.0663706143591725);
        assert_eq!(np_mod(7.5, two_pi), 1.2168146928204138);
        assert!(np_mod(0.0, -1.0).is_sign_negative());
    }
}
