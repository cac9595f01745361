"""Issue 32: the same PPO (rollway.examples.ppo_cartpole: CleanRL's ppo.py network, hyper-parameters
and update) fed by rollway's rollout engine and by CleanRL's own loop over Gymnasium's
vector envs, side by side in one run, several seeds.

Systems:
- ``rollway-lag0``: ``rollway.Rollout``, strictly on-policy (CleanRL's semantics).
- ``rollway-lag0-nobootstrap``: the same, with truncated episodes treated as terminated, as CleanRL's
  loop does (issue 48: the default bootstraps them from ``final_obs``; this measures what that costs).
- ``rollway-lag1``: the next fragment is collected with the previous weights while the learner trains.
- ``gym-sync`` / ``gym-async``: CleanRL's loop (policy forward, ``envs.step``, buffers) on
  ``gymnasium.vector.SyncVectorEnv`` / ``AsyncVectorEnv``, same-step autoreset (CleanRL's
  gymnasium 0.29 semantics, which rollway's fragments follow too).
- ``torchrl-sync`` / ``torchrl-multisync``: TorchRL's ``SyncDataCollector`` over a ``SerialEnv`` of N
  ``GymEnv``s, and ``MultiSyncDataCollector`` with two worker processes of N/2 envs each, the same
  network acting as a ``TensorDictModule`` (bench/torchrl_source.py; skipped if TorchRL is not installed).
- ``envpool``: the same loop on ``envpool.make("CartPole-v1", env_type="gymnasium")`` (skipped if
  EnvPool is not installed). EnvPool resets an env on the step after its episode ended, so each
  episode adds one transition whose action is ignored; like CleanRL's EnvPool scripts, the loop
  keeps it (``first`` marks the step after an end).
- ``rollway-ray``: ``rollway.ray.Rollout`` on a local two-node Ray cluster (loopback), the N envs
  split over two actors (one per node), one synchronous round per update at lag 0, the weights
  sent out after each (bench/ray_source.py); its startup (the actors' imports) counts.
- ``sf-serial`` / ``sf-async``: Sample Factory 2.1.1's own PPO, set as close to CleanRL's as its
  options allow (bench/sf_cartpole.py says what differs), synchronous or with its worker
  processes, in its own venv (``bash bench/sf_venv.sh`` makes it; skipped without it). Its
  forward and update run inside its processes, so "outside" is not measured for it.

Each (system, seed) runs in a process of its own (peak memory is that process's), in turn
per seed, so slow drifts of the machine spread over every system alike. Reports, per
system: training steps/s, wall time to mean return ≥ 475 over the last 20 episodes
(median and spread over seeds), the share of wall time outside the policy's forward and
the learner's update, and peak RSS. Usage:

    bench/run_ppo.sh [--seeds 1,2,3,4,5] [--systems rollway-lag0,gym-sync] [--steps-total 500000] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))

from gym_source import GymSource  # noqa: E402
from benchlib import fmt_outside, log, md_table, train_each, training_parser, write_report  # noqa: E402  (bench/ is on sys.path as the script's folder)

SYSTEMS = ["rollway-lag0", "rollway-lag0-nobootstrap", "rollway-lag1", "rollway-ray", "gym-sync", "gym-async", "envpool", "torchrl-sync", "torchrl-multisync",
           "sf-serial", "sf-async"]
SF_PYTHON = os.environ.get("SF_PYTHON", os.path.join(HERE, ".venv-sf", "bin", "python"))
# The peers that are only run when their package imports.
OPTIONAL = {"envpool": "envpool", "torchrl-sync": "torchrl", "torchrl-multisync": "torchrl", "rollway-ray": "ray"}


def one(system: str, seed: int, total: int, envs: int, steps: int) -> Dict[str, Any]:
    from rollway.examples import ppo_cartpole

    if system.startswith("sf-"):
        cmd = [SF_PYTHON, os.path.join(HERE, "sf_cartpole.py"), "--mode", system[3:], "--workers", "2", "--seed", str(seed),
               "--steps-total", str(total), "--envs", str(envs), "--steps", str(steps)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    if system == "rollway-ray":
        from ray_source import RaySource, two_nodes

        with two_nodes():
            r = ppo_cartpole.train(total, envs, steps, 0, seed, log=False,
                                   source=lambda acting, e, s, sd, lag, **_: RaySource(acting, e, s, sd))
    elif system == "rollway-lag0-nobootstrap":
        r = ppo_cartpole.train(total, envs, steps, 0, seed, log=False, bootstrap=False)
    elif system.startswith("rollway-lag"):
        r = ppo_cartpole.train(total, envs, steps, int(system[len("rollway-lag"):]), seed, log=False)
    elif system.startswith("torchrl-"):
        from torchrl_source import TorchRLSource

        kind = system.split("-")[-1]
        r = ppo_cartpole.train(total, envs, steps, 0, seed, log=False,
                               source=lambda acting, e, s, sd, lag, **_: TorchRLSource(kind, acting, e, s, sd))
    else:
        kind = system.split("-")[-1]
        r = ppo_cartpole.train(total, envs, steps, 0, seed, log=False,
                               source=lambda acting, e, s, sd, lag, **_: GymSource(kind, acting, e, s, sd, "CartPole-v1"))
    r.pop("curve")
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    r["system"] = system
    return r


def med(xs: List[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def report(rows: List[Dict[str, Any]], args: argparse.Namespace) -> str:
    import platform

    out = [f"PPO on CartPole-v1, {args.envs} envs × {args.steps} steps, CleanRL's hyper-parameters; seeds {args.seeds}; "
           f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), Python {platform.python_version()}.", ""]
    cells = []
    by = {s: [r for r in rows if r["system"] == s] for s in args.systems}
    base = med([r["steps_per_s"] for r in by.get("gym-sync", [])])
    for s, rs in by.items():
        sps = med([r["steps_per_s"] for r in rs])
        solved = [r["solved_s"] for r in rs if r["solved_s"] is not None]
        t = f"{med(solved):.1f} s ({min(solved):.1f}–{max(solved):.1f})" if solved else "n/a"
        measured = [r["outside_share"] for r in rs if r["outside_share"] is not None]
        shown = fmt_outside(med(measured)) if measured else "n/a (its own processes)"
        cells.append([s, f"{sps:,.0f}", f"{sps / base:.2f}×", t, f"{len(solved)}/{len(rs)}", shown,
                      f"{med([r['peak_rss_mb'] for r in rs]):.0f} MB"])
    out += md_table(["system", "steps/s (median)", "vs gym-sync", "time to 475 (median, min–max)", "solved",
                     "outside policy+update", "peak RSS"], cells)
    return "\n".join(out) + "\n"


def main() -> None:
    args = training_parser(__doc__, SYSTEMS, seeds="1,2,3,4,5", steps_total=500_000).parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.one:
        print(json.dumps(one(args.one, seeds[0], args.steps_total, args.envs, args.steps)))
        return
    args.systems = args.systems.split(",")
    for system, package in OPTIONAL.items():
        if system in args.systems and importlib.util.find_spec(package) is None:
            log(f"{package} is not installed: {system} skipped")
            args.systems.remove(system)
    for system in [s for s in args.systems if s.startswith("sf-")]:
        if not os.access(SF_PYTHON, os.X_OK):
            log(f"no Sample Factory venv at {SF_PYTHON} (bash bench/sf_venv.sh makes it): {system} skipped")
            args.systems.remove(system)

    def line(seed: int, r: Dict[str, Any], secs: float) -> str:
        outside = "n/a" if r["outside_share"] is None else f"{r['outside_share']:.1%}"
        return f"seed {seed} {r['system']:17} {r['steps_per_s']:7.0f} steps/s  solved {r['solved_s']}  outside {outside}"

    write_report(report(train_each(__file__, args, seeds, line), args), args.out)


if __name__ == "__main__":
    main()
