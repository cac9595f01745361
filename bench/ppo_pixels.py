"""Issue 32: PPO with a CNN on pixels (rollway.examples.ppo_pixels: CleanRL's Atari network and
update on PixelMine-v0's 64×64 frames), fed by rollway's rollout engine and by CleanRL's
collection loop over Gymnasium's vector envs, side by side in one run.

Systems:
- ``rollway-lag0`` / ``rollway-lag1``: ``rollway.Rollout`` (lag 1 collects the next fragment
  with the previous weights while the learner trains).
- ``gym-sync`` / ``gym-async``: CleanRL's loop (policy forward, ``envs.step``, buffers) on
  ``gymnasium.vector.SyncVectorEnv`` / ``AsyncVectorEnv`` (one process per env) of the same
  env, each a ``gymnasium.Env`` over ``rollway.make_vec(..., num_envs=1)``, same-step autoreset.

EnvPool has no PixelMine, so it is not a peer here. Each (system, seed) runs in a process of
its own, in turn. Reports training steps/s (median over seeds), the share of wall time outside
the policy's forward and the learner's update, the mean return over the first and last fifth
of the updates, and peak RSS. Usage:

    bench/run_ppo_pixels.sh [--seeds 1,2] [--systems rollway-lag0,gym-async] [--steps-total 65536] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))

from gym_source import GymSource  # noqa: E402
from benchlib import fmt_outside, machine_note, md_table, module_versions, train_each, training_parser, write_report  # noqa: E402  (bench/ is on sys.path as the script's folder)

SYSTEMS = ["rollway-lag0", "rollway-lag1", "gym-sync", "gym-async"]


def one_env() -> Any:
    """PixelMine-v0 as a single ``gymnasium.Env`` (rollway's vector env of one)."""
    import gymnasium as gym
    import numpy as np

    from rollway.examples import ppo_pixels
    import rollway

    class One(gym.Env):
        def __init__(self) -> None:
            self.vec = rollway.make_vec(ppo_pixels.ENV, 1, **ppo_pixels.PARAMS)
            self.observation_space = self.vec.single_observation_space
            self.action_space = self.vec.single_action_space

        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            obs, _ = self.vec.reset(seed=seed)
            return {k: v[0] for k, v in obs.items()}, {}

        def step(self, action: Any) -> Any:
            obs, r, term, trunc, _ = self.vec.step(np.asarray([action]))
            return {k: v[0] for k, v in obs.items()}, float(r[0]), bool(term[0]), bool(trunc[0]), {}

        def close(self) -> None:
            self.vec.close()

    return One()


def one(system: str, seed: int, total: int, envs: int, steps: int) -> Dict[str, Any]:
    from rollway.examples import ppo_pixels

    if system.startswith("rollway-lag"):
        r = ppo_pixels.train_pixels(total, envs, steps, int(system[len("rollway-lag"):]), seed, log=False)
    else:
        kind = system.split("-")[-1]
        r = ppo_pixels.train_pixels(total, envs, steps, 0, seed, log=False,
                                    source=lambda acting, e, s, sd, lag, **_: GymSource(kind, acting, e, s, sd, make=one_env))
    r["first_mean"], r["last_mean"] = ppo_pixels.curve_ends(r.pop("curve"))
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    r["system"] = system
    return r


def med(xs: List[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def report(rows: List[Dict[str, Any]], args: argparse.Namespace, note: List[str]) -> str:
    out = [f"PPO with a CNN on PixelMine-v0 (64×64 frames + inventory), {args.envs} envs × {args.steps} steps, "
           f"{args.steps_total} steps a run, CleanRL's Atari settings; seeds {args.seeds}.", "", *note, ""]
    by = {s: [r for r in rows if r["system"] == s] for s in args.systems}
    base = med([r["steps_per_s"] for r in by.get("gym-async", [])])
    cells = []
    for s, rs in by.items():
        sps = med([r["steps_per_s"] for r in rs])
        outside = med([r["outside_share"] for r in rs])
        shown = fmt_outside(outside)
        curve = f"{med([r['first_mean'] for r in rs]):.2f} → {med([r['last_mean'] for r in rs]):.2f}"
        cells.append([s, f"{sps:,.0f}", f"{sps / base:.2f}×", shown, curve, f"{med([r['peak_rss_mb'] for r in rs]):.0f} MB"])
    out += md_table(["system", "steps/s (median)", "vs gym-async", "outside policy+update", "mean return, first → last fifth",
                     "peak RSS"], cells)
    return "\n".join(out) + "\n"


def main() -> None:
    args = training_parser(__doc__, SYSTEMS, seeds="1,2", steps_total=65_536).parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.one:
        print(json.dumps(one(args.one, seeds[0], args.steps_total, args.envs, args.steps)))
        return
    args.systems = args.systems.split(",")
    load_start = os.getloadavg()

    def line(seed: int, r: Dict[str, Any], secs: float) -> str:
        return (f"seed {seed} {r['system']:13} {r['steps_per_s']:6.0f} steps/s  outside {r['outside_share']:.1%}  "
                f"return {r['first_mean']:.2f} → {r['last_mean']:.2f}  ({secs:.0f} s)")

    rows = train_each(__file__, args, seeds, line)
    versions = ", ".join(f"{k} {v}" for k, v in module_versions(["torch", "gymnasium", "numpy", "rollway"]).items())
    note = machine_note(None, load_start, os.getloadavg(), packages=versions)
    write_report(report(rows, args, note), args.out)


if __name__ == "__main__":
    main()
