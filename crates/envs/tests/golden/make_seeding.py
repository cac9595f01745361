#!/usr/bin/env python3
"""Writes `seeding.json`: golden vectors for rollway's numpy-exact random stream
(`crates/envs/src/np_random.rs`) and for seeded resets of the classic-control envs,
made by the real numpy and Gymnasium, so `tests/seeding.rs` can check them bit for bit.

Usage (from the repository root, with numpy and gymnasium 1.x installed):

    .ci-venv/bin/python crates/envs/tests/golden/make_seeding.py

Per seed it records:
- the first raw `next_uint64` outputs of `np.random.PCG64(np.random.SeedSequence(seed))`
  (what `gymnasium.utils.seeding.np_random(seed)` builds), as decimal strings;
- a sequence of `Generator.uniform` calls on a fresh generator with that seed
  (scalar, `size=(4,)` and array bounds, as the envs make them) and their results;
- for each env, `gymnasium.make(id).reset(seed=seed)` with and without reset
  options, then one unseeded `reset()` (which continues the stream): the float32
  observation and the float64 unwrapped state;
- for CartPole, the state and observation after each of 20 steps of a fixed action
  sequence from the seeded reset.

Big entropies (integers wider than 64 bits, passed to SeedSequence directly) pin
down the mixing of entropy words beyond the 4-word pool, which u64 seeds never reach.

Float64 values are `repr` strings (exact; JSON numbers lose bits in some parsers).
Float32 observation values are written as the `repr` of their float64 widening, also exact.
"""

import json
import os

import gymnasium as gym
import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))

SEEDS = [0, 1, 42, 2**31 - 1, 2**32, 2**32 + 5, 2**63 - 1, 2**64 - 1, 123456789012345]
BIG_ENTROPY = [2**64, 2**128 + 12345, 2**255 - 19, 3**200]
N_RAW = 8

# Each call: (low, high, size); results are concatenated in call order.
UNIFORM_CALLS = [
    (0.0, 1.0, None),
    (-0.05, 0.05, (4,)),
    (-0.6, -0.4, None),
    (-0.1, 0.1, (4,)),
    ([-np.pi, -1.0], [np.pi, 1.0], None),
    (-1e300, 1e300, None),
    (2.5, 2.5, None),
    (-3.0, 7.25, (3,)),
]

ENV_OPTIONS = {
    "CartPole-v1": {"low": -0.2, "high": 0.3},
    "MountainCar-v0": {"low": -1.0, "high": 0.0},
    "Acrobot-v1": {"low": -0.5, "high": 0.5},
    "Pendulum-v1": {"x_init": 0.5, "y_init": 6.0},
}

CARTPOLE_ACTIONS = [1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0]


def f64s(xs):
    return [repr(float(x)) for x in np.asarray(xs, dtype=np.float64).ravel()]


def obs_f32(obs):
    # float32 -> float64 is exact, so the repr round-trips to the same float32.
    return [repr(float(x)) for x in np.asarray(obs).ravel()]


def state_of(env):
    return f64s(env.unwrapped.state)


def words_of(n):
    """numpy's `_int_to_uint32_array`: 32-bit words, least significant first."""
    from numpy.random.bit_generator import _coerce_to_uint32_array
    return [int(w) for w in _coerce_to_uint32_array(n)]


def raw(entropy):
    bg = np.random.PCG64(np.random.SeedSequence(entropy))
    return [str(int(x)) for x in bg.random_raw(N_RAW)]


def uniform_draws(seed):
    gen, _ = gym.utils.seeding.np_random(seed)
    out = []
    for low, high, size in UNIFORM_CALLS:
        v = gen.uniform(low, high, size)
        out.append({
            "low": f64s(np.atleast_1d(low)),
            "high": f64s(np.atleast_1d(high)),
            "size": None if size is None else list(size),
            "values": f64s(np.atleast_1d(v)),
        })
    return out


def env_resets(env_id, seed):
    env = gym.make(env_id)
    rec = {}
    obs, _ = env.reset(seed=seed, options=ENV_OPTIONS[env_id])
    rec["with_options"] = {"options": ENV_OPTIONS[env_id], "obs": obs_f32(obs), "state": state_of(env)}
    obs, _ = env.reset(seed=seed)
    rec["seeded"] = {"obs": obs_f32(obs), "state": state_of(env)}
    obs, _ = env.reset()
    rec["unseeded_after"] = {"obs": obs_f32(obs), "state": state_of(env)}
    env.close()
    return rec


def cartpole_steps(seed):
    env = gym.make("CartPole-v1")
    env.reset(seed=seed)
    steps = []
    for a in CARTPOLE_ACTIONS:
        obs, reward, term, trunc, _ = env.step(a)
        steps.append({"a": a, "obs": obs_f32(obs), "state": state_of(env), "r": repr(float(reward)), "term": bool(term)})
        if term or trunc:
            break
    env.close()
    return steps


def main():
    doc = {
        "numpy_version": np.__version__,
        "gymnasium_version": gym.__version__,
        "seeds": [],
        "big_entropy": [{"entropy": str(e), "words": words_of(e), "next_uint64": raw(e)} for e in BIG_ENTROPY],
    }
    for s in SEEDS:
        doc["seeds"].append({
            "seed": str(s),
            "words": words_of(s),
            "next_uint64": raw(s),
            "uniform": uniform_draws(s),
            "envs": {env_id: env_resets(env_id, s) for env_id in ENV_OPTIONS},
            "cartpole_steps": cartpole_steps(s),
        })
    path = os.path.join(OUT, "seeding.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes, {len(SEEDS)} seeds")


if __name__ == "__main__":
    main()
