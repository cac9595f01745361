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

    bench/.venv or the test venv: python bench/cleanrl_script.py [--steps 8192] [--envs 8] [--reps 2] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import alternating_medians, ratio_report

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


def rate(system: str, steps: int, envs: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ppo_atari.py"
        path.write_text(script_for(system))
        args = ["--gym-id", "BreakoutNoFrameskip-v4", "--total-timesteps", str(steps), "--num-envs", str(envs),
                "--num-steps", "128", "--cuda", "False", "--seed", "1"]
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, str(path), *args], cwd=tmp, capture_output=True, text=True, timeout=3600)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{system}: exit {done.returncode}: {done.stderr[-2000:]}")
        return steps // (envs * 128) * envs * 128 / wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=8192)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--out")
    a = p.parse_args()
    load_start = os.getloadavg()
    med = alternating_medians(SYSTEMS, a.reps, lambda s: rate(s, a.steps, a.envs))
    title = (f"CleanRL's ppo_atari.py (cleanrl 0.4.8), {a.steps:,} steps of {a.envs} envs × 128 on Breakout, whole "
             f"script (start, torch, updates): agent steps/s, median of {a.reps}.")
    ratio_report(title, med, "SB3's make_atari_env", ["envs line", "vs SB3's"],
                 ["rollway", "cleanrl", "stable_baselines3", "torch", "ale_py"], load_start, a.out)

if __name__ == "__main__":
    main()
