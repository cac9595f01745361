"""Issue 55: Atari Pong with the standard preprocessing (no-op reset up to 30, frame skip 4 with
the max of the last two frames, 84×84 grayscale by INTER_AREA, a stack of 4; sticky actions 0.25,
as ALE's v5), random actions, agent steps/s, side by side in one run:

- the floor: ale-py's ``ALEInterface`` alone, four ``act`` calls and two grayscale screens a step
  in a Python loop, in one process (per core), and in one process per core at once (what the
  machine's cores emulate together, the ceiling of any engine here);
- EnvPool ``Pong-v5`` (its own C++ preprocessing; ``repeat_action_probability=0.25`` and
  ``use_fire_reset=False`` to match Gymnasium's, ``num_threads`` = cores);
- Gymnasium's ``AsyncVectorEnv`` of ``FrameStackObservation(AtariPreprocessing(...))``;
- ``rollway.Rollout("atari:Pong-v5", "random")`` as it comes (one env process per core, each
  env seeded once, as EnvPool's and Gymnasium's vector envs are), and with every episode reset
  with its own seed, as a recording needs (Gymnasium's seeded reset reloads the ROM);
- ``rollway.make_vec("atari:Pong-v5", N)``, a ``gymnasium.vector.VectorEnv`` stepped from a
  Python loop with random actions, as EnvPool is.

Each figure is measured in a fresh process (after a warm-up), the systems alternate, and each
cell is the median of the reps.

    bench/run_atari.sh [--envs 8,32,64] [--reps 3] [--seconds 10] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from benchlib import fmt_rate, fresh_process_rate, log, machine_note, md_table, module_versions, timed_steps, usable_cores, write_report

GAME, T = "Pong-v5", 128


def floor(_n: int, seconds: float) -> float:
    import ale_py
    import numpy as np
    from ale_py import roms

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.setInt("random_seed", 1)
    ale.setFloat("repeat_action_probability", 0.25)
    ale.loadROM(roms.get_rom_path("pong"))
    actions = ale.getMinimalActionSet()
    screens = np.zeros((2, 210, 160), np.uint8)
    picks = np.random.default_rng(0).integers(0, len(actions), 4096)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(64):
            a = actions[picks[n % 4096]]
            n += 1
            for f in range(4):
                ale.act(a)
                if f >= 2:
                    ale.getScreenGrayscale(screens[f - 2])
            if ale.game_over():
                ale.reset_game()
    return n / (time.perf_counter() - t0)


def envpool_rate(n: int, seconds: float) -> float:
    import envpool
    import numpy as np

    env = envpool.make(GAME, env_type="gymnasium", num_envs=n, num_threads=usable_cores(), seed=1,
                       repeat_action_probability=0.25, use_fire_reset=False)
    env.reset()
    rng = np.random.default_rng(0)
    return timed_steps(lambda: env.step(rng.integers(0, env.action_space.n, n)), n, seconds)


def gymnasium_rate(n: int, seconds: float) -> float:
    import ale_py
    import gymnasium as gym
    import numpy as np
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    def make():
        import ale_py
        import gymnasium as gym

        gym.register_envs(ale_py)
        return FrameStackObservation(AtariPreprocessing(gym.make(f"ALE/{GAME}", frameskip=1)), 4)

    gym.register_envs(ale_py)
    env = gym.vector.AsyncVectorEnv([make] * n)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    rate = timed_steps(lambda: env.step(rng.integers(0, env.single_action_space.n, n)), n, seconds)
    env.close()
    return rate


def rollway_rate(n: int, seconds: float, each: bool) -> float:
    import rollway

    with rollway.Rollout(f"atari:{GAME}", "random", num_envs=n, steps_per_fragment=T, seed=1, seed_each_episode=each or None) as r:
        return timed_steps(r.collect, n * T, seconds, warmup=1)


def make_vec_rate(n: int, seconds: float) -> float:
    import numpy as np

    import rollway

    env = rollway.make_vec(f"atari:{GAME}", n)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    rate = timed_steps(lambda: env.step(rng.integers(0, env.single_action_space.n, n)), n, seconds)
    env.close()
    return rate


SYSTEMS = {
    "ALE alone, 1 process": floor,
    "EnvPool": envpool_rate,
    "Gymnasium AsyncVectorEnv": gymnasium_rate,
    "rollway Rollout (default)": lambda n, s: rollway_rate(n, s, False),
    "rollway Rollout, every episode seeded": lambda n, s: rollway_rate(n, s, True),
    "rollway make_vec": make_vec_rate,
}
FLOOR_ALL = "ALE alone, 1 process per core at once"


def measure(system: str, n: int, seconds: float) -> float:
    """One figure, in a fresh process; the floor of all cores is that many processes at once."""
    if system != FLOOR_ALL:
        return fresh_process_rate(__file__, system, n, seconds)
    cmd = [sys.executable, __file__, "--one", "ALE alone, 1 process", "--n", str(n), "--seconds", str(seconds)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for _ in range(usable_cores())]
    rates = []
    for p in procs:
        out, _ = p.communicate(timeout=seconds * 10 + 300)
        if p.returncode != 0:
            raise RuntimeError(f"{system} at N={n} failed (exit {p.returncode})")
        rates.append(json.loads(out.strip().splitlines()[-1]))
    return sum(rates)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--envs", default="8,32,64")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--gym-max", type=int, default=32, help="the largest N Gymnasium's AsyncVectorEnv (a process per env) is run at")
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(SYSTEMS[a.one](a.n, a.seconds)))
        return
    load_start = os.getloadavg()
    order = [FLOOR_ALL, *SYSTEMS]
    envs = [int(x) for x in a.envs.split(",")]
    med = {}
    for n in envs:
        rates = {s: [] for s in order}
        for rep in range(a.reps):
            for s in order:
                if s == "Gymnasium AsyncVectorEnv" and n > a.gym_max:
                    continue
                if s.startswith("ALE alone") and n != envs[0]:
                    continue  # the floor does not depend on N
                rates[s].append(measure(s, n, a.seconds))
                log(f"N={n} rep {rep + 1}: {s} {rates[s][-1]:,.0f}/s")
        med[n] = {s: statistics.median(v) for s, v in rates.items() if v}
    floor1, floor_all = med[envs[0]]["ALE alone, 1 process"], med[envs[0]][FLOOR_ALL]

    def cell(n, s):
        if s not in med[n]:
            return "n/a"
        ep = med[n].get("EnvPool")
        return f"{fmt_rate(med[n][s])} ({med[n][s] / ep:.2f}× EnvPool, {med[n][s] / floor_all:.0%} of the floor)"

    rows = [[s, *(cell(n, s) for n in envs)] for s in SYSTEMS if not s.startswith("ALE alone")]
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(["rollway", "envpool", "ale_py", "gymnasium", "numpy", "cv2"]).items())
    text = "\n".join([
        f"Atari {GAME}, standard preprocessing, random actions: agent steps/s, median of {a.reps} "
        f"({a.seconds:.0f} s each, after a warm-up; ratio to EnvPool, share of the floor of all cores).", "",
        *machine_note(None, load_start, os.getloadavg(), packages=packages), "",
        f"- Floor: ALE alone in 1 process {fmt_rate(floor1)}; in {usable_cores()} processes at once {fmt_rate(floor_all)} in all.", "",
        *md_table(["", *(f"N = {n}" for n in envs)], rows, "l" + "r" * len(envs))]) + "\n"
    write_report(text, a.out)


if __name__ == "__main__":
    main()
