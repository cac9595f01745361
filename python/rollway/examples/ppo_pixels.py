"""PPO with a CNN on pixels: PixelMine-v0 (rollway's tiny Crafter) seen as 64×64 frames.

The PPO of ``rollway.examples.ppo_cartpole`` (CleanRL's update, its Atari settings: clip
0.1, 4 epochs of 4 minibatches, 8 envs × 128 steps) with CleanRL's Atari network
(three convolutions and a 512-unit layer) on the frame, beside the inventory
(8 counts). The rollout hands over the Dict observation as one array per leaf:
``frag.obs["rgb"]`` is uint8 ``[T + 1, N, 64, 64, 3]``, taken by torch without a copy.

Each achievement (collect wood, place a table, make a pickaxe, …) pays +1 the first
time in an episode; episodes are ``max_steps`` long (default 200). A random policy
earns about 1.6; the curve rises as the policy learns to face trees and mine them,
then to place a table and craft.

    python -m rollway.examples.ppo_pixels                       # 300k steps, one line per 10 updates
    python -m rollway.examples.ppo_pixels --steps-total 1000000 --lag 1
    python -m rollway.examples.ppo_pixels --run runs/pixels      # replay + TensorBoard + checkpoints; run again to resume

Prints a JSON summary last (steps/s, the learning curve's first and last means,
time inside the policy's forward and the learner's update).
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Any, Dict, Optional

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import rollway
from rollway.examples.ppo_cartpole import layer, learn, train

ENV = "PixelMine-v0"
PARAMS = {"size": 64, "world": 32, "max_steps": 200}


def conv(i: int, o: int, k: int, s: int) -> nn.Conv2d:
    c = nn.Conv2d(i, o, k, s)
    nn.init.orthogonal_(c.weight, float(np.sqrt(2)))
    nn.init.constant_(c.bias, 0.0)
    return c


class PixelAgent(nn.Module):
    """CleanRL's Atari actor-critic (Nature CNN) on the frame, the inventory beside it."""

    def __init__(self, n_actions: int = 11, inventory: int = 8):
        super().__init__()
        self.cnn = nn.Sequential(conv(3, 32, 8, 4), nn.ReLU(), conv(32, 64, 4, 2), nn.ReLU(), conv(64, 64, 3, 1), nn.ReLU(),
                                 nn.Flatten())
        self.body = nn.Sequential(layer(64 * 4 * 4 + inventory, 512), nn.ReLU())
        self.actor = layer(512, n_actions, 0.01)
        self.critic = layer(512, 1, 1.0)

    def features(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        # [B, H, W, C] uint8 → [B, C, H, W] in 0..1; counts are small, a tenth each.
        rgb = obs["rgb"].permute(0, 3, 1, 2).float() / 255.0
        return self.body(torch.cat([self.cnn(rgb), obs["inventory"].float() / 10.0], dim=1))

    def get_value(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        return self.critic(self.features(obs))

    def logits(self, obs: Dict[str, torch.Tensor]) -> torch.Tensor:
        return self.actor(self.features(obs))

    def get_action_and_value(self, obs: Dict[str, torch.Tensor], action: Optional[torch.Tensor] = None):
        h = self.features(obs)
        dist = Categorical(logits=self.actor(h))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(h)

    def act(self, obs: Dict[str, torch.Tensor], first: np.ndarray, state: Any) -> Dict[str, Any]:
        action, logprob, _, value = self.get_action_and_value(obs)
        return {"actions": action, "logprob": logprob, "value": value.flatten()}


def pixel_source(acting: Any, envs: int, steps: int, seed: int, lag: int, rollout_args: Optional[Dict[str, Any]] = None,
                 **env_params: Any) -> rollway.Rollout:
    return rollway.Rollout(ENV, acting, num_envs=envs, steps_per_fragment=steps, seed=seed, max_policy_lag=lag,
                           env_params={**PARAMS, **env_params}, **(rollout_args or {}))


def train_pixels(total_steps: int = 300_000, envs: int = 8, steps: int = 128, lag: int = 0, seed: int = 1,
                 lr: float = 2.5e-4, threads: int = 0, log: bool = True, source: Any = pixel_source,
                 bootstrap: bool = True, run_dir: Optional[str] = None, checkpoint_every: int = 10,
                 eval_every: int = 0, eval_episodes: int = 8) -> Dict[str, Any]:
    """Trains for ``total_steps``; returns what ``ppo_cartpole.train`` does (with the curve).
    ``bootstrap``: episodes cut by PixelMine's step limit are bootstrapped from their final frame's value;
    ``run_dir``, ``checkpoint_every``: a run that records its replay and resumes (``ppo_cartpole.train``)."""
    # CleanRL's Atari PPO clips at 0.1 (its CartPole PPO at 0.2); the update is the same.
    return train(total_steps, envs, steps, lag, seed, lr=lr, target=float("inf"), stop_when_solved=False, log=log,
                 source=source, make_agent=PixelAgent, update=functools.partial(learn, clip=0.1, bootstrap=bootstrap), threads=threads,
                 run_dir=run_dir, checkpoint_every=checkpoint_every, eval_every=eval_every, eval_episodes=eval_episodes)


def curve_ends(curve: list, share: float = 0.2) -> tuple:
    """The mean return over the first and the last ``share`` of the updates."""
    k = max(1, int(len(curve) * share))
    return float(np.mean([m for _, m in curve[:k]])), float(np.mean([m for _, m in curve[-k:]]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps-total", type=int, default=300_000, help="env steps (default 300000)")
    p.add_argument("--envs", type=int, default=8, help="envs (default 8)")
    p.add_argument("--steps", type=int, default=128, help="steps per fragment (default 128)")
    p.add_argument("--lag", type=int, default=0, help="max policy lag: 0 on-policy, 1 overlaps collection and training")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="torch threads (default 0: torch's own choice)")
    p.add_argument("--no-bootstrap", action="store_true", help="treat an episode cut by the step limit as terminated")
    p.add_argument("--run", metavar="DIR", help="record the replay (frames too), TensorBoard scalars and checkpoints here; "
                   "run again to resume (as rollway.examples.ppo_cartpole --run)")
    p.add_argument("--checkpoint-every", type=int, default=10, metavar="N", help="updates between checkpoints (default 10)")
    p.add_argument("--eval-every", type=int, default=0, metavar="N", help="updates between greedy evaluations, recorded with "
                   "frames into DIR/eval (default 0: none)")
    p.add_argument("--eval-episodes", type=int, default=8, metavar="K", help="episodes per evaluation (default 8)")
    a = p.parse_args()
    r = train_pixels(a.steps_total, a.envs, a.steps, a.lag, a.seed, threads=a.threads, bootstrap=not a.no_bootstrap,
                     run_dir=a.run, checkpoint_every=a.checkpoint_every, eval_every=a.eval_every, eval_episodes=a.eval_episodes)
    r["first_mean"], r["last_mean"] = curve_ends(r.pop("curve")) if r["curve"] else (None, None)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
