"""Issue 34: an IMPALA-style learner fed by rollout actors on Ray, with a slow Python env (CartPole
that sleeps ``--env-ms`` per step, as a Minecraft-class simulator takes tens of milliseconds),
side by side in one run on a local two-node Ray cluster (loopback, one CPU per node):

- ``rollway``: ``rollway.ray.Rollout``, one actor per node, each with ``--envs`` envs in env
  processes (``host="process"``, one per env), lag ``--lag``, ``stale="drop"`` (every actor busy).
- ``ray-pool``: a plain Ray actor pool written the way MineStudio's rollout workers are: each
  actor owns its envs as subprocesses (Gymnasium's ``AsyncVectorEnv``: one process per env,
  pipes), a copy of the policy, and returns a fragment per call; the driver keeps every actor
  busy (``ray.wait``), loads weights out with ``ray.put`` after each update and drops what is
  older than the lag bound.
- ``floor``: the same rollway actors with no learner (fragments taken as they come): the
  env-bound rate.

The learner is the PPO update of rollway.examples.ppo_cartpole, one epoch per fragment, publishing
its weights after each. Reports learner-side env steps/s (steps in fragments the learner
trained on), median of ``--reps`` runs of ``--seconds`` each, alternating. Usage:

    bench/run_ray_impala.sh [--reps 3] [--seconds 20] [--envs 8] [--lag 2] [--env-ms 2] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from types import SimpleNamespace
from typing import Any, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

from benchlib import log, md_table, write_report  # noqa: E402
from ray_source import two_nodes  # noqa: E402

STEPS = 32


def slow_cartpole(ms: float) -> Any:
    """A factory of CartPole-v1 whose step sleeps ``ms`` milliseconds (the simulator's time)."""
    def make() -> Any:
        import gymnasium as gym

        class Slow(gym.Wrapper):
            def step(self, action: Any) -> Any:
                time.sleep(ms / 1000)
                return self.env.step(action)

        return Slow(gym.make("CartPole-v1"))
    return make


class PoolActor:
    """A MineStudio-style rollout worker: envs in subprocesses, a policy copy, a fragment per call."""

    def __init__(self, make: Any, envs: int, acting: Any, seed: int):
        import gymnasium as gym

        self.vec = gym.vector.AsyncVectorEnv([make] * envs, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        self.obs, _ = self.vec.reset(seed=seed)
        self.first, self.acting, self.n, self.version = np.ones(envs, bool), acting, envs, 0

    def fragment(self, version: int, weights: Any) -> Dict[str, Any]:
        if weights is not None and version != self.version:
            self.acting.load(weights)
        self.version = version
        obs = np.zeros((STEPS + 1, self.n, 4), np.float32)
        first = np.zeros((STEPS + 1, self.n), bool)
        actions = np.zeros((STEPS, self.n), np.int64)
        logprob, value, rewards = (np.zeros((STEPS, self.n), np.float32) for _ in range(3))
        for t in range(STEPS):
            obs[t], first[t] = self.obs, self.first
            out = self.acting(self.obs.astype(np.float32), self.first, None)
            actions[t], logprob[t], value[t] = out["actions"], out["logprob"], out["value"]
            self.obs, rewards[t], term, trunc, _ = self.vec.step(actions[t])
            self.first = term | trunc
        obs[STEPS], first[STEPS] = self.obs, self.first
        return dict(steps=STEPS, envs=self.n, obs=obs, first=first, actions=actions, rewards=rewards,
                    extras={"logprob": logprob, "value": value}, version=np.full((STEPS, self.n), version))


class Pool:
    """The driver side of the plain pool: every actor busy, stale fragments dropped."""

    def __init__(self, make: Any, actors: int, envs: int, acting: Any, lag: int):
        import ray

        cls = ray.remote(PoolActor).options(num_cpus=1)
        self.ray, self.lag, self.version, self.weights = ray, lag, 0, None
        self.actors = [cls.remote(make, envs, acting, 1000 * a) for a in range(actors)]
        self.busy = {h.fragment.remote(0, None): h for h in self.actors}

    def collect(self) -> SimpleNamespace:
        while True:
            [ref], _ = self.ray.wait(list(self.busy), num_returns=1)
            h = self.busy.pop(ref)
            self.busy[h.fragment.remote(self.version, self.weights)] = h
            f = SimpleNamespace(**self.ray.get(ref))
            if self.version - int(f.version.min()) <= self.lag:
                return f

    def publish(self, weights: Any) -> None:
        self.version += 1
        self.weights = self.ray.put(weights)

    def close(self) -> None:
        for h in self.actors:
            self.ray.kill(h)


def run(system: str, a: argparse.Namespace) -> float:
    """Learner-side env steps/s of ``system`` over ``a.seconds``."""
    import ray
    import torch

    from rollway.examples import ppo_cartpole
    import rollway.ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.cloudpickle.register_pickle_by_value(ppo_cartpole)
    torch.set_num_threads(1)
    agent = ppo_cartpole.Agent(4, 2)
    opt = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    acting = ppo_cartpole.Acting(copy.deepcopy(agent))
    make = slow_cartpole(a.env_ms)
    if system == "ray-pool":
        src: Any = Pool(make, 2, a.envs, acting, a.lag)
    else:
        src = rollway.ray.Rollout(make, acting, num_actors=2, num_envs=a.envs, steps_per_fragment=STEPS, max_policy_lag=a.lag,
                                  stale="drop", host="process", workers=a.envs, num_cpus_per_actor=1)
    try:
        src.collect()  # started: actors, env processes, first fragments
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < a.seconds:
            f = src.collect()
            steps += f.steps * f.envs
            if system != "floor":
                ppo_cartpole.learn(agent, opt, f, epochs=1, minibatches=4)
                src.publish({k: v.detach().clone() for k, v in agent.state_dict().items()})
        return steps / (time.perf_counter() - t0)
    finally:
        src.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--envs", type=int, default=8, help="envs per actor")
    p.add_argument("--lag", type=int, default=2)
    p.add_argument("--env-ms", type=float, default=2.0)
    p.add_argument("--out")
    a = p.parse_args()
    systems = ["rollway", "ray-pool", "floor"]
    rates: Dict[str, List[float]] = {s: [] for s in systems}
    with two_nodes():
        for rep in range(a.reps):
            for s in systems:
                rates[s].append(run(s, a))
                log(f"rep {rep + 1} {s:9} {rates[s][-1]:8.0f} steps/s")
    med = {s: statistics.median(v) for s, v in rates.items()}
    rows = [[s, f"{med[s]:,.0f}", f"{min(rates[s]):,.0f} – {max(rates[s]):,.0f}", f"{med[s] / med['ray-pool']:.2f}×",
             f"{med[s] / med['floor']:.0%}"] for s in systems]
    text = "\n".join([
        f"IMPALA-style learner on a two-node local Ray cluster (1 CPU per node), 2 actors × {a.envs} envs of CartPole "
        f"sleeping {a.env_ms} ms a step, fragments of {STEPS} steps, lag {a.lag}; learner-side env steps/s, median of "
        f"{a.reps} × {a.seconds:.0f} s, alternating.", "",
        *md_table(["system", "steps/s (median)", "spread", "vs ray-pool", "of the floor"], rows)]) + "\n"
    write_report(text, a.out)


if __name__ == "__main__":
    main()
