#!/usr/bin/env python3
"""Issue 47: what a long run's machinery costs the PPO learner, side by side.

``rollway.examples.ppo_cartpole``'s ``train`` (CleanRL's PPO, 8 envs × 128 steps, lag 0, one torch
thread), three ways, each ``--steps-total`` env steps, taken in turn (the order rotated
every rep):

- **plain**: no replay, no log, no checkpoint (the bench of ``bench/ppo_cartpole.py``);
- **replay only**: ``Rollout(out=…)`` alone, to tell the recording's share;
- **long run**: ``run_dir=``: every episode recorded into the replay, TensorBoard scalars
  per fragment, the learner checkpointed atomically every 10 updates;
- **stopped + resumed**: the same in two lives: half the steps, then run again to the end,
  resuming from the checkpoint into the same replay (a new run in it, each slot's
  numbering found from the index); steps/s over both lives, start-up and resume included.
  (Killing the first life instead costs what it had not committed or checkpointed: the
  tests check that it loses nothing else, ``tests/python/test_training_resume.py``.)

Steps/s of the training loop (collect + update + publish), medians over ``--reps``. Progress
to stderr, the report to stdout.

    python bench/ppo_long_run.py [--reps 5] [--steps-total 40960] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402

SYSTEMS = ("plain", "replay only", "long run", "stopped + resumed")


def one(system: str, total: int, seed: int, work: str) -> float:
    from rollway.examples import ppo_cartpole

    if system == "plain":
        return ppo_cartpole.train(total, 8, 128, 0, seed, log=False, stop_when_solved=False)["steps_per_s"]
    run_dir = tempfile.mkdtemp(dir=work)
    if system == "replay only":
        def source(acting, e, s, sd, lag, **kw):
            return ppo_cartpole.rollway_source(acting, e, s, sd, lag, rollout_args={"out": os.path.join(run_dir, "replay")})
        return ppo_cartpole.train(total, 8, 128, 0, seed, log=False, stop_when_solved=False, source=source)["steps_per_s"]
    if system == "long run":
        return ppo_cartpole.train(total, 8, 128, 0, seed, log=False, stop_when_solved=False, run_dir=run_dir)["steps_per_s"]
    first = ppo_cartpole.train(total // 2, 8, 128, 0, seed, log=False, stop_when_solved=False, run_dir=run_dir)
    second = ppo_cartpole.train(total, 8, 128, 0, seed, log=False, stop_when_solved=False, run_dir=run_dir)
    return total / (first["wall_s"] + second["wall_s"])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps-total", type=int, default=40_960)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()
    load0 = os.getloadavg()
    got: Dict[str, List[float]] = {s: [] for s in SYSTEMS}
    with tempfile.TemporaryDirectory() as work:
        for rep in range(a.reps):
            order = SYSTEMS[rep % len(SYSTEMS):] + SYSTEMS[:rep % len(SYSTEMS)]
            for s in order:
                got[s].append(one(s, a.steps_total, a.seed, work))
            log(f"rep {rep + 1}/{a.reps}: " + ", ".join(f"{s} {got[s][-1]:,.0f}" for s in SYSTEMS))
    base = statistics.median(got["plain"])
    rows = [[s, f"{statistics.median(v):,.0f}", f"{min(v):,.0f} – {max(v):,.0f}", f"{statistics.median(v) / base:.3f}×"]
            for s, v in got.items()]
    lines = [f"### A long run's machinery in the PPO loop (`bench/ppo_long_run.py --reps {a.reps} --steps-total {a.steps_total}`)", ""]
    lines += md_table(["PPO on CartPole-v1", "median steps/s", "range", "vs plain"], rows, "lrrr")
    lines += ["", "long run: `train(run_dir=…)`: the replay recorded (every episode, commit every 1 s), TensorBoard scalars per "
              "fragment, a checkpoint every 10 updates. stopped + resumed: two calls, the first to half the steps, "
              "the second resuming from the checkpoint (`Rollout(resume=True, version=…)`); steps/s over "
              "both lives. Taken in turn, the order rotated every rep; 8 envs × 128 steps, lag 0, one torch thread.", ""]
    lines += machine_note(None, load0, os.getloadavg(), packages=str(module_versions(["torch", "numpy"])))
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
