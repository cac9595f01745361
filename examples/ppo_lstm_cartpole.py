"""Recurrent PPO on CartPole-v1 with the velocities hidden (``velocities=false``: the policy
sees only the cart's position and the pole's angle), which a memoryless policy cannot
balance for long: an LSTM must infer the velocities from what it has seen.

The rollout carries the LSTM's state: the policy returns it beside its actions, the
rollout hands it back on the next step (zeros where an episode starts) and each
fragment starts with the state every env had before its first step, so the update
replays the fragment's sequences through the LSTM exactly as they were acted
(CleanRL's ``ppo_atari_lstm.py`` update: minibatches of whole envs, the state reset
where ``first``).

    python examples/ppo_lstm_cartpole.py            # until mean return ≥ 475, at most 1M steps
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Dict, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import rollway
from ppo_cartpole import advantages, layer, train

HIDDEN = 64


class LstmAgent(nn.Module):
    """Encoder, LSTM, and actor/critic heads on its output; the state is (h, c) side by side."""

    def __init__(self, obs_dim: int = 2, n_actions: int = 2):
        super().__init__()
        self.encoder = nn.Sequential(layer(obs_dim, HIDDEN), nn.Tanh())
        self.lstm = nn.LSTM(HIDDEN, HIDDEN)
        for name, p in self.lstm.named_parameters():
            if "bias" in name:
                nn.init.constant_(p, 0)
            elif "weight" in name:
                nn.init.orthogonal_(p, 1.0)
        self.actor = layer(HIDDEN, n_actions, 0.01)
        self.critic = layer(HIDDEN, 1, 1.0)

    def unroll(self, obs: torch.Tensor, first: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Runs ``obs [T, B, obs_dim]`` through the LSTM from ``state [B, 2H]``, zeroing the
        state where ``first [T, B]``; returns the outputs ``[T, B, H]`` and the last state."""
        h, c = state[:, :HIDDEN].unsqueeze(0), state[:, HIDDEN:].unsqueeze(0)
        x = self.encoder(obs)
        out = []
        for t in range(obs.shape[0]):
            keep = (1.0 - first[t].float()).view(1, -1, 1)
            y, (h, c) = self.lstm(x[t].unsqueeze(0), (h * keep, c * keep))
            out.append(y)
        return torch.cat(out), torch.cat([h[0], c[0]], dim=1)

    def act(self, obs: torch.Tensor, first: np.ndarray, state: np.ndarray) -> Dict[str, Any]:
        n = obs.shape[0]
        s = torch.from_numpy(state) if state.shape[1] else torch.zeros(n, 2 * HIDDEN)
        # The rollout already hands over zeros where an episode starts.
        y, new_state = self.unroll(obs.unsqueeze(0), torch.zeros(1, n, dtype=torch.bool), s)
        dist = Categorical(logits=self.actor(y[0]))
        action = dist.sample()
        return {"actions": action, "state": new_state, "logprob": dist.log_prob(action), "value": self.critic(y[0]).flatten()}


def learn_lstm(agent: LstmAgent, opt: torch.optim.Optimizer, frag: rollway.Fragment, epochs: int, minibatches: int,
               gamma: float = 0.99, lam: float = 0.95, clip: float = 0.2, ent_coef: float = 0.01,
               vf_coef: float = 0.5, max_grad_norm: float = 0.5) -> None:
    """PPO's update over whole env sequences, replayed through the LSTM from the fragment's state."""
    obs = torch.from_numpy(frag.obs)
    first = torch.from_numpy(frag.first)
    state = torch.from_numpy(frag.state) if frag.state.shape[1] else torch.zeros(frag.envs, 2 * HIDDEN)
    with torch.no_grad():
        _, last = agent.unroll(obs[:-1], first[:-1], state)
        y, _ = agent.unroll(obs[-1:], first[-1:], last)
        next_value = agent.critic(y[0]).flatten()
    adv, ret = advantages(frag, next_value, gamma, lam)
    acts = torch.from_numpy(frag.actions)
    logp_old = torch.from_numpy(frag.extras["logprob"])
    val_old = torch.from_numpy(frag.extras["value"])
    per = max(1, frag.envs // minibatches)
    for _ in range(epochs):
        order = np.random.permutation(frag.envs)
        for s in range(0, frag.envs, per):
            e = torch.from_numpy(order[s:s + per])
            y, _ = agent.unroll(obs[:-1, e], first[:-1, e], state[e])
            dist = Categorical(logits=agent.actor(y))
            logp, entropy, value = dist.log_prob(acts[:, e]), dist.entropy(), agent.critic(y).squeeze(-1)
            ratio = (logp - logp_old[:, e]).exp()
            a = adv[:, e]
            a = (a - a.mean()) / (a.std() + 1e-8)
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
            v_clipped = val_old[:, e] + (value - val_old[:, e]).clamp(-clip, clip)
            v_loss = 0.5 * torch.max((value - ret[:, e]) ** 2, (v_clipped - ret[:, e]) ** 2).mean()
            loss = pg - ent_coef * entropy.mean() + vf_coef * v_loss
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
            opt.step()


def train_lstm(total_steps: int = 1_000_000, envs: int = 8, steps: int = 128, seed: int = 1, lr: float = 1e-3,
               log: bool = True, stop_when_solved: bool = True, recurrent: bool = True) -> Dict[str, Any]:
    """``recurrent=False`` trains the feed-forward PPO on the same hidden-velocity task, for comparison."""
    from ppo_cartpole import Agent, learn

    kw: Dict[str, Any] = dict(make_agent=LstmAgent, update=learn_lstm) if recurrent else dict(make_agent=lambda: Agent(2, 2), update=learn)
    return train(total_steps, envs, steps, 0, seed, lr=lr, log=log, stop_when_solved=stop_when_solved,
                 env_params={"velocities": False}, **kw)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps-total", type=int, default=1_000_000)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--feedforward", action="store_true", help="the memoryless PPO on the same task, for comparison")
    a = p.parse_args()
    r = train_lstm(a.steps_total, a.envs, a.steps, a.seed, a.lr, recurrent=not a.feedforward)
    r.pop("curve")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
