"""PPO on Craftax-Classic (symbolic observations), with rollway as the rollout engine.

The recipe of PureJaxRL's Craftax baseline (Matthews et al., 2024): an actor and a critic of three
tanh layers each, GAE with λ = 0.8, clipped PPO, 4 epochs of 8 minibatches, learning rate 2e-4
annealed to zero, gradients clipped at norm 1. There the env and the learner are one jitted JAX
program; here the env is a batched JAX env stepped by ``rollway.Rollout`` (``craftax:NAME``: one
jitted, vmapped call per round, resets only for the envs that start an episode, every episode
seedable and recordable), and the learner is torch, on the CPU or a GPU.

Craftax-Classic is Crafter rebuilt in JAX: a Minecraft-like world where the agent collects wood,
makes tools, finds water and food, fights zombies; each of its 22 achievements, unlocked the first
time in an episode, is worth a reward of 1 (and health changes 0.1 a point). A random policy unlocks
about 2.4 achievements an episode (collecting wood and saplings, placing a plant, waking up). Prints
one line every 10 updates and a JSON summary last: env steps/s, and the mean achievements unlocked an
episode over the first and the last 10 updates.

    python -m rollway.examples.ppo_craftax                               # 1M env steps, 256 envs
    python -m rollway.examples.ppo_craftax --steps-total 200000 --envs 128 --width 128
    python -m rollway.examples.ppo_craftax --device cuda                 # the learner on a GPU

With ``--device cuda`` the policy acts and the learner trains on the GPU, and the env steps on the
device JAX chose (its GPU where jax has CUDA): the same script, the same numbers of steps.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from typing import Any, Dict, List

import numpy as np
import torch
import torch.nn as nn

import rollway
from rollway.batched import JaxSim
from rollway.examples.ppo_cartpole import Acting, Agent, layer, learn

ENV = "craftax:Craftax-Classic-Symbolic-v1"


class CraftaxAgent(Agent):
    """PureJaxRL's Craftax actor-critic: three tanh layers of ``width`` units each for the actor and
    for the critic (512 in the paper's runs). Acting and the update are ``ppo_cartpole``'s Agent's;
    only the network differs."""

    def __init__(self, obs_dim: int, n_actions: int, width: int = 512):
        nn.Module.__init__(self)  # not Agent's: its CartPole layers would be made and thrown away

        def trunk() -> List[nn.Module]:
            return [layer(obs_dim, width), nn.Tanh(), layer(width, width), nn.Tanh(), layer(width, width), nn.Tanh()]

        self.critic = nn.Sequential(*trunk(), layer(width, 1, 1.0))
        self.actor = nn.Sequential(*trunk(), layer(width, n_actions, 0.01))


def achievements(final_info: List[Dict[str, Any]]) -> np.ndarray:
    """Achievements each finished episode unlocked: Craftax's ``Achievements/*`` infos are 100 for
    each one unlocked by the episode's end."""
    return np.array([sum(v for k, v in info.items() if k.startswith("Achievements/")) / 100.0 for info in final_info])


def train(total_steps: int = 1_000_000, envs: int = 256, steps: int = 64, width: int = 512, seed: int = 1,
          lr: float = 2e-4, device: str = "cpu", env: str = ENV, log: bool = True) -> Dict[str, Any]:
    """Trains for ``total_steps`` env steps; returns steps/s and the mean achievements an episode of
    the first and the last 10 updates."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    # The spaces from the env's description alone: a probing Rollout would build and reset a block (~7 s).
    kind, _, name = env.partition(":")
    sim = JaxSim(kind, name, {})
    obs_dim, n_actions = int(np.prod(sim.observation_space.shape)), int(sim.action_space.n)
    agent = CraftaxAgent(obs_dim, n_actions, width).to(device)
    opt = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    update_fn = functools.partial(learn, gamma=0.99, lam=0.8, clip=0.2, ent_coef=0.01, vf_coef=0.5, max_grad_norm=1.0)
    updates = max(1, total_steps // (envs * steps))
    per_update: List[np.ndarray] = []
    start = time.perf_counter()
    # One block of every env, stepped in this process: one jitted call a round, which XLA spreads
    # over the cores itself.
    with rollway.Rollout(env, Acting(agent, device), num_envs=envs, steps_per_fragment=steps, seed=seed, workers=1,
                         host="inline") as rollout:
        for update in range(1, updates + 1):
            frag = rollout.collect()
            per_update.append(achievements(frag.final_info))
            for g in opt.param_groups:
                g["lr"] = lr * (1.0 - (update - 1.0) / updates)
            update_fn(agent, opt, frag, 4, 8)
            rollout.publish()
            if log and update % 10 == 0:
                recent = np.concatenate(per_update[-10:])
                print(f"steps {update * envs * steps:>8}  achievements an episode {recent.mean() if len(recent) else 0:5.2f}  "
                      f"{update * envs * steps / (time.perf_counter() - start):6.0f} env steps/s", flush=True)
    wall = time.perf_counter() - start
    first, last = np.concatenate(per_update[:10]), np.concatenate(per_update[-10:])
    return {"env": env, "steps": updates * envs * steps, "wall_s": wall, "steps_per_s": updates * envs * steps / wall,
            "episodes": int(sum(len(a) for a in per_update)),
            "first_achievements": float(first.mean()) if len(first) else 0.0,
            "last_achievements": float(last.mean()) if len(last) else 0.0,
            "last_achievements_se": float(last.std() / np.sqrt(len(last))) if len(last) > 1 else 0.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps-total", type=int, default=1_000_000, help="env steps (default 1000000)")
    p.add_argument("--envs", type=int, default=256, help="envs, one JAX batch (default 256; PureJaxRL: 1024)")
    p.add_argument("--steps", type=int, default=64, help="steps per fragment (default 64)")
    p.add_argument("--width", type=int, default=512, help="units of each hidden layer (default 512)")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="cpu", help="where the policy acts and learns: cpu or cuda")
    a = p.parse_args()
    print(json.dumps(train(a.steps_total, a.envs, a.steps, a.width, a.seed, a.lr, a.device)))


if __name__ == "__main__":
    main()
