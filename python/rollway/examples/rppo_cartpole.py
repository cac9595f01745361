"""Recurrent PPO on CartPole-v1 with the velocities hidden: only a policy with memory
solves it (the observation is the cart's position and the pole's angle alone).

The PPO of ``rollway.examples.ppo_cartpole`` with a GRU between the encoder and the heads.
The rollout carries the GRU's state from step to step and zeroes it where an episode
starts (``first``); the policy also returns the state it acted from, as the extra
``h_in``. The update replays the fragment in chunks of ``chunk`` steps (Sample
Factory's recurrence), each chunk starting from the recorded ``h_in`` of its first
step and zeroing the state at every ``first`` inside it: truncated backpropagation
through time, with every minibatch a set of whole chunks (here one chunk is a whole
32-step fragment). Observations are scaled by the termination bounds.

A truncated episode is bootstrapped as in ``ppo_cartpole``, with the value of its
final observation (``frag.final_obs``) taken from the GRU state its last step left:
that state is one GRU step from the recorded ``h_in`` of that step, so the fragment
holds all it needs. ``--no-bootstrap`` treats a truncation as an end.

    python -m rollway.examples.rppo_cartpole                  # 500k steps at most, stops when solved (mean return ≥ 475)

Prints one line per 10 updates and a JSON summary last.
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Any, Dict

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import rollway
from rollway.examples.ppo_cartpole import advantages, layer, on_device, train

OBS = 2  # x and theta


class RecurrentAgent(nn.Module):
    """A tanh encoder, a GRU cell, and CleanRL's actor and critic heads on its state."""

    def __init__(self, obs_dim: int = OBS, n_actions: int = 2, hidden: int = 64):
        super().__init__()
        self.hidden = hidden
        self.encoder = nn.Sequential(layer(obs_dim, 64), nn.Tanh())
        # x and theta scaled by their termination bounds (2.4 m, 12°): theta's raw values
        # are a few hundredths, too small for the encoder to start from.
        self.register_buffer("scale", torch.tensor([1 / 2.4, 1 / 0.2095] if obs_dim == 2 else [1.0] * obs_dim))
        self.gru = nn.GRUCell(64, hidden)
        self.actor = layer(hidden, n_actions, 0.01)
        self.critic = layer(hidden, 1, 1.0)

    def act(self, obs: torch.Tensor, first: np.ndarray, state: np.ndarray) -> Dict[str, Any]:
        # The rollout hands over zeros at an episode's first step (and before any state).
        h_in = state if state.shape[1] == self.hidden else torch.zeros(len(obs), self.hidden, device=obs.device)
        h = self.gru(self.encoder(obs * self.scale), h_in)
        dist = Categorical(logits=self.actor(h))
        action = dist.sample()
        return {"actions": action, "logprob": dist.log_prob(action), "value": self.critic(h).flatten(), "state": h, "h_in": h_in}

    def unroll(self, obs: torch.Tensor, first: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """The states after each step of ``[L, B]`` steps from ``h``, zeroed going into a first step."""
        out = []
        x = self.encoder(obs * self.scale)
        for t in range(obs.shape[0]):
            h = self.gru(x[t], h * (1.0 - first[t]).unsqueeze(1))
            out.append(h)
        return torch.stack(out)


def bootstrap_value(agent: RecurrentAgent, frag: rollway.Fragment) -> torch.Tensor:
    """The value of ``obs[T]``: one more step of the GRU from the state the last step left."""
    h = agent.gru(agent.encoder(frag.obs[-2] * agent.scale), frag.extras["h_in"][-1])
    h = h * (1.0 - frag.first[-1].float()).unsqueeze(1)
    h = agent.gru(agent.encoder(frag.obs[-1] * agent.scale), h)
    return agent.critic(h).flatten()


def recurrent_bootstrapped_rewards(agent: RecurrentAgent, frag: rollway.Fragment, gamma: float) -> torch.Tensor:
    """``ppo_cartpole.bootstrapped_rewards`` for the GRU: V(final obs) from the state
    after the episode's last step, which is one GRU step from that step's ``h_in``."""
    rewards = frag.rewards.clone()
    fin = frag.finished
    cut = ~fin["terminated"].bool()
    if cut.any():
        t, i = fin["step"][cut], fin["env"][cut]
        with torch.no_grad():
            h = agent.gru(agent.encoder(frag.obs[t, i] * agent.scale), frag.extras["h_in"][t, i])
            h = agent.gru(agent.encoder(frag.final_obs[cut] * agent.scale), h)
            rewards[t, i] += gamma * agent.critic(h).flatten()
    return rewards


def chunked(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """``[T, N, ...]`` → ``[chunk, T / chunk * N, ...]``: time-major chunks side by side."""
    t, n = x.shape[:2]
    return x.reshape(t // chunk, chunk, n, *x.shape[2:]).transpose(0, 1).reshape(chunk, (t // chunk) * n, *x.shape[2:])


def learn_recurrent(agent: RecurrentAgent, opt: torch.optim.Optimizer, frag: rollway.Fragment, epochs: int, minibatches: int,
                    chunk: int = 16, gamma: float = 0.99, lam: float = 0.95, clip: float = 0.2, ent_coef: float = 0.01,
                    vf_coef: float = 0.5, max_grad_norm: float = 0.5, bootstrap: bool = True) -> None:
    """PPO's clipped update over chunks of the fragment, each replayed through the GRU; with
    ``bootstrap``, truncated episodes bootstrapped from their final observations."""
    frag = on_device(frag, agent)
    rewards = recurrent_bootstrapped_rewards(agent, frag, gamma) if bootstrap else None
    with torch.no_grad():
        adv, ret = advantages(frag, bootstrap_value(agent, frag), gamma, lam, rewards)
    obs = chunked(frag.obs[:-1], chunk)
    first = chunked(frag.first[:-1].float(), chunk)
    h0 = chunked(frag.extras["h_in"], chunk)[0]
    act, logp_old, val_old = (chunked(a, chunk) for a in (frag.actions, frag.extras["logprob"], frag.extras["value"]))
    adv, ret = chunked(adv, chunk), chunked(ret, chunk)
    n = h0.shape[0]
    size = max(1, n // minibatches)
    for _ in range(epochs):
        order = torch.from_numpy(np.random.permutation(n)).to(h0.device)
        for s in range(0, n, size):
            mb = order[s:s + size]
            h = agent.unroll(obs[:, mb], first[:, mb], h0[mb])
            dist = Categorical(logits=agent.actor(h))
            logp, entropy = dist.log_prob(act[:, mb]), dist.entropy()
            value = agent.critic(h).squeeze(-1)
            ratio = (logp - logp_old[:, mb]).exp()
            a = adv[:, mb]
            a = (a - a.mean()) / (a.std() + 1e-8)
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
            v_clipped = val_old[:, mb] + (value - val_old[:, mb]).clamp(-clip, clip)
            v_loss = 0.5 * torch.max((value - ret[:, mb]) ** 2, (v_clipped - ret[:, mb]) ** 2).mean()
            loss = pg - ent_coef * entropy.mean() + vf_coef * v_loss
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
            opt.step()


def train_recurrent(total_steps: int = 500_000, envs: int = 8, steps: int = 32, seed: int = 1, lr: float = 1e-3,
                    epochs: int = 20, log: bool = True, bootstrap: bool = True, **kw: Any) -> Dict[str, Any]:
    """``ppo_cartpole.train`` with the recurrent agent and update, on CartPole without
    velocities. The settings are RL Zoo's for RecurrentPPO on CartPoleNoVel: 8 envs × 32
    steps, the whole fragment one minibatch replayed 20 times, γ 0.98, λ 0.8, no entropy
    bonus, the learning rate decaying from 1e-3. ``bootstrap``: truncated episodes
    bootstrapped from their final observation's value."""
    update = functools.partial(learn_recurrent, chunk=steps, gamma=0.98, lam=0.8, ent_coef=0.0, bootstrap=bootstrap)
    return train(total_steps, envs, steps, lag=0, seed=seed, lr=lr, epochs=epochs, minibatches=1, log=log,
                 make_agent=RecurrentAgent, update=update, env_params={"velocities": False}, **kw)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps-total", type=int, default=500_000, help="env steps at most (default 500000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--no-bootstrap", action="store_true", help="treat a truncated episode as terminated")
    a = p.parse_args()
    r = train_recurrent(a.steps_total, seed=a.seed, lr=a.lr, bootstrap=not a.no_bootstrap)
    r.pop("curve")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
