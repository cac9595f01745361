"""PPO with continuous actions on rollway: CleanRL's ``ppo_continuous_action``.

CleanRL's network (two 64-unit tanh layers for the critic and for the actor's mean, a
learned log-std), initialisation and settings (2048 steps per update, 10 epochs of 32
minibatches, learning rate 3e-4 annealed, no entropy bonus, clipped value loss) and its
env wrappers' work, done where rollway puts it:

- **observation normalisation** (``NormalizeObservation``, clipped to ±10) inside the
  agent: running statistics updated with each batch the policy sees, and the
  normalised observations kept with the fragment (``extras["norm_obs"]``), so the update
  sees what the policy saw;
- **reward scaling** (``NormalizeReward``: rewards divided by the running std of the
  discounted return, clipped to ±10) on each fragment before the update;
- **action clipping** (``ClipAction``): the env gets the sample clipped to the action
  space, the update the sample itself (``extras["raw_action"]``).

Truncated episodes (Pendulum's 200-step limit, MuJoCo's 1000) are bootstrapped from their
final observation's value, on by default (CleanRL treats them as ends): most episodes of
these envs end by truncation. ``--no-bootstrap`` turns it off.

    python -m rollway.examples.ppo_continuous                                # Pendulum-v1 (rollway's own), 200k steps
    python -m rollway.examples.ppo_continuous --env gym:HalfCheetah-v5 --steps-total 1000000

Prints one line per 10 updates and a JSON summary last (steps/s, the return's first and
last means, time inside the policy and the update).
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Any, Dict, Optional

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.normal import Normal

import rollway
from rollway.examples.ppo_cartpole import advantages, bootstrapped_rewards, layer, minibatch_epochs, on_device, train
from rollway.examples.ppo_pixels import curve_ends


class ContinuousAgent(nn.Module):
    """CleanRL's continuous actor-critic, with the observation normaliser as buffers (they
    travel with the weights and the checkpoints)."""

    def __init__(self, obs_dim: int, act_dim: int, low: np.ndarray, high: np.ndarray):
        super().__init__()
        self.critic = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor_mean = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, act_dim, 0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))
        self.register_buffer("obs_mean", torch.zeros(obs_dim, dtype=torch.float64))
        self.register_buffer("obs_var", torch.ones(obs_dim, dtype=torch.float64))
        self.register_buffer("obs_count", torch.tensor(1e-4, dtype=torch.float64))
        self.register_buffer("low", torch.as_tensor(low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(high, dtype=torch.float32))

    def observe(self, x: torch.Tensor) -> None:
        """Gymnasium's ``RunningMeanStd.update`` with a batch of observations."""
        x = x.double().reshape(-1, self.obs_mean.shape[0])
        mean, var, n = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta, total = mean - self.obs_mean, self.obs_count + n
        m2 = self.obs_var * self.obs_count + var * n + delta.pow(2) * self.obs_count * n / total
        self.obs_mean += delta * n / total
        self.obs_var.copy_(m2 / total)
        self.obs_count.copy_(total)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return ((x.double() - self.obs_mean) / torch.sqrt(self.obs_var + 1e-8)).clamp(-10, 10).float()

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """The value of raw observations (a fragment's last and final ones)."""
        return self.critic(self.normalize(x))

    def get_action_and_value(self, z: torch.Tensor, action: Optional[torch.Tensor] = None):
        """From normalised observations ``z``: action, log-prob and entropy (summed over the
        action's dimensions), value."""
        mean = self.actor_mean(z)
        dist = Normal(mean, self.actor_logstd.expand_as(mean).exp())
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(1), dist.entropy().sum(1), self.critic(z)

    def act(self, obs: torch.Tensor, first: np.ndarray, state: Any) -> Dict[str, Any]:
        self.observe(obs)
        z = self.normalize(obs)
        action, logprob, _, value = self.get_action_and_value(z)
        return {"actions": torch.max(torch.min(action, self.high), self.low), "raw_action": action, "logprob": logprob,
                "value": value.flatten(), "norm_obs": z}

    def logits(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action (the mean, clipped), for greedy evaluation."""
        return torch.max(torch.min(self.actor_mean(self.normalize(obs)), self.high), self.low)


class RewardScale:
    """Gymnasium's ``NormalizeReward`` over fragments: each env's discounted return is kept
    across fragments, its running variance updated step by step, and each reward divided
    by its std (clipped to ±10), in place of the fragment's rewards."""

    def __init__(self, gamma: float):
        self.gamma, self.returns = gamma, None
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def __call__(self, frag: rollway.Fragment) -> None:
        if self.returns is None:
            self.returns = np.zeros(frag.envs)
        out = np.empty_like(frag.rewards)
        for t in range(frag.steps):
            self.returns = self.returns * self.gamma + frag.rewards[t]
            mean, var, n = self.returns.mean(), self.returns.var(), frag.envs
            delta, total = mean - self.mean, self.count + n
            self.var = (self.var * self.count + var * n + delta ** 2 * self.count * n / total) / total
            self.mean, self.count = self.mean + delta * n / total, total
            out[t] = np.clip(frag.rewards[t] / np.sqrt(self.var + 1e-8), -10, 10)
            self.returns[frag.terminated[t] | frag.truncated[t]] = 0.0
        frag.rewards = out.astype(frag.rewards.dtype)


def learn_continuous(agent: ContinuousAgent, opt: torch.optim.Optimizer, frag: rollway.Fragment, epochs: int, minibatches: int,
                     scale: RewardScale, gamma: float = 0.99, lam: float = 0.95, clip: float = 0.2, vf_coef: float = 0.5,
                     max_grad_norm: float = 0.5, bootstrap: bool = True) -> None:
    """CleanRL's continuous PPO update on the observations and samples the policy saw."""
    scale(frag)
    frag = on_device(frag, agent)
    with torch.no_grad():
        next_value = agent.get_value(frag.obs[-1]).flatten()
    rewards = bootstrapped_rewards(agent, frag, gamma) if bootstrap else None
    adv, ret = advantages(frag, next_value, gamma, lam, rewards)
    z, acts = frag.extras["norm_obs"], frag.extras["raw_action"]
    b_obs, b_act = z.reshape(-1, z.shape[-1]), acts.reshape(-1, acts.shape[-1])
    b_logp, b_val = frag.extras["logprob"].reshape(-1), frag.extras["value"].reshape(-1)
    b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
    minibatch_epochs(agent, opt, (b_obs, b_act, b_logp, b_val, b_adv, b_ret), epochs, minibatches, clip, 0.0, vf_coef,
                     max_grad_norm)


def make_agent(env: str, env_params: Dict[str, Any]) -> ContinuousAgent:
    """An agent sized by the env's spaces (read from the env rollway makes)."""
    v = rollway.make_vec(env, 1, host="inline", **env_params) if ":" in env else rollway.make_vec(env, 1, **env_params)
    o, a = v.single_observation_space, v.single_action_space
    v.close()
    return ContinuousAgent(int(np.prod(o.shape)), int(np.prod(a.shape)), a.low, a.high)


def train_continuous(total_steps: int = 200_000, env: str = "Pendulum-v1", envs: int = 1, steps: int = 2048, seed: int = 1,
                     threads: int = 1, log: bool = True, bootstrap: bool = True, env_params: Optional[Dict[str, Any]] = None,
                     run_dir: Optional[str] = None) -> Dict[str, Any]:
    """Trains for ``total_steps``; returns what ``ppo_cartpole.train`` does (with the curve)."""
    params = dict(env_params or {})

    def source(acting: Any, n: int, t: int, s: int, lag: int, rollout_args: Optional[Dict[str, Any]] = None, **_: Any):
        return rollway.Rollout(env, acting, num_envs=n, steps_per_fragment=t, seed=s, env_params=params, **(rollout_args or {}))

    update = functools.partial(learn_continuous, scale=RewardScale(0.99), bootstrap=bootstrap)
    return train(total_steps, envs, steps, 0, seed, lr=3e-4, epochs=10, minibatches=32, target=float("inf"),
                 stop_when_solved=False, log=log, source=source, make_agent=lambda: make_agent(env, params), update=update,
                 threads=threads, run_dir=run_dir)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="Pendulum-v1", help="a Box-action env: rollway's Pendulum-v1, or gym:HalfCheetah-v5, gym:Hopper-v5, …")
    p.add_argument("--steps-total", type=int, default=200_000, help="env steps (default 200000)")
    p.add_argument("--envs", type=int, default=1, help="envs (default 1, as CleanRL)")
    p.add_argument("--steps", type=int, default=2048, help="steps per env per update (default 2048)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--no-bootstrap", action="store_true", help="treat a truncated episode as terminated (CleanRL's loop)")
    p.add_argument("--run", metavar="DIR", help="record the replay, TensorBoard scalars and checkpoints here; run again to resume")
    a = p.parse_args()
    r = train_continuous(a.steps_total, a.env, a.envs, a.steps, a.seed, threads=a.threads, bootstrap=not a.no_bootstrap,
                         run_dir=a.run)
    r["first_mean"], r["last_mean"] = curve_ends(r.pop("curve")) if r["curve"] else (None, None)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
