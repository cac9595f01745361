"""Issue 32: the same PPO (examples/ppo_cartpole.py: CleanRL's ppo.py network, hyper-parameters
and update) fed by rollway's rollout engine and by CleanRL's own loop over Gymnasium's
vector envs, side by side in one run, several seeds.

Systems:
- ``rollway-lag0``: ``rollway.Rollout``, strictly on-policy (CleanRL's semantics).
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
import sys
import time
from types import SimpleNamespace
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

from benchlib import md_table, write_report  # noqa: E402  (bench/ is on sys.path as the script's folder)

SYSTEMS = ["rollway-lag0", "rollway-lag1", "gym-sync", "gym-async", "envpool", "torchrl-sync", "torchrl-multisync"]
# The peers that are only run when their package imports.
OPTIONAL = {"envpool": "envpool", "torchrl-sync": "torchrl", "torchrl-multisync": "torchrl"}


class GymSource:
    """CleanRL's collection loop over a Gymnasium vector env, as a fragment source."""

    def __init__(self, kind: str, acting: Any, envs: int, steps: int, seed: int):
        import gymnasium as gym
        import numpy as np

        if kind == "envpool":
            import envpool

            self.vec = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=envs, seed=seed)
            self.obs, _ = self.vec.reset()
        else:
            mode = gym.vector.AutoresetMode.SAME_STEP
            fns = [lambda: gym.make("CartPole-v1") for _ in range(envs)]
            cls = gym.vector.SyncVectorEnv if kind == "sync" else gym.vector.AsyncVectorEnv
            self.vec = cls(fns, autoreset_mode=mode)
            self.obs, _ = self.vec.reset(seed=seed)
        self.acting, self.steps, self.n = acting, steps, envs
        self.first = np.ones(envs, dtype=bool)
        self.ret, self.len = np.zeros(envs), np.zeros(envs, dtype=np.int64)

    def collect(self) -> SimpleNamespace:
        import numpy as np

        t_len, n = self.steps, self.n
        obs = np.zeros((t_len + 1, n, 4), np.float32)
        first = np.zeros((t_len + 1, n), bool)
        actions = np.zeros((t_len, n), np.int64)
        logprob, value, rewards = (np.zeros((t_len, n), np.float32) for _ in range(3))
        term, trunc = np.zeros((t_len, n), bool), np.zeros((t_len, n), bool)
        finished: List[float] = []
        policy_s = 0.0
        for t in range(t_len):
            obs[t], first[t] = self.obs, self.first
            t0 = time.perf_counter()
            out = self.acting(self.obs, self.first, None)
            policy_s += time.perf_counter() - t0
            actions[t], logprob[t], value[t] = out["actions"], out["logprob"], out["value"]
            self.obs, r, term[t], trunc[t], _ = self.vec.step(actions[t])
            rewards[t] = r
            self.ret += r
            self.len += 1
            self.first = term[t] | trunc[t]
            finished.extend(self.ret[self.first].tolist())
            self.ret[self.first], self.len[self.first] = 0.0, 0
        obs[t_len], first[t_len] = self.obs, self.first
        return SimpleNamespace(steps=t_len, envs=n, obs=obs, first=first, actions=actions, rewards=rewards,
                               terminated=term, truncated=trunc, extras={"logprob": logprob, "value": value},
                               finished={"return": np.array(finished)}, stats={"policy_s": policy_s})

    def publish(self, weights: Any = None) -> int:
        return 0

    def close(self) -> None:
        self.vec.close()


def one(system: str, seed: int, total: int, envs: int, steps: int) -> Dict[str, Any]:
    import ppo_cartpole

    if system.startswith("rollway-lag"):
        r = ppo_cartpole.train(total, envs, steps, int(system[len("rollway-lag"):]), seed, log=False)
    elif system.startswith("torchrl-"):
        from torchrl_source import TorchRLSource

        kind = system.split("-")[-1]
        r = ppo_cartpole.train(total, envs, steps, 0, seed, log=False,
                               source=lambda acting, e, s, sd, lag, **_: TorchRLSource(kind, acting, e, s, sd))
    else:
        kind = system.split("-")[-1]
        r = ppo_cartpole.train(total, envs, steps, 0, seed, log=False,
                               source=lambda acting, e, s, sd, lag, **_: GymSource(kind, acting, e, s, sd))
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
        outside = med([r["outside_share"] for r in rs])
        # Below zero, the forward (collecting thread) and the update (learner) overlapped: say how much they sum to.
        shown = f"{outside:.1%}" if outside >= 0 else f"overlapped (forward + update = {1 - outside:.0%} of wall)"
        cells.append([s, f"{sps:,.0f}", f"{sps / base:.2f}×", t, f"{len(solved)}/{len(rs)}", shown,
                      f"{med([r['peak_rss_mb'] for r in rs]):.0f} MB"])
    out += md_table(["system", "steps/s (median)", "vs gym-sync", "time to 475 (median, min–max)", "solved",
                     "outside policy+update", "peak RSS"], cells)
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="1,2,3,4,5")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--steps-total", type=int, default=500_000)
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
    for system, package in OPTIONAL.items():
        if system in args.systems and importlib.util.find_spec(package) is None:
            print(f"{package} is not installed: {system} skipped", file=sys.stderr)
            args.systems.remove(system)
    rows = []
    for seed in seeds:
        for system in args.systems:
            cmd = [sys.executable, __file__, "--one", system, "--seeds", str(seed), "--steps-total", str(args.steps_total),
                   "--envs", str(args.envs), "--steps", str(args.steps)]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            r = json.loads(res.stdout.strip().splitlines()[-1])
            print(f"seed {seed} {system:13} {r['steps_per_s']:7.0f} steps/s  solved {r['solved_s']}  outside {r['outside_share']:.1%}",
                  file=sys.stderr, flush=True)
            rows.append(r)
    text = report(rows, args)
    write_report(text, args.out)


if __name__ == "__main__":
    main()
