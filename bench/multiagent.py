"""Issue 68: PettingZoo envs with random actions, agent steps/s, side by side in one run.

- **SuperSuit** (CleanRL's MARL scripts): ``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), N,
  num_cpus=cores, base_class="gymnasium")``, a vector env of N × K agents over one process per core
  (Knights-Archers-Zombies through ``black_death_v3`` first, which SuperSuit needs for agents that die);
- **PufferLib 3** (``pufferlib-core``): ``pufferlib.vector.make(PettingZooPufferEnv, num_envs=N,
  backend=Multiprocessing, num_workers=cores)``, its ``recv`` / ``send`` loop;
- **rollway**: ``rollway.Rollout("pz:MODULE", "random", num_envs=N)``, fragments of 64 steps (4 for
  pistonball, whose observations are 3.3 MB an env step) (``host``
  as it comes: auto), the same recording every episode into a dataset (``out=``), and the same with
  the env processes running ahead (``mode="async"``);
- **the dataset writer alone**: rows of the env's size, in episodes of its mean length, committed by
  rollway's writer with no env (``crates/store/examples/writer_ceiling.rs``): what recording can reach;
- **the ceiling**: one plain PettingZoo loop per core, all at once, no framework ("bare loops").

The peers get actions drawn before the timed loop (a zero-cost policy); rollway's ``random`` agent
draws in Rust. Agent steps count every possible agent's row each env step (K per env step), as
PufferLib's mask and SuperSuit's black death do. Each figure in a fresh process after a warm-up, the
systems alternating, the median of the reps. ``--warmup-episodes K``: rollway's two systems first
run until K episodes an env have ended (a recording builds its first episodes in fresh memory and
later ones in the buffers the writer hands back: K = 2 times the steady state of a long recording).

    bench/run_multiagent.sh [--envs 8,32] [--reps 3] [--seconds 10] [--games pistonball,simple_spread,kaz]
                            [--warmup-episodes K] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import tempfile
import warnings

from benchlib import (fmt_rate, fresh_process_rate, log, machine_note, md_table, module_versions, timed_steps, usable_cores,
                      write_report, writer_ceiling)

GAMES = {
    "pistonball": ("pettingzoo.butterfly.pistonball_v6", {}),
    "simple_spread": ("mpe2.simple_spread_v3", {}),
    "kaz": ("pettingzoo.butterfly.knights_archers_zombies_v11", {}),
}
# Steps per fragment: pistonball's 20 agents see 457×120 RGB crops each (3.3 MB an env step), so its
# fragments are short.
STEPS = {"pistonball": 4}
T = 64
# Episodes an env that rollway's systems run before they are timed (--warmup-episodes).
WARMUP_EPISODES = 0


def parallel_env(game: str):
    module, params = GAMES[game]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(module).parallel_env(**params)


def agents_of(game: str) -> int:
    return len(parallel_env(game).possible_agents)


def cores() -> int:
    return usable_cores() or os.cpu_count() or 1


def supersuit_rate(game: str, n: int, seconds: float) -> float:
    import numpy as np
    import supersuit as ss

    env = parallel_env(game)
    if game == "kaz":
        env = ss.black_death_v3(env)
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(env), n, num_cpus=cores(), base_class="gymnasium")
    venv.reset(seed=1)
    venv.action_space.seed(0)
    actions = [np.stack([venv.action_space.sample() for _ in range(venv.num_envs)]) for _ in range(16)]
    i = [0]

    def step() -> None:
        i[0] += 1
        venv.step(actions[i[0] % 16])

    rate = timed_steps(step, venv.num_envs, seconds)
    venv.close()
    return rate


def pufferlib_rate(game: str, n: int, seconds: float) -> float:
    import numpy as np
    import pufferlib.emulation
    import pufferlib.vector

    def make(buf=None, seed=0):
        return pufferlib.emulation.PettingZooPufferEnv(env=parallel_env(game), buf=buf, seed=seed)

    vec = pufferlib.vector.make(make, num_envs=n, backend=pufferlib.vector.Multiprocessing, num_workers=min(cores(), n),
                                overwork=True)
    vec.async_reset(seed=1)
    vec.recv()
    vec.action_space.seed(0)
    actions = [vec.action_space.sample() for _ in range(16)]
    rows = n * agents_of(game)
    i = [0]

    def step() -> None:
        i[0] += 1
        vec.send(np.asarray(actions[i[0] % 16]))
        vec.recv()

    rate = timed_steps(step, rows, seconds)
    vec.close()
    return rate


def rollway_rate(game: str, n: int, seconds: float, record: bool = False, mode: str = "sync") -> float:
    import rollway

    module, params = GAMES[game]
    out = tempfile.mkdtemp(prefix="rollway-ma-") if record else None
    try:
        t = STEPS.get(game, T)
        with rollway.Rollout(f"pz:{module}", "random", num_envs=n, steps_per_fragment=t, seed=1, env_params=params,
                             out=None if out is None else os.path.join(out, "ds"), mode=mode) as r:
            ended = 0
            while ended < WARMUP_EPISODES * n:
                ended += int(r.collect().dones.sum())
            return timed_steps(r.collect, n * t * agents_of(game), seconds, warmup=1)
    finally:
        if out is not None:
            shutil.rmtree(out, ignore_errors=True)


def writer_rate(game: str, n: int, seconds: float) -> float:
    """The dataset writer alone, for this env's rows and episode length (no env): agent steps/s."""
    import rollway

    module, params = GAMES[game]
    with rollway.Rollout(f"pz:{module}", "random", num_envs=n, steps_per_fragment=STEPS.get(game, T), seed=1,
                         env_params=params) as r:
        return writer_ceiling(r, seconds) * agents_of(game)


def bare_loop(game: str, seconds: float, q) -> None:
    """One plain PettingZoo loop (random actions drawn before it), agent steps/s, put on ``q``."""
    import time

    env = parallel_env(game)
    env.reset(seed=1)
    k = len(env.possible_agents)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    for i, sp in enumerate(spaces.values()):
        sp.seed(i)
    drawn = [{a: sp.sample() for a, sp in spaces.items()} for _ in range(16)]
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if not env.agents:
            env.reset()
        env.step({a: drawn[steps % 16][a] for a in env.agents})
        steps += 1
    q.put(steps * k / (time.perf_counter() - t0))


def bare_loops_rate(game: str, n: int, seconds: float) -> float:
    """The machine's ceiling for the env: one plain loop per core, all at once, no framework (N does not apply)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=bare_loop, args=(game, seconds, q)) for _ in range(cores())]
    for pr in procs:
        pr.start()
    total = sum(q.get(timeout=seconds * 10 + 120) for _ in procs)
    for pr in procs:
        pr.join()
    return total


SYSTEMS = {
    "bare loops (a plain PettingZoo loop per core: the ceiling)": bare_loops_rate,
    "SuperSuit (concat_vec_envs, a process per core)": supersuit_rate,
    "PufferLib 3 (Multiprocessing, a worker per core)": pufferlib_rate,
    "rollway Rollout": rollway_rate,
    "rollway Rollout, recording every episode": lambda g, n, s: rollway_rate(g, n, s, record=True),
    'rollway Rollout, env processes running ahead (mode="async")': lambda g, n, s: rollway_rate(g, n, s, mode="async"),
    "dataset writer alone (this env's rows, no env: recording's cap)": writer_rate,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="8,32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--games", default=",".join(GAMES))
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--warmup-episodes", type=int, default=0, help="episodes an env rollway runs before it is timed")
    a = p.parse_args()
    global WARMUP_EPISODES
    WARMUP_EPISODES = a.warmup_episodes
    if a.one:
        game, system = a.one.split("|", 1)
        print(json.dumps(SYSTEMS[system](game, a.n, a.seconds)))
        return
    load_start = os.getloadavg()
    envs = [int(x) for x in a.envs.split(",")]
    sections = []
    for game in a.games.split(","):
        med = {}
        for n in envs:
            rates = {s: [] for s in SYSTEMS}
            for rep in range(a.reps):
                for s in SYSTEMS:
                    extra = ["--warmup-episodes", str(a.warmup_episodes)]
                    rates[s].append(fresh_process_rate(__file__, f"{game}|{s}", n, a.seconds, extra))
                    log(f"{game} N={n} rep {rep + 1}: {s} {rates[s][-1]:,.0f} agent steps/s")
            med[n] = {s: statistics.median(v) for s, v in rates.items()}
        base, ahead = "rollway Rollout", 'rollway Rollout, env processes running ahead (mode="async")'
        rows = [[s, *(fmt_rate(med[n][s]) if s in (base, ahead) else
                      f"{fmt_rate(med[n][s])} ({med[n][base] / med[n][s]:.2f}× / {med[n][ahead] / med[n][s]:.2f}×)"
                      for n in envs)] for s in SYSTEMS]
        rec = "rollway Rollout, recording every episode"
        sections += [f"**{game}** ({GAMES[game][0]}, {agents_of(game)} agents): agent steps/s, median of {a.reps}; "
                     "in brackets rollway in lockstep / that system, and running ahead / that system; recording / not recording: "
                     + ", ".join(f"{med[n][rec] / med[n][base]:.2f} at N = {n}" for n in envs), "",
                     *md_table(["", *(f"N = {n}" for n in envs)], rows, "l" + "r" * len(envs)), ""]
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(
        ["rollway", "pettingzoo", "mpe2", "supersuit", "pufferlib", "gymnasium", "numpy"]).items())
    warm = f"; rollway's after {a.warmup_episodes} episodes an env" if a.warmup_episodes else ""
    text = "\n".join([f"PettingZoo envs, random actions: agent steps/s ({a.seconds:.0f} s each, after a warm-up{warm}).", "",
                      *machine_note(None, load_start, os.getloadavg(), packages=packages), "", *sections])
    write_report(text, a.out)


if __name__ == "__main__":
    main()
