"""Independent PPO with parameter sharing on a PettingZoo env, with rollway as the rollout engine.

The recipe of CleanRL's ``ppo_pettingzoo_ma_atari.py``: one network acts for every agent, each agent
sees only its own observation, and every (env, agent) pair is a trajectory of its own in the update.
Where CleanRL turns the PettingZoo env into a vector env of agents with SuperSuit, here the env runs
in ``rollway.Rollout`` as one env whose rows are its agents (``rollway.multiagent``): the policy gets
``obs["obs"]`` of shape ``[N, K, ...]`` (N envs, K agents) and returns ``[N, K]`` actions, and
:func:`rollway.multiagent.agent_steps` gives each agent's rewards and ends ``[T, N, K]``.

The default env is MPE's ``simple_spread`` (3 agents cover 3 landmarks and avoid colliding; episodes
of 25 steps, cut by a time limit and bootstrapped from their final observation). A random policy
scores about -25 per agent and episode; the agents learn to spread over the landmarks.

    python -m rollway.examples.ppo_multiagent                        # 400k env steps
    python -m rollway.examples.ppo_multiagent --steps-total 100000 --envs 8

Agents that are not live (dead, not spawned yet) take no part in the update: their rows are masked
out (``agents/active``). Prints one line per 10 updates and a JSON summary last: steps/s (env steps
and agent steps), and the mean return per agent and episode of the first and last 10 updates.
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from typing import Any, Dict, Optional

import numpy as np
import torch

import rollway
import rollway.torch
from rollway.examples.ppo_cartpole import Agent, minibatch_epochs
from rollway.multiagent import agent_steps


class SharedAgent(Agent):
    """One actor-critic for every agent: ``ppo_cartpole``'s (CleanRL's MLP: two 64-unit tanh layers each),
    acting on every agent row of a batch at once."""

    def act(self, obs: Dict[str, torch.Tensor], first: Any, state: Any) -> Dict[str, torch.Tensor]:
        """Every agent of every env at once: ``obs["obs"]`` ``[N, K, d]`` → actions ``[N, K]``."""
        x = obs["obs"].float()
        action, logprob, _, value = self.get_action_and_value(x)
        return {"actions": action, "logprob": logprob, "value": value.squeeze(-1)}


def gae(rewards: torch.Tensor, values: torch.Tensor, next_value: torch.Tensor, dones: torch.Tensor, gamma: float,
        lam: float):
    """GAE over ``[T, N, K]``, each (env, agent) a trajectory; ``dones[t]``: its trajectory ended at ``t``."""
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(next_value)
    for t in reversed(range(rewards.shape[0])):
        nxt = next_value if t == rewards.shape[0] - 1 else values[t + 1]
        go_on = 1.0 - dones[t]
        delta = rewards[t] + gamma * nxt * go_on - values[t]
        last = delta + gamma * lam * go_on * last
        adv[t] = last
    return adv, adv + values


def learn(agent: SharedAgent, opt: torch.optim.Optimizer, frag: rollway.Fragment, epochs: int = 4, minibatches: int = 4,
          gamma: float = 0.99, lam: float = 0.95) -> None:
    """One PPO update over every live agent row of the fragment (CleanRL's clipped objective)."""
    steps = agent_steps(frag)
    obs = torch.from_numpy(steps.obs).float()
    rewards = torch.from_numpy(steps.rewards).float()
    dones = torch.from_numpy(steps.dones).float()
    values = torch.from_numpy(frag.extras["value"])
    with torch.no_grad():
        next_value = agent.get_value(obs[-1]).squeeze(-1)
        # A time limit is not an end: an agent cut by it is bootstrapped from the observation its step produced.
        cut = torch.from_numpy(steps.truncated & ~steps.terminated)
        if cut.any():
            rewards[cut] += gamma * agent.get_value(torch.from_numpy(steps.next_obs()).float()[cut]).squeeze(-1)
    adv, ret = gae(rewards, values, next_value, dones, gamma, lam)
    live = torch.from_numpy(steps.active[:-1])
    batch = (obs[:-1][live], torch.from_numpy(frag.actions)[live], torch.from_numpy(frag.extras["logprob"])[live],
             values[live], adv[live], ret[live])
    minibatch_epochs(agent, opt, batch, epochs, minibatches, 0.2, 0.01, 0.5, 0.5)


def train(env: str = "pz:mpe2.simple_spread_v3", total_steps: int = 400_000, envs: int = 8, steps: int = 128,
          seed: int = 1, lr: float = 2.5e-4, log: bool = True, env_params: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Trains for ``total_steps`` env steps; returns steps/s and the learning curve's ends."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    torch.set_num_threads(1)
    probe = rollway.Rollout(env, "random", num_envs=1, steps_per_fragment=1, env_params=env_params)
    space, act_space = probe.single_observation_space["obs"], probe.single_action_space
    probe.close()
    k = space.shape[0]
    agent = SharedAgent(int(np.prod(space.shape[1:])), int(act_space.nvec[0]))
    opt = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    updates = max(1, total_steps // (envs * steps))
    per_update = []
    start = time.perf_counter()
    with rollway.Rollout(env, rollway.torch.Policy(agent.act), num_envs=envs, steps_per_fragment=steps, seed=seed,
                         env_params=env_params) as rollout:
        for update in range(1, updates + 1):
            frag = rollout.collect()
            # Each finished episode's return per agent: the env's return is the agents' summed.
            per_update.append(frag.finished["return"] / k)
            for g in opt.param_groups:
                g["lr"] = lr * (1.0 - (update - 1.0) / updates)
            learn(agent, opt, frag)
            rollout.publish()
            if log and update % 10 == 0:
                recent = np.concatenate(per_update[-10:])
                print(f"steps {update * envs * steps:>7}  return per agent {recent.mean():7.2f}  "
                      f"{update * envs * steps / (time.perf_counter() - start):6.0f} env steps/s", flush=True)
    wall = time.perf_counter() - start
    ends = collections.OrderedDict(first=np.concatenate(per_update[:10]), last=np.concatenate(per_update[-10:]))
    return {"env": env, "agents": k, "steps": updates * envs * steps, "wall_s": wall,
            "steps_per_s": updates * envs * steps / wall, "agent_steps_per_s": updates * envs * steps * k / wall,
            "first_return": float(ends["first"].mean()), "last_return": float(ends["last"].mean()),
            "last_return_se": float(ends["last"].std() / np.sqrt(len(ends["last"])))}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", default="pz:mpe2.simple_spread_v3", help="a PettingZoo env whose agents share their spaces")
    p.add_argument("--steps-total", type=int, default=400_000, help="env steps (default 400000)")
    p.add_argument("--envs", type=int, default=8, help="envs (default 8)")
    p.add_argument("--steps", type=int, default=128, help="steps per fragment (default 128)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    print(json.dumps(train(a.env, a.steps_total, a.envs, a.steps, a.seed)))


if __name__ == "__main__":
    main()
