"""Issue 55: CleanRL's own ``ppo_atari.py`` (PyPI's ``cleanrl`` 0.4.8), edited as
``tests/python/test_cleanrl.py`` edits it, on two envs lines, side by side:

- rollway: ``rollway.sb3.VecEnv("atari:" + gym_id, N, seed=args.seed, episodic_life=True, fire_reset=True,
  reward_clip=True)`` (the test's line);
- Stable-Baselines3's Atari envs, what the script's own gym-era line becomes today:
  ``VecTransposeImage(VecFrameStack(make_atari_env(gym_id, N), 4))`` (SB3's ``AtariWrapper``: the same
  no-ops, skip, life loss, FIRE, 84×84 and clipping as the script's wrappers, in one process as the
  script's ``DummyVecEnv``).

Agent steps/s of the whole script (its network and update included, on the CPU, one torch thread per
core) for a fixed budget, each run in a fresh process, the systems alternating, medians of the reps.

``--curve`` (issue 71) compares learning instead: each system trains once per ``--seeds`` seed for
``--steps``, and the episodes the script itself logs (``charts/episode_reward``: a whole game's raw
return on both lines) are binned by step: the mean return per bin side by side, and for the last bin
the difference between the systems against its standard error.

    bench/.venv or the test venv: python bench/cleanrl_script.py [--steps 8192] [--envs 8] [--reps 2] [--out FILE.md]
    python bench/cleanrl_script.py --curve --steps 100000 --seeds 1 [--bins 5] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import alternating_medians, log, machine_note, md_table, module_versions, ratio_report, write_report

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from test_cleanrl import EDITS, ENVS_LINE, cleanrl_script, edited  # noqa: E402

SB3_LINE = ("import ale_py; gym.register_envs(ale_py)\n"
            "from stable_baselines3.common.env_util import make_atari_env\n"
            "from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage\n"
            "envs = VecPyTorch(VecTransposeImage(VecFrameStack(make_atari_env(args.gym_id, n_envs=args.num_envs, "
            "seed=args.seed), n_stack=4)), device)")
SYSTEMS = {"rollway.sb3.VecEnv": None, "SB3's make_atari_env": SB3_LINE}
ROLLWAY_LINE = next(ours for _what, theirs, ours, _times in EDITS if theirs == ENVS_LINE)


def script_for(system: str) -> str:
    """The test's edits of CleanRL's script, with `system`'s envs line."""
    text = edited(cleanrl_script().read_text())
    line = SYSTEMS[system]
    return text if line is None else text.replace(ROLLWAY_LINE, line)


def train(system: str, steps: int, envs: int, seed: int = 1) -> tuple:
    """One run of the script: (its wall seconds, the (step, return) of each episode it logged)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ppo_atari.py"
        path.write_text(script_for(system))
        args = ["--gym-id", "BreakoutNoFrameskip-v4", "--total-timesteps", str(steps), "--num-envs", str(envs),
                "--num-steps", "128", "--cuda", "False", "--seed", str(seed)]
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, str(path), *args], cwd=tmp, capture_output=True, text=True, timeout=36000)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{system}: exit {done.returncode}: {done.stderr[-2000:]}")
        (run,) = (Path(tmp) / "runs").iterdir()
        acc = EventAccumulator(str(run), size_guidance={"scalars": 0})
        acc.Reload()
        return wall, [(e.step, e.value) for e in acc.Scalars("charts/episode_reward")]


def rate(system: str, steps: int, envs: int) -> float:
    wall, _ = train(system, steps, envs)
    return steps // (envs * 128) * envs * 128 / wall


def curves(a: argparse.Namespace) -> None:
    """The --curve report (see the module docs)."""
    load_start = os.getloadavg()
    episodes: dict = {s: [] for s in SYSTEMS}
    for seed in range(1, a.seeds + 1):
        for s in SYSTEMS:
            wall, eps = train(s, a.steps, a.envs, seed)
            episodes[s] += eps
            log(f"seed {seed}: {s} {len(eps)} episodes in {wall:.0f} s")
    edges = [a.steps * k // a.bins for k in range(a.bins + 1)]
    binned = {s: [[r for step, r in eps if lo < step <= hi] for lo, hi in zip(edges, edges[1:])] for s, eps in episodes.items()}
    fmt = lambda rs: f"{statistics.mean(rs):.2f} ({len(rs)})" if rs else "–"  # noqa: E731
    rows = [[f"{lo:,}–{hi:,}", *(fmt(binned[s][k]) for s in SYSTEMS)] for k, (lo, hi) in enumerate(zip(edges, edges[1:]))]
    last = [binned[s][-1] for s in SYSTEMS]
    se = math.sqrt(sum(statistics.variance(rs) / len(rs) for rs in last)) if all(len(rs) > 1 for rs in last) else float("nan")
    diff = statistics.mean(last[0]) - statistics.mean(last[1]) if all(last) else float("nan")
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(["rollway", "cleanrl", "stable_baselines3", "torch", "ale_py"]).items())
    text = "\n".join([
        f"CleanRL's ppo_atari.py (cleanrl 0.4.8) on Breakout, {a.steps:,} steps of {a.envs} envs × 128, seeds 1–{a.seeds}: "
        "the mean raw game return the script logged in each step bin (episodes in brackets).", "",
        *machine_note(None, load_start, os.getloadavg(), packages=packages), "",
        *md_table(["steps", *SYSTEMS], rows, "l" + "r" * len(SYSTEMS)), "",
        f"Last bin: rollway − SB3's = {diff:+.2f}, standard error {se:.2f} ({diff / se:+.1f} SE).", ""])
    write_report(text, a.out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=8192)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--out")
    p.add_argument("--curve", action="store_true", help="compare learning curves instead of speed")
    p.add_argument("--seeds", type=int, default=1)
    p.add_argument("--bins", type=int, default=5)
    a = p.parse_args()
    if a.curve:
        return curves(a)
    load_start = os.getloadavg()
    med = alternating_medians(SYSTEMS, a.reps, lambda s: rate(s, a.steps, a.envs))
    title = (f"CleanRL's ppo_atari.py (cleanrl 0.4.8), {a.steps:,} steps of {a.envs} envs × 128 on Breakout, whole "
             f"script (start, torch, updates): agent steps/s, median of {a.reps}.")
    ratio_report(title, med, "SB3's make_atari_env", ["envs line", "vs SB3's"],
                 ["rollway", "cleanrl", "stable_baselines3", "torch", "ale_py"], load_start, a.out)

if __name__ == "__main__":
    main()
