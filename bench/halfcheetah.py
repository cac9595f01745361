"""Issue 55: MuJoCo HalfCheetah-v5 with random actions, env steps/s, side by side in one run:
EnvPool's ``HalfCheetah-v5`` (``num_threads`` = cores), Gymnasium's ``SyncVectorEnv`` and
``AsyncVectorEnv`` of ``gym.make("HalfCheetah-v5")``, ``rollway.Rollout("gym:HalfCheetah-v5",
"random")`` as it comes (rollway's steps, ``rollway._mujoco``: a thread per core), over one env
process per core, and with Gymnasium's own steps in the rollout's thread (``ROLLWAY_MUJOCO=python``,
the default before), and ``rollway.make_vec("gym:HalfCheetah-v5", N)`` driven from a Python loop. Each figure in a
fresh process after a warm-up, the systems alternating, the median of the reps.

    bench/run_mujoco.sh [--envs 8,32] [--reps 3] [--seconds 10] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from benchlib import fmt_rate, fresh_process_rate, log, machine_note, md_table, module_versions, timed_steps, usable_cores, write_report

ENV, T = "HalfCheetah-v5", 128


def loop(env, n: int, seconds: float) -> float:
    """Steps `env` with random actions, drawn the same way for every system: numpy's generator, ~2 µs a call
    at N = 8. (A Box space's `sample()` costs ~26 µs there, 7% of a make_vec call: it had made make_vec and
    Gymnasium's vector envs read slower than EnvPool, which was given the cheap draw.)"""
    import numpy as np

    rng = np.random.default_rng(0)
    return timed_steps(lambda: env.step(rng.uniform(-1, 1, (n, 6)).astype(np.float32)), n, seconds)


def envpool_rate(n: int, seconds: float) -> float:
    import envpool

    env = envpool.make(ENV, env_type="gymnasium", num_envs=n, num_threads=usable_cores(), seed=1)
    env.reset()
    return loop(env, n, seconds)


def gymnasium_rate(n: int, seconds: float, mode: str) -> float:
    import gymnasium as gym

    env = gym.make_vec(ENV, n, vectorization_mode=mode)
    env.reset(seed=1)
    rate = loop(env, n, seconds)
    env.close()
    return rate


def rollway_rate(n: int, seconds: float, workers=None, host="auto", python_steps=False) -> float:
    if python_steps:
        os.environ["ROLLWAY_MUJOCO"] = "python"
    import rollway

    with rollway.Rollout(f"gym:{ENV}", "random", num_envs=n, steps_per_fragment=T, seed=1, workers=workers, host=host) as r:
        return timed_steps(r.collect, n * T, seconds, warmup=1)


def make_vec_rate(n: int, seconds: float) -> float:
    import rollway

    env = rollway.make_vec(f"gym:{ENV}", n)
    env.reset(seed=1)
    rate = loop(env, n, seconds)
    env.close()
    return rate


SYSTEMS = {
    "EnvPool": envpool_rate,
    "Gymnasium SyncVectorEnv": lambda n, s: gymnasium_rate(n, s, "sync"),
    "Gymnasium AsyncVectorEnv": lambda n, s: gymnasium_rate(n, s, "async"),
    "rollway Rollout (default: rollway's steps, a thread per core)": lambda n, s: rollway_rate(n, s),
    "rollway Rollout, rollway's steps, 1 env process per core": lambda n, s: rollway_rate(n, s, usable_cores(), "process"),
    "rollway Rollout, Gymnasium's steps (ROLLWAY_MUJOCO=python), in its thread": lambda n, s: rollway_rate(
        n, s, 1, python_steps=True),
    "rollway make_vec": make_vec_rate,
}


def measure(system: str, n: int, seconds: float) -> float:
    return fresh_process_rate(__file__, system, n, seconds)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="8,32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(SYSTEMS[a.one](a.n, a.seconds)))
        return
    load_start = os.getloadavg()
    envs = [int(x) for x in a.envs.split(",")]
    med = {}
    for n in envs:
        rates = {s: [] for s in SYSTEMS}
        for rep in range(a.reps):
            for s in SYSTEMS:
                rates[s].append(measure(s, n, a.seconds))
                log(f"N={n} rep {rep + 1}: {s} {rates[s][-1]:,.0f}/s")
        med[n] = {s: statistics.median(v) for s, v in rates.items()}
    rows = [[s, *(f"{fmt_rate(med[n][s])} ({med[n][s] / med[n]['EnvPool']:.2f}×)" for n in envs)] for s in SYSTEMS]
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(["rollway", "envpool", "mujoco", "gymnasium", "numpy"]).items())
    text = "\n".join([
        f"MuJoCo {ENV}, random actions: env steps/s, median of {a.reps} ({a.seconds:.0f} s each, after a warm-up; "
        "ratio to EnvPool).", "",
        *machine_note(None, load_start, os.getloadavg(), packages=packages), "",
        *md_table(["", *(f"N = {n}" for n in envs)], rows, "l" + "r" * len(envs))]) + "\n"
    write_report(text, a.out)


if __name__ == "__main__":
    main()
