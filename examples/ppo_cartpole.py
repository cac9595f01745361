"""PPO on CartPole-v1 with rollway as the rollout engine.

CleanRL's ``ppo.py`` (same network, initialisation, hyper-parameters and update), with
its collection loop replaced by ``rollway.Rollout``: the policy returns its log-probs
and values beside the actions, and each ``collect()`` hands over T steps × N envs with
the bootstrap observation. ``--lag 0`` is CleanRL's loop (nothing is collected while
the learner trains); ``--lag 1`` collects the next fragment with the previous weights
while the learner trains, and publishes new weights after each update.

**Truncation is not termination.** An episode cut by a time limit did not end: its
last step is bootstrapped with the value of the observation it was cut at (the
fragment's ``final_obs``), as SB3 and Gymnasium's docs prescribe; CleanRL's loop treats
it as an end. On by default; ``--no-bootstrap`` turns it off (bench/RESULTS.md compares
the two on CartPole cut at 100 steps, where most episodes end by truncation).

    python examples/ppo_cartpole.py                    # 500k steps, stops when solved (mean return ≥ 475)
    python examples/ppo_cartpole.py --lag 1 --envs 8 --seed 2

Prints one line per 10 updates and a JSON summary last (steps/s, time to solved,
time inside the policy's forward and the learner's update).
"""

from __future__ import annotations

import argparse
import collections
import copy
import functools
import json
import time
from typing import Any, Callable, Dict, Optional

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical

import rollway


def layer(i: int, o: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """CleanRL's CartPole actor-critic: two 64-unit tanh MLPs."""

    def __init__(self, obs_dim: int, n_actions: int):
        super().__init__()
        self.critic = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0))
        self.actor = nn.Sequential(layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, n_actions, 0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x)

    def get_action_and_value(self, x: torch.Tensor, action: Optional[torch.Tensor] = None):
        dist = Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)

    def act(self, obs: torch.Tensor, first: np.ndarray, state: Any) -> Dict[str, Any]:
        action, logprob, _, value = self.get_action_and_value(obs)
        return {"actions": action, "logprob": logprob, "value": value.flatten()}


class Acting:
    """The policy the rollout calls: actions, with log-probs and values as extras."""

    def __init__(self, agent: nn.Module):
        self.agent = agent
        # Time inside the network's forward and sampling alone, for the "outside" share.
        self.forward_s = 0.0

    @torch.no_grad()
    def __call__(self, obs: np.ndarray, first: np.ndarray, state: Any) -> Dict[str, Any]:
        t0 = time.perf_counter()
        out = self.agent.act(tensors(obs), first, state)
        self.forward_s += time.perf_counter() - t0
        return {k: v.numpy() for k, v in out.items()}

    def load(self, weights: Dict[str, torch.Tensor]) -> None:
        self.agent.load_state_dict(weights)


def tensors(obs: Any) -> Any:
    """Observations as tensors without a copy: a Dict space's come as one array per leaf."""
    return {k: torch.from_numpy(v) for k, v in obs.items()} if isinstance(obs, dict) else torch.from_numpy(obs)


def at(x: Any, index: Any) -> Any:
    """``x[index]``, of each leaf for a dict."""
    return {k: v[index] for k, v in x.items()} if isinstance(x, dict) else x[index]


def flat(x: Any) -> Any:
    """``[T, N, ...]`` as ``[T * N, ...]``, of each leaf for a dict."""
    return {k: flat(v) for k, v in x.items()} if isinstance(x, dict) else x.reshape(-1, *x.shape[2:])


def bootstrapped_rewards(agent: Agent, frag: rollway.Fragment, gamma: float) -> torch.Tensor:
    """The fragment's rewards, each truncated episode's last one plus ``gamma`` times the
    value of its final observation: GAE then treats every end as terminal, and a time
    limit costs the return nothing. A fragment without ``final_obs`` (another engine's,
    in the benches) is left as it is."""
    rewards = torch.from_numpy(frag.rewards).clone()
    fin, final = frag.finished, getattr(frag, "final_obs", None)
    cut = ~fin["terminated"].astype(bool) if final is not None else np.zeros(0, bool)
    if cut.any():
        with torch.no_grad():
            v = agent.get_value(tensors(at(final, cut))).flatten()
        rewards[torch.from_numpy(fin["step"][cut]), torch.from_numpy(fin["env"][cut])] += gamma * v
    return rewards


def advantages(frag: rollway.Fragment, next_value: torch.Tensor, gamma: float, lam: float,
               rewards: Optional[torch.Tensor] = None):
    """GAE over a fragment: an episode that ended at t (``first[t + 1]``) bootstraps nothing
    here (``rewards`` from :func:`bootstrapped_rewards` carry a truncated end's bootstrap)."""
    rewards = torch.from_numpy(frag.rewards) if rewards is None else rewards
    values = torch.from_numpy(frag.extras["value"])
    nonterminal = 1.0 - torch.from_numpy(frag.first[1:]).float()
    adv = torch.zeros_like(rewards)
    last = torch.zeros(frag.envs)
    for t in reversed(range(frag.steps)):
        nxt = next_value if t == frag.steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * nxt * nonterminal[t] - values[t]
        last = delta + gamma * lam * nonterminal[t] * last
        adv[t] = last
    return adv, adv + values


def rollway_source(acting: Acting, envs: int, steps: int, seed: int, lag: int, max_episode_steps: Optional[int] = None,
                   **env_params: Any) -> rollway.Rollout:
    """Where fragments come from: a rollway rollout (the bench swaps in other engines)."""
    return rollway.Rollout("CartPole-v1", acting, num_envs=envs, steps=steps, seed=seed, max_policy_lag=lag, env_params=env_params,
                           max_episode_steps=max_episode_steps)


def train(total_steps: int = 500_000, envs: int = 8, steps: int = 128, lag: int = 0, seed: int = 1,
          lr: float = 2.5e-4, epochs: int = 4, minibatches: int = 4, target: float = 475.0,
          stop_when_solved: bool = True, log: bool = True, source: Callable[..., Any] = rollway_source,
          make_agent: Callable[[], nn.Module] = lambda: Agent(4, 2), update: Optional[Callable[..., None]] = None,
          env_params: Optional[Dict[str, Any]] = None, threads: int = 1, bootstrap: bool = True,
          time_limit: Optional[int] = None) -> Dict[str, Any]:
    """Trains until ``total_steps`` (or solved); returns steps/s, time to solved and where the time went.
    ``threads`` sets torch's threads (0 leaves torch's choice); ``bootstrap``: truncated episodes
    bootstrapped from their final observation's value (see the module docs); ``time_limit``:
    episodes cut at this many steps (the env's own limit otherwise)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    if threads:
        torch.set_num_threads(threads)
    agent = make_agent()
    update_fn = update or functools.partial(learn, bootstrap=bootstrap)
    acting = Acting(agent if lag == 0 else copy.deepcopy(agent))
    opt = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5)
    batch = envs * steps
    updates = total_steps // batch
    recent: collections.deque = collections.deque(maxlen=20)
    curve, solved_s, learn_s = [], None, 0.0
    start = time.perf_counter()
    limit = {} if time_limit is None else {"max_episode_steps": time_limit}
    rollout = source(acting, envs, steps, seed, lag, **limit, **(env_params or {}))
    try:
        for update in range(1, updates + 1):
            frag = rollout.collect()
            recent.extend(frag.finished["return"].tolist())
            t0 = time.perf_counter()
            for g in opt.param_groups:
                g["lr"] = lr * (1.0 - (update - 1.0) / updates)
            update_fn(agent, opt, frag, epochs, minibatches)
            rollout.publish(None if lag == 0 else {k: v.detach().clone() for k, v in agent.state_dict().items()})
            learn_s += time.perf_counter() - t0
            mean = float(np.mean(recent)) if recent else 0.0
            curve.append((update * batch, mean))
            if log and update % 10 == 0:
                print(f"steps {update * batch:>7}  mean return {mean:6.1f}  {update * batch / (time.perf_counter() - start):6.0f} steps/s", flush=True)
            if solved_s is None and len(recent) == recent.maxlen and mean >= target:
                solved_s = time.perf_counter() - start
                if stop_when_solved:
                    break
    finally:
        rollout.close()
    wall = time.perf_counter() - start
    done = curve[-1][0]
    return {"steps": done, "wall_s": wall, "steps_per_s": done / wall, "solved_s": solved_s,
            "mean_return": curve[-1][1], "forward_s": acting.forward_s, "learn_s": learn_s,
            "outside_share": 1.0 - (acting.forward_s + learn_s) / wall, "lag": lag, "envs": envs, "seed": seed, "curve": curve}


def learn(agent: Agent, opt: torch.optim.Optimizer, frag: rollway.Fragment, epochs: int, minibatches: int,
          gamma: float = 0.99, lam: float = 0.95, clip: float = 0.2, ent_coef: float = 0.01,
          vf_coef: float = 0.5, max_grad_norm: float = 0.5, bootstrap: bool = True) -> None:
    """CleanRL's PPO update (clipped objective, clipped value loss, normalised advantages), for
    an observation of one array or a dict of them (a Dict space's leaves); with ``bootstrap``,
    truncated episodes bootstrapped from their final observations."""
    obs = tensors(frag.obs)
    with torch.no_grad():
        next_value = agent.get_value(at(obs, -1)).flatten()
    rewards = bootstrapped_rewards(agent, frag, gamma) if bootstrap else None
    adv, ret = advantages(frag, next_value, gamma, lam, rewards)
    b_obs = flat(at(obs, slice(None, -1)))
    b_act = torch.from_numpy(frag.actions).reshape(-1)
    b_logp = torch.from_numpy(frag.extras["logprob"]).reshape(-1)
    b_val = torch.from_numpy(frag.extras["value"]).reshape(-1)
    b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
    n = b_act.shape[0]
    size = n // minibatches
    for _ in range(epochs):
        order = np.random.permutation(n)
        for s in range(0, n, size):
            mb = torch.from_numpy(order[s:s + size])
            _, logp, entropy, value = agent.get_action_and_value(at(b_obs, mb), b_act[mb])
            ratio = (logp - b_logp[mb]).exp()
            a = b_adv[mb]
            a = (a - a.mean()) / (a.std() + 1e-8)
            pg = torch.max(-a * ratio, -a * ratio.clamp(1 - clip, 1 + clip)).mean()
            value = value.view(-1)
            v_clipped = b_val[mb] + (value - b_val[mb]).clamp(-clip, clip)
            v_loss = 0.5 * torch.max((value - b_ret[mb]) ** 2, (v_clipped - b_ret[mb]) ** 2).mean()
            loss = pg - ent_coef * entropy.mean() + vf_coef * v_loss
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
            opt.step()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps-total", type=int, default=500_000, help="env steps at most (default 500000)")
    p.add_argument("--envs", type=int, default=8, help="envs (default 8)")
    p.add_argument("--steps", type=int, default=128, help="steps per fragment (default 128)")
    p.add_argument("--lag", type=int, default=0, help="max policy lag: 0 on-policy, 1 overlaps collection and training")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-stop", action="store_true", help="train for all the steps even once solved")
    p.add_argument("--no-bootstrap", action="store_true", help="treat a truncated episode as terminated (CleanRL's loop)")
    p.add_argument("--time-limit", type=int, help="cut episodes at this many steps (default: CartPole's 500)")
    a = p.parse_args()
    r = train(a.steps_total, a.envs, a.steps, a.lag, a.seed, stop_when_solved=not a.no_stop, bootstrap=not a.no_bootstrap,
              time_limit=a.time_limit)
    r.pop("curve")
    print(json.dumps(r))


if __name__ == "__main__":
    main()
