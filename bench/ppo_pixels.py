"""Issue 32: PPO with a CNN on pixels (examples/ppo_pixels.py: CleanRL's Atari network and
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
import subprocess
import sys
import time
from types import SimpleNamespace
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

from benchlib import machine_note, md_table, module_versions, write_report  # noqa: E402  (bench/ is on sys.path as the script's folder)

SYSTEMS = ["rollway-lag0", "rollway-lag1", "gym-sync", "gym-async"]


def one_env() -> Any:
    """PixelMine-v0 as a single ``gymnasium.Env`` (rollway's vector env of one)."""
    import gymnasium as gym
    import numpy as np

    import ppo_pixels
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


class GymSource:
    """CleanRL's collection loop over a Gymnasium vector env of Dict observations."""

    def __init__(self, kind: str, acting: Any, envs: int, steps: int, seed: int):
        import gymnasium as gym
        import numpy as np

        cls = gym.vector.SyncVectorEnv if kind == "sync" else gym.vector.AsyncVectorEnv
        self.vec = cls([one_env for _ in range(envs)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        self.obs, _ = self.vec.reset(seed=seed)
        self.acting, self.steps, self.n = acting, steps, envs
        self.first = np.ones(envs, dtype=bool)
        self.ret = np.zeros(envs)

    def collect(self) -> SimpleNamespace:
        import numpy as np

        t_len, n = self.steps, self.n
        obs = {k: np.zeros((t_len + 1, *v.shape), v.dtype) for k, v in self.obs.items()}
        first = np.zeros((t_len + 1, n), bool)
        actions = np.zeros((t_len, n), np.int64)
        logprob, value, rewards = (np.zeros((t_len, n), np.float32) for _ in range(3))
        term, trunc = np.zeros((t_len, n), bool), np.zeros((t_len, n), bool)
        finished: List[float] = []
        for t in range(t_len):
            for k in obs:
                obs[k][t] = self.obs[k]
            first[t] = self.first
            out = self.acting(self.obs, self.first, None)
            actions[t], logprob[t], value[t] = out["actions"], out["logprob"], out["value"]
            self.obs, r, term[t], trunc[t], _ = self.vec.step(actions[t])
            rewards[t] = r
            self.ret += r
            self.first = term[t] | trunc[t]
            finished.extend(self.ret[self.first].tolist())
            self.ret[self.first] = 0.0
        for k in obs:
            obs[k][t_len] = self.obs[k]
        first[t_len] = self.first
        return SimpleNamespace(steps=t_len, envs=n, obs=obs, first=first, actions=actions, rewards=rewards,
                               terminated=term, truncated=trunc, extras={"logprob": logprob, "value": value},
                               finished={"return": np.array(finished)})

    def publish(self, weights: Any = None) -> int:
        return 0

    def close(self) -> None:
        self.vec.close()


def one(system: str, seed: int, total: int, envs: int, steps: int) -> Dict[str, Any]:
    import ppo_pixels

    if system.startswith("rollway-lag"):
        r = ppo_pixels.train_pixels(total, envs, steps, int(system[len("rollway-lag"):]), seed, log=False)
    else:
        kind = system.split("-")[-1]
        r = ppo_pixels.train_pixels(total, envs, steps, 0, seed, log=False,
                                    source=lambda acting, e, s, sd, lag, **_: GymSource(kind, acting, e, s, sd))
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
        shown = f"{outside:.1%}" if outside >= 0 else f"overlapped (forward + update = {1 - outside:.0%} of wall)"
        curve = f"{med([r['first_mean'] for r in rs]):.2f} → {med([r['last_mean'] for r in rs]):.2f}"
        cells.append([s, f"{sps:,.0f}", f"{sps / base:.2f}×", shown, curve, f"{med([r['peak_rss_mb'] for r in rs]):.0f} MB"])
    out += md_table(["system", "steps/s (median)", "vs gym-async", "outside policy+update", "mean return, first → last fifth",
                     "peak RSS"], cells)
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--steps-total", type=int, default=65_536)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--out", help="also write the report here")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.one:
        print(json.dumps(one(args.one, seeds[0], args.steps_total, args.envs, args.steps)))
        return
    args.systems = args.systems.split(",")
    load_start, rows = os.getloadavg(), []
    for seed in seeds:
        for system in args.systems:
            cmd = [sys.executable, __file__, "--one", system, "--seeds", str(seed), "--steps-total", str(args.steps_total),
                   "--envs", str(args.envs), "--steps", str(args.steps)]
            t0 = time.perf_counter()
            r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
            print(f"seed {seed} {system:13} {r['steps_per_s']:6.0f} steps/s  outside {r['outside_share']:.1%}  "
                  f"return {r['first_mean']:.2f} → {r['last_mean']:.2f}  ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
            rows.append(r)
    versions = ", ".join(f"{k} {v}" for k, v in module_versions(["torch", "gymnasium", "numpy", "rollway"]).items())
    note = machine_note(None, load_start, os.getloadavg(), packages=versions)
    write_report(report(rows, args, note), args.out)


if __name__ == "__main__":
    main()
