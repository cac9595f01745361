"""PPO on Atari with rollway as the rollout engine: CleanRL's ``ppo_atari``.

CleanRL's Atari PPO (its Nature-CNN actor-critic, initialisation and settings: 8 envs ×
128 steps, clip 0.1, 4 epochs of 4 minibatches, learning rate 2.5e-4) on
``rollway.Rollout("atari:Pong-v5", ...)``: the frames are Gymnasium's standard Atari
preprocessing (no-op reset, frame skip 4 with max-pool, 84×84 grayscale, stack of 4),
done by rollway, and arrive as ``frag.obs``, uint8 ``[T + 1, N, 4, 84, 84]``, taken by torch
without a copy. Rewards are clipped to their sign (``reward_clip``, as CleanRL's
``ClipRewardEnv`` and EnvPool's ``reward_clip``); ``--life-loss`` ends an episode at each
lost life (Gymnasium's ``terminal_on_life_loss``).

Truncated episodes (ALE's 108,000-frame limit, or ``--max-episode-steps``) are bootstrapped
from their final frames' value (``rollway.examples.ppo_cartpole`` says why); ``--no-bootstrap``
treats them as ends, as CleanRL does.

    python -m rollway.examples.ppo_atari                            # Pong, 10M frames (2.5M agent steps)
    python -m rollway.examples.ppo_atari --game Breakout-v5 --life-loss --steps-total 200000
    python -m rollway.examples.ppo_atari --run runs/pong            # replay + TensorBoard + checkpoints; run again to resume
    python -m rollway.examples.ppo_atari --device cuda --envs 64    # the CNN on a GPU (bench/gpu.py measures it)

On two CPU cores this is a throughput check, not a learning curve: Pong takes millions of
steps to learn, and that is a GPU's run. Prints one line per 10 updates and a JSON summary
last (steps/s, the return's first and last means, time inside the policy and the update).
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
from rollway.examples.ppo_pixels import conv, curve_ends

GAME = "Pong-v5"


class AtariAgent(nn.Module):
    """CleanRL's ``ppo_atari`` actor-critic: three convolutions, 512 units, two heads."""

    def __init__(self, n_actions: int, stack: int = 4):
        super().__init__()
        self.network = nn.Sequential(conv(stack, 32, 8, 4), nn.ReLU(), conv(32, 64, 4, 2), nn.ReLU(), conv(64, 64, 3, 1),
                                     nn.ReLU(), nn.Flatten(), layer(64 * 7 * 7, 512), nn.ReLU())
        self.actor = layer(512, n_actions, 0.01)
        self.critic = layer(512, 1, 1.0)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x.float() / 255.0)

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(self.features(x))

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.actor(self.features(x))

    def get_action_and_value(self, x: torch.Tensor, action: Optional[torch.Tensor] = None):
        h = self.features(x)
        dist = Categorical(logits=self.actor(h))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(h)

    def act(self, obs: torch.Tensor, first: np.ndarray, state: Any) -> Dict[str, Any]:
        action, logprob, _, value = self.get_action_and_value(obs)
        return {"actions": action, "logprob": logprob, "value": value.flatten()}


def atari_source(game: str, life_loss: bool, max_episode_steps: Optional[int]):
    """Fragments of ``atari:GAME`` with clipped rewards (the bench swaps in other engines)."""

    def source(acting: Any, envs: int, steps: int, seed: int, lag: int, rollout_args: Optional[Dict[str, Any]] = None,
               **_: Any) -> rollway.Rollout:
        return rollway.Rollout(f"atari:{game}", acting, num_envs=envs, steps_per_fragment=steps, seed=seed, max_policy_lag=lag,
                               max_episode_steps=max_episode_steps, seed_each_episode=(rollout_args or {}).get("out") is not None,
                               env_params={"reward_clip": True, "terminal_on_life_loss": life_loss}, **(rollout_args or {}))

    return source


def actions_of(game: str) -> int:
    """The game's minimal action set's size, from the env rollway makes."""
    v = rollway.make_vec(f"atari:{game}", 1, host="inline")
    n = int(v.single_action_space.n)
    v.close()
    return n


def train_atari(total_steps: int = 2_500_000, game: str = GAME, envs: int = 8, steps: int = 128, lag: int = 0, seed: int = 1,
                threads: int = 0, log: bool = True, life_loss: bool = False, max_episode_steps: Optional[int] = None,
                bootstrap: bool = True, run_dir: Optional[str] = None, checkpoint_every: int = 10,
                device: str = "cpu") -> Dict[str, Any]:
    """Trains for ``total_steps`` agent steps; returns what ``ppo_cartpole.train`` does (with the curve).
    ``device``: where the policy acts and the learner trains (``"cuda"``: the CNN on a GPU, each
    batch of frames sent in one copy from pinned memory, each fragment in one copy per array)."""
    n_actions = actions_of(game)
    return train(total_steps, envs, steps, lag, seed, lr=2.5e-4, target=float("inf"), stop_when_solved=False, log=log,
                 source=atari_source(game, life_loss, max_episode_steps), make_agent=lambda: AtariAgent(n_actions),
                 update=functools.partial(learn, clip=0.1, bootstrap=bootstrap), threads=threads, run_dir=run_dir,
                 checkpoint_every=checkpoint_every, device=device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", default=GAME, help=f"an ALE game with its version (default {GAME})")
    p.add_argument("--steps-total", type=int, default=2_500_000, help="agent steps (default 2.5M: 10M frames)")
    p.add_argument("--envs", type=int, default=8, help="envs (default 8)")
    p.add_argument("--steps", type=int, default=128, help="steps per fragment (default 128)")
    p.add_argument("--lag", type=int, default=0, help="max policy lag: 0 on-policy, 1 overlaps collection and training")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="torch threads (default 0: torch's own choice)")
    p.add_argument("--life-loss", action="store_true", help="a lost life ends the episode (games with lives)")
    p.add_argument("--max-episode-steps", type=int, help="cut episodes at this many agent steps (bootstrapped)")
    p.add_argument("--no-bootstrap", action="store_true", help="treat a truncated episode as terminated")
    p.add_argument("--run", metavar="DIR", help="record the replay, TensorBoard scalars and checkpoints here; run again to resume")
    p.add_argument("--checkpoint-every", type=int, default=10, metavar="N", help="updates between checkpoints (default 10)")
    p.add_argument("--device", default="cpu", help="where the policy acts and the learner trains: cpu (default), cuda")
    a = p.parse_args()
    r = train_atari(a.steps_total, a.game, a.envs, a.steps, a.lag, a.seed, threads=a.threads, life_loss=a.life_loss,
                    max_episode_steps=a.max_episode_steps, bootstrap=not a.no_bootstrap, run_dir=a.run,
                    checkpoint_every=a.checkpoint_every, device=a.device)
    r["first_mean"], r["last_mean"] = curve_ends(r.pop("curve")) if r["curve"] else (None, None)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
