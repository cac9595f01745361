"""Issue 67: your own Python env in a rollout at full speed by default. ``rollway.Rollout(env, policy,
num_envs=N)`` with its default ``host="auto"`` (which times one step and picks inline or a process per
core), against Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` stepping the same env in a plain
loop, side by side in one run, alternating, median of reps:

- Gymnasium's CartPole (``gym:CartPole-v1``, ~9 µs a step) at N = 1 to 256, against SyncVectorEnv;
- the Python Atari stack most users bring (ALE Pong under Gymnasium's ``AtariPreprocessing`` and
  ``FrameStackObservation``, ~1 ms a step) at N = 8 and 32, against both.

The policy costs nothing (zeros), so each figure is the engine's own cost per env step. For the
costly env, "bare loops" is the machine's own ceiling, measured alongside: one plain ``env.step``
loop per core, all at once, with no framework. The last column is the estimate that ceiling is
measured against: cores / (one step's cost, the median of one env's steps timed alone).

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


def _bare_loop(make, steps: int, barrier, out) -> None:
    env = make()
    env.reset(seed=1)
    env.step(0)
    barrier.wait()
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            env.reset()
    out.put(time.perf_counter() - t0)


def bare_rate(make, steps: int) -> float:
    """The machine's own ceiling for the env: one bare `env.step` loop per core, all at once, no
    framework at all (steps/s over the slowest loop). No host can step the env faster."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    cores = len(os.sched_getaffinity(0))
    barrier, out = ctx.Barrier(cores), ctx.Queue()
    each = max(1, steps // cores)
    procs = [ctx.Process(target=_bare_loop, args=(make, each, barrier, out)) for _ in range(cores)]
    for p in procs:
        p.start()
    took = max(out.get() for _ in procs)
    for p in procs:
        p.join()
    return each * cores / took


def table(name, env, make, ns, steps, reps, peers, ceiling=False):
    cores = len(os.sched_getaffinity(0))
    one = make()
    cost = step_cost(one, seconds=0.5, most=2000)
    one.close()
    rows, choices = [], {}
    for n in ns:
        systems = {"rollway auto": lambda n=n: rollway_rate(env, n, "auto", steps(n), t=T, choices=choices)}
        systems.update({p: (lambda n=n, k=k: vector_rate(k, make, n, steps(n))) for p, k in peers.items()})
        if ceiling:
            systems["bare loops"] = lambda n=n: bare_rate(make, steps(n))
        rates = {s: [] for s in systems}
        for _ in range(reps):
            for s, f in systems.items():
                rates[s].append(f())
        med = {s: statistics.median(v) for s, v in rates.items()}
        print(f"{name} N={n}: " + ", ".join(f"{s} {m:,.0f}/s" for s, m in med.items()), file=sys.stderr, flush=True)
        host = (choices.get(n) or "").split(":")[0]
        ratios = [f"{med['rollway auto'] / med[p]:.2f}×" for p in [*peers, *(["bare loops"] if ceiling else [])]]
        rows.append([n, host, *(f"{med[s]:,.0f}" for s in systems), *ratios, f"{cores / cost:,.0f}"])
    measured = ["rollway auto", *peers, *(["bare loops"] if ceiling else [])]
    head = ["N", "auto chose", *[f"{s} steps/s" for s in measured], *[f"vs {p}" for p in measured[1:]],
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
        lines += table("ALE Pong, AtariPreprocessing + FrameStackObservation", pong, pong, ns, lambda n: max(4_096, 128 * n),
                       a.reps, both, ceiling=True)
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
