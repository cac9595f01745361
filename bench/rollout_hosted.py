"""Issue 32: Python envs at small N in a rollout — ``rollway.Rollout`` over ``gym:CartPole-v1``
with the envs in the rollout's thread (``host="inline"``) or in an env process
(``host="process"``), against CleanRL's loop over ``gymnasium.vector.SyncVectorEnv``
(same-step autoreset, the loop writing the same T × N buffers a fragment holds), and
the built-in ``CartPole-v1`` as the floor of an engine with no Python env at all.
The policy costs nothing (zeros), so what is measured is each engine's own cost per
step. Side by side in one run, alternating, median of reps.

Seeding as Gymnasium's vector envs do it (each env seeded at its first reset only,
``seed_each_episode=False``) is the equal setting; rollway's default, every episode
reset with its own seed, is measured beside it: a Python env's ``reset(seed=...)``
builds a numpy Generator, and a zero-action CartPole episode lasts ~10 steps.

    bench/run_hosted_rollout.sh [--envs 1,4,8,16,64] [--reps 5] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import gymnasium as gym
import numpy as np

import rollway
from benchlib import md_table, write_report

T = 256


def zeros(obs, first, state):
    return np.zeros(len(first), dtype=np.int64)


def rollway_rate(env, n: int, host: str, steps: int, each: bool = False, *, t: int = T, choices=None) -> float:
    """Env steps/s of a rollout of `env` (fragments of `t` steps); `choices[n]`: where `host="auto"` put it."""
    with rollway.Rollout(env, zeros, num_envs=n, steps_per_fragment=t, host=host, seed=1, seed_each_episode=each) as r:
        if choices is not None:
            choices[n] = r.host_choice
        r.collect()
        k = max(1, steps // (t * n))
        t0 = time.perf_counter()
        for _ in range(k):
            r.collect()
        return k * t * n / (time.perf_counter() - t0)


def gym_rate(n: int, steps: int) -> float:
    vec = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(n)],
                                   autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    obs, _ = vec.reset(seed=1)
    first = np.ones(n, bool)
    k = max(1, steps // (T * n))
    buf_obs = np.zeros((T + 1, n, 4), np.float32)
    buf_act, buf_rew = np.zeros((T, n), np.int64), np.zeros((T, n), np.float32)
    buf_term, buf_trunc, buf_first = np.zeros((T, n), bool), np.zeros((T, n), bool), np.zeros((T + 1, n), bool)
    t0 = time.perf_counter()
    for _ in range(k):
        for t in range(T):
            buf_obs[t], buf_first[t] = obs, first
            a = zeros(obs, first, None)
            buf_act[t] = a
            obs, r, buf_term[t], buf_trunc[t], _ = vec.step(a)
            buf_rew[t] = r
            first = buf_term[t] | buf_trunc[t]
        buf_obs[T], buf_first[T] = obs, first
    rate = k * T * n / (time.perf_counter() - t0)
    vec.close()
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="1,4,8,16,64")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=200_000, help="env steps per measurement")
    p.add_argument("--out")
    a = p.parse_args()
    systems = {
        "SyncVectorEnv loop": lambda n: gym_rate(n, a.steps),
        "rollway inline": lambda n: rollway_rate("gym:CartPole-v1", n, "inline", a.steps),
        "rollway inline, each episode seeded": lambda n: rollway_rate("gym:CartPole-v1", n, "inline", a.steps, each=True),
        "rollway process": lambda n: rollway_rate("gym:CartPole-v1", n, "process", a.steps),
        "rollway built-in env": lambda n: rollway_rate("CartPole-v1", n, "auto", a.steps),
    }
    rows = []
    for n in [int(x) for x in a.envs.split(",")]:
        rates = {s: [] for s in systems}
        for _ in range(a.reps):
            for s, f in systems.items():
                rates[s].append(f(n))
        med = {s: statistics.median(v) for s, v in rates.items()}
        base = med["SyncVectorEnv loop"]
        print(f"N={n}: " + ", ".join(f"{s} {m:,.0f}/s" for s, m in med.items()), file=sys.stderr, flush=True)
        rows.append([n, *(f"{med[s]:,.0f} ({med[s] / base:.2f}×)" for s in systems)])
    text = "\n".join([
        f"Rollout of hosted CartPole, T = {T}, zero-cost policy; env steps/s, median of {a.reps} (ratio to the SyncVectorEnv loop).", "",
        *md_table(["N", *systems], rows)]) + "\n"
    write_report(text, a.out)


if __name__ == "__main__":
    main()
