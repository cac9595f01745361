#!/usr/bin/env python3
"""Writes golden transition vectors for rollway's classic-control envs using the
real Gymnasium package, so `tests/golden.rs` can check our Rust ports bit for bit.

Usage (from the repository root):

    python3 -m venv .venv && .venv/bin/pip install gymnasium numpy
    .venv/bin/python crates/envs/tests/golden/make_golden.py

Each `<env>.json` holds Gymnasium's spaces and spec, and several seeded episodes:
random actions, scripted controllers (to reach truncation at the time limit or
termination), and episodes started from hand-picked states that exercise clipping,
wrapping and bounds. Per transition it records the full-precision internal state
before and after, the action, the float32 observation, reward and flags.

Float64 values (states, rewards, space bounds) are written as `repr` strings,
because JSON numbers lose the last bit in some parsers (serde_json's default one
among them) and cannot hold infinities. Observations and actions are float32
values, which survive a JSON number round trip exactly.
"""

import json
import math
import os

import gymnasium as gym
import numpy as np

OUT = os.path.dirname(os.path.abspath(__file__))


def f64s(xs):
    return [repr(float(x)) for x in xs]


def f32_nums(xs):
    return [float(np.float32(x)) for x in np.asarray(xs, dtype=np.float32).ravel()]


def space_json(space):
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    assert isinstance(space, gym.spaces.Box)
    return {
        "type": "Box",
        "dtype": str(space.dtype),
        "shape": list(space.shape),
        "low": f64s(space.low.ravel()),
        "high": f64s(space.high.ravel()),
    }


def state_of(env):
    return f64s(np.asarray(env.unwrapped.state, dtype=np.float64).ravel())


def episode(env, name, seed, policy, options=None, start_state=None, extra_after_end=0, max_steps=None):
    """Rolls one episode; `policy(obs, rng)` gives the action.

    `start_state` overrides the state right after reset (the reset observation is
    then not Gymnasium's, so it is left out). `extra_after_end` steps continue past
    termination, to pin down Gymnasium's behaviour there.
    """
    rng = np.random.default_rng(seed + 1000)
    obs, _ = env.reset(seed=seed, options=options)
    reset_obs = f32_nums(obs)
    if start_state is not None:
        env.unwrapped.state = np.array(start_state, dtype=np.float64)
        reset_obs = None
    ep = {"name": name, "seed": seed, "reset_state": state_of(env), "reset_obs": reset_obs, "steps": []}
    obs = np.asarray(obs) if start_state is None else None
    extra = None
    while True:
        s = state_of(env)
        action = policy(obs, rng, env)
        obs, reward, terminated, truncated, _ = env.step(action)
        if isinstance(action, np.ndarray):
            a = f32_nums(action)
        else:
            a = int(action)
        ep["steps"].append({
            "s": s,
            "a": a,
            "s2": state_of(env),
            "obs": f32_nums(obs),
            "r": repr(float(reward)),
            "term": bool(terminated),
            "trunc": bool(truncated),
        })
        if extra is not None:
            extra -= 1
            if extra == 0:
                break
        elif terminated or truncated:
            if terminated and not truncated and extra_after_end > 0:
                extra = extra_after_end
            else:
                break
        if max_steps is not None and len(ep["steps"]) >= max_steps:
            break
    last = ep["steps"][-1]
    print(f"  {name}: {len(ep['steps'])} steps, term={last['term']} trunc={last['trunc']}")
    return ep


def write(env_id, episodes, env):
    spec = env.spec
    doc = {
        "env_id": env_id,
        "gymnasium_version": gym.__version__,
        "numpy_version": np.__version__,
        "max_episode_steps": spec.max_episode_steps,
        "reward_threshold": spec.reward_threshold,
        "render_fps": env.metadata.get("render_fps"),
        "observation_space": space_json(env.observation_space),
        "action_space": space_json(env.action_space),
        "episodes": episodes,
    }
    path = os.path.join(OUT, f"{env_id}.json")
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    print(f"{path}: {os.path.getsize(path)} bytes")


def random_discrete(n):
    return lambda obs, rng, env: int(rng.integers(n))


def cartpole():
    env = gym.make("CartPole-v1")

    def balance(noise):
        def pol(obs, rng, env):
            if rng.random() < noise:
                return int(rng.integers(2))
            x, xd, th, thd = env.unwrapped.state
            return 1 if 0.05 * x + 0.2 * xd + th + 0.3 * thd > 0 else 0
        return pol

    eps = [
        episode(env, "random, stepped past termination", 0, random_discrete(2), extra_after_end=3),
        episode(env, "random", 1, random_discrete(2)),
        episode(env, "random, wide reset", 2, random_discrete(2), options={"low": -0.2, "high": 0.2}),
        episode(env, "always right", 3, lambda o, r, e: 1),
        episode(env, "noisy balancer to the time limit", 4, balance(0.15)),
        episode(env, "balancer from a leaning start", 5, balance(0.05), start_state=[1.5, -0.5, 0.15, -0.3]),
    ]
    write("CartPole-v1", eps, env)


def mountain_car():
    env = gym.make("MountainCar-v0")

    def energy(obs, rng, env):
        return 2 if env.unwrapped.state[1] >= 0 else 0

    def wall_then_energy(obs, rng, env):
        pos, vel = env.unwrapped.state
        return 0 if pos > -1.19 and vel <= 0 else energy(obs, rng, env)

    eps = [
        episode(env, "random to the time limit", 0, random_discrete(3)),
        episode(env, "random, wide reset", 1, random_discrete(3), options={"low": -1.0, "high": 0.0}),
        episode(env, "energy pumping to the goal", 2, energy),
        episode(env, "into the left wall, then to the goal", 3, wall_then_energy, start_state=[-1.1, -0.05]),
        episode(env, "at the speed limit", 5, lambda o, r, e: 2, start_state=[-0.6, 0.0695], max_steps=20),
        episode(env, "near the goal", 4, random_discrete(3), start_state=[0.45, 0.005], max_steps=40),
    ]
    write("MountainCar-v0", eps, env)


def acrobot():
    env = gym.make("Acrobot-v1")

    def pump(obs, rng, env):
        d1, d2 = env.unwrapped.state[2], env.unwrapped.state[3]
        u = d2 - 0.25 * d1
        return 2 if u > 0 else (0 if u < 0 else 1)

    def spin(obs, rng, env):
        return 2 if rng.random() < 0.8 else int(rng.integers(3))

    eps = [
        episode(env, "random to the time limit", 0, random_discrete(3)),
        episode(env, "pumping to the goal", 1, pump),
        episode(env, "pumping, wide reset", 2, pump, options={"low": -0.5, "high": 0.5}),
        episode(env, "fast spin (wrap and velocity bounds)", 3, spin, start_state=[0.0, 3.0, 0.5, 28.0],
                extra_after_end=40, max_steps=80),
    ]
    write("Acrobot-v1", eps, env)


def pendulum():
    env = gym.make("Pendulum-v1")

    def uniform(lo, hi):
        return lambda obs, rng, env: np.array([rng.uniform(lo, hi)], dtype=np.float32)

    def swing(obs, rng, env):
        th, thd = env.unwrapped.state
        th = math.atan2(math.sin(th), math.cos(th))
        energy = 0.5 * thd * thd + 15.0 * math.cos(th)
        if math.cos(th) > 0.95:
            u = -(10.0 * th + 2.0 * thd)
        else:
            u = 2.0 if (15.0 - energy) * thd > 0 else -2.0
        return np.array([u], dtype=np.float32)

    eps = [
        episode(env, "random torques", 0, uniform(-2.0, 2.0), max_steps=120),
        episode(env, "out-of-range torques (clipped)", 1, uniform(-5.0, 5.0), max_steps=120),
        episode(env, "swing-up to the time limit", 2, swing),
        episode(env, "near the speed limit, wound up", 3, uniform(1.0, 3.0), start_state=[20.0, 7.9], max_steps=50),
        episode(env, "wide reset", 4, uniform(-2.0, 2.0), options={"x_init": 0.5, "y_init": 6.0}, max_steps=30),
    ]
    write("Pendulum-v1", eps, env)


if __name__ == "__main__":
    cartpole()
    mountain_car()
    acrobot()
    pendulum()
