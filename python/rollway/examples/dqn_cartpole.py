"""DQN on CartPole-v1, sampling its replay buffer from a rollway dataset.

CleanRL's ``dqn.py`` (the same Q-network, Adam, Huber-free MSE TD loss, a target
network, ε-greedy exploration decaying linearly), with its in-memory ``ReplayBuffer``
replaced by the dataset that ``rollway.Rollout(out=...)`` records while it trains and a
``rollway.Loader(follow=True, next_observations=True)`` reading it: every finished
episode is committed to ``--replay`` and sampled from there one step at a time, as
CleanRL's buffer samples, ``(observation, action, reward, terminated,
next_observation)``. Capacity is ``last_steps``; new commits join the sampled windows
every ``round_windows`` windows.

Episode-based: an episode's steps become sampleable when the episode ends (as in
MineStudio's online buffer), not at each step. Every step is a transition, an
episode's last one included: its next observation is the episode's final observation
(the loader's ``next_observations``), so an episode truncated by the time limit is
bootstrapped from it, and only a terminated one is not.

    python -m rollway.examples.dqn_cartpole --replay /tmp/replay     # 150k steps, prints a JSON summary

Shorter settings than CleanRL's (4 envs, learning starts at 2k steps, ε decays over
the first 30k, a target update every 1000 steps) keep the test's run short.
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from typing import Any, Dict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import rollway


class QNetwork(nn.Module):
    """CleanRL's CartPole Q-network: 120 and 84 ReLU units."""

    def __init__(self, obs_dim: int, n_actions: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, n_actions))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EpsilonGreedy:
    """The policy the rollout calls (at lag 0 it may use the learner's network itself)."""

    def __init__(self, q: QNetwork, n_actions: int, seed: int):
        self.q, self.n, self.epsilon = q, n_actions, 1.0
        self.rng = np.random.default_rng(seed)

    @torch.no_grad()
    def __call__(self, obs: np.ndarray, first: np.ndarray, state: Any) -> Dict[str, np.ndarray]:
        q = self.q(torch.from_numpy(obs)).numpy()
        greedy = q.argmax(axis=1)
        explore = self.rng.random(len(obs)) < self.epsilon
        actions = np.where(explore, self.rng.integers(0, self.n, len(obs)), greedy)
        return {"actions": actions.astype(np.int64), "q": q.max(axis=1)}


def td_update(q: QNetwork, target: QNetwork, opt: torch.optim.Optimizer, batch: Dict[str, np.ndarray], gamma: float) -> float:
    """One TD step on a batch of one-step windows with their next observations: a
    truncated step bootstraps from its next (the final) observation, a terminated one not."""
    obs = torch.from_numpy(batch["observations"][:, 0])
    nxt_obs = torch.from_numpy(batch["next_observations"][:, 0])
    act = torch.from_numpy(batch["actions"][:, 0])
    rew = torch.from_numpy(batch["rewards"][:, 0]).float()
    term = torch.from_numpy(batch["terminated"][:, 0]).float()
    with torch.no_grad():
        y = rew + gamma * target(nxt_obs).max(dim=1).values * (1.0 - term)
    pred = q(obs).gather(1, act.view(-1, 1)).squeeze(1)
    loss = F.mse_loss(pred, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.detach())


def train(replay: str, total_steps: int = 150_000, envs: int = 4, steps: int = 32, seed: int = 1, lr: float = 2.5e-4,
          batch_size: int = 128, gamma: float = 0.99, learning_starts: int = 2_000, train_frequency: int = 10,
          explore_steps: int = 30_000, end_e: float = 0.05, target_every: int = 1_000, capacity: int = 50_000,
          log: bool = True) -> Dict[str, Any]:
    """Trains for ``total_steps`` env steps; returns the learning curve and where the time went."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    q, target = QNetwork(4, 2), QNetwork(4, 2)
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=lr)
    acting = EpsilonGreedy(q, 2, seed)
    recent: collections.deque = collections.deque(maxlen=20)
    curve, updates, sample_s, learn_s, done = [], 0, 0.0, 0.0, 0
    per_fragment = envs * steps
    start = time.perf_counter()
    with rollway.Rollout("CartPole-v1", acting, num_envs=envs, steps_per_fragment=steps, seed=seed, out=replay, commit_every=0.05) as rollout:
        buffer = rollway.Loader(replay, clip=1, stride=1, batch=batch_size, seed=seed, follow=True, next_observations=True,
                                last_steps=capacity, round_windows=batch_size * 64)
        while done < total_steps:
            acting.epsilon = max(end_e, 1.0 - (1.0 - end_e) * done / explore_steps)
            frag = rollout.collect()
            done += per_fragment
            recent.extend(frag.finished["return"].tolist())
            if done >= learning_starts:
                for _ in range(per_fragment // train_frequency):
                    t0 = time.perf_counter()
                    b = buffer.next_batch()
                    t1 = time.perf_counter()
                    sample_s += t1 - t0
                    if b is None:
                        break  # nothing committed yet
                    td_update(q, target, opt, b, gamma)
                    learn_s += time.perf_counter() - t1
                    updates += 1
            if done // target_every != (done - per_fragment) // target_every:
                target.load_state_dict(q.state_dict())
            rollout.publish()
            mean = float(np.mean(recent)) if recent else 0.0
            curve.append((done, mean))
            if log and len(curve) % 100 == 0:
                print(f"steps {done:>7}  mean return {mean:6.1f}  ε {acting.epsilon:.2f}  {done / (time.perf_counter() - start):6.0f} steps/s", flush=True)
    wall = time.perf_counter() - start
    return {"steps": done, "wall_s": wall, "steps_per_s": done / wall, "updates": updates, "mean_return": curve[-1][1],
            "best_mean_return": max(m for _, m in curve), "sample_s": sample_s, "learn_s": learn_s,
            "recorded_episodes": len(rollway.Dataset(replay)), "curve": curve}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--replay", help="the replay dataset's directory (default: a temporary one)")
    p.add_argument("--steps-total", type=int, default=150_000, help="env steps (default 150000)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        r = train(a.replay or f"{tmp}/replay", a.steps_total, seed=a.seed)
    r.pop("curve")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
