"""Issue 67: your own Python env in a rollout at full speed by default. ``rollway.Rollout(env, policy,
num_envs=N)`` with its default ``host="auto"`` (which times one step and picks inline or a process per
core), against Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` stepping the same env in a plain
loop, side by side in one run, alternating, median of reps:

- Gymnasium's CartPole (``gym:CartPole-v1``, ~9 µs a step) at N = 1 to 256, against SyncVectorEnv;
- the Python Atari stack most users bring (ALE Pong under Gymnasium's ``AtariPreprocessing`` and
  ``FrameStackObservation``, ~1 ms a step) at N = 8 and 32, against both.

The policy costs nothing (zeros), so each figure is the engine's own cost per env step. The
last column estimates what the cores allow: cores / (one step's cost, the median of one env's steps here
before the rest), since no host steps faster than every core busy with env code.

    bench/run_python_envs.sh [--reps 3] [--cartpole 1,4,16,64,256] [--atari 8,32] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import gymnasium as gym
import numpy as np

from benchlib import md_table, write_report
from rollout_hosted import rollway_rate
from rollway._host import step_cost

T = 64


def pong():
    """ALE Pong as Gymnasium's own Atari preprocessing gives it."""
    import ale_py

    gym.register_envs(ale_py)
    env = gym.make("ALE/Pong-v5", frameskip=1)
    env = gym.wrappers.AtariPreprocessing(env, frame_skip=4, noop_max=30)
    return gym.wrappers.FrameStackObservation(env, 4)


def cartpole():
    return gym.make("CartPole-v1")


def vector_rate(kind, make, n: int, steps: int) -> float:
    vec = kind([make] * n)
    vec.reset(seed=1)
    act = np.zeros(n, dtype=np.int64)
    vec.step(act)
    k = max(1, steps // n)
    t0 = time.perf_counter()
    for _ in range(k):
        vec.step(act)
    rate = k * n / (time.perf_counter() - t0)
    vec.close()
    return rate


def table(name, env, make, ns, steps, reps, peers):
    cores = len(os.sched_getaffinity(0))
    one = make()
    cost = step_cost(one, seconds=0.5, most=2000)
    one.close()
    rows, choices = [], {}
    for n in ns:
        systems = {"rollway auto": lambda n=n: rollway_rate(env, n, "auto", steps(n), t=T, choices=choices)}
        systems.update({p: (lambda n=n, k=k: vector_rate(k, make, n, steps(n))) for p, k in peers.items()})
        rates = {s: [] for s in systems}
        for _ in range(reps):
            for s, f in systems.items():
                rates[s].append(f())
        med = {s: statistics.median(v) for s, v in rates.items()}
        print(f"{name} N={n}: " + ", ".join(f"{s} {m:,.0f}/s" for s, m in med.items()), file=sys.stderr, flush=True)
        host = (choices.get(n) or "").split(":")[0]
        ratios = [f"{med['rollway auto'] / med[p]:.2f}×" for p in peers]
        rows.append([n, host, *(f"{med[s]:,.0f}" for s in systems), *ratios, f"{cores / cost:,.0f}"])
    head = ["N", "auto chose", *[f"{s} steps/s" for s in ["rollway auto", *peers]], *[f"vs {p}" for p in peers],
            f"{cores} cores / one step"]
    return [f"**{name}** (one step: {cost * 1e6:,.0f} µs here), median of {reps}:", "", *md_table(head, rows), ""]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cartpole", default="1,4,16,64,256")
    p.add_argument("--atari", default="8,32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out")
    a = p.parse_args()
    lines = [f"### Python envs in a rollout, `host=\"auto\"` (`bench/python_envs.py --reps {a.reps}`)", ""]
    sync, both = {"SyncVectorEnv": gym.vector.SyncVectorEnv}, {"SyncVectorEnv": gym.vector.SyncVectorEnv,
                                                                 "AsyncVectorEnv": gym.vector.AsyncVectorEnv}
    if a.cartpole:
        ns = [int(x) for x in a.cartpole.split(",")]
        lines += table("Gymnasium CartPole-v1", "gym:CartPole-v1", cartpole, ns, lambda n: max(20_000, 400 * n), a.reps, sync)
    if a.atari:
        ns = [int(x) for x in a.atari.split(",")]
        lines += table("ALE Pong, AtariPreprocessing + FrameStackObservation", pong, pong, ns, lambda n: max(1_500, 64 * n),
                       a.reps, both)
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
