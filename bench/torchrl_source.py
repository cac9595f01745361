"""TorchRL's collectors as a fragment source for the PPO benches (bench/ppo_cartpole.py).

The same network acts (wrapped as a ``TensorDictModule`` writing ``action``, ``logprob``
and ``value``) in ``SyncDataCollector`` over a ``SerialEnv`` of N ``GymEnv``s, or in
``MultiSyncDataCollector`` with two workers of N/2 envs each (processes of their own,
with the policy's weights in shared memory, refreshed after every update). Each batch of
N × T frames, env-major, is laid out as the learner's time-major fragment: ``obs[t]``
what ``actions[t]`` was chosen on, ``first[t + 1]`` where step ``t`` ended an episode,
``obs[T]`` the next observation of the last step (its value is masked out where that
step ended an episode). TorchRL's collectors reset a done env before the next step, so
every step is a real transition, as in rollway and Gymnasium's same-step autoreset.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch


class Act(torch.nn.Module):
    """The PPO agent's sampling step: action, its log-prob and the value, timed when
    acting in this process (``timer.forward_s``)."""

    def __init__(self, agent: Any, timer: Any = None) -> None:
        super().__init__()
        self.agent, self.timer = agent, timer

    @torch.no_grad()
    def forward(self, obs: torch.Tensor) -> Any:
        t0 = time.perf_counter()
        action, logprob, _, value = self.agent.get_action_and_value(obs)
        if self.timer is not None:
            self.timer.forward_s += time.perf_counter() - t0
        return action, logprob, value.squeeze(-1)


def _policy(agent: Any, timer: Any) -> Any:
    from tensordict.nn import TensorDictModule

    return TensorDictModule(Act(agent, timer), in_keys=["observation"], out_keys=["action", "logprob", "value"])


def _make_env(env_id: str) -> Any:
    from torchrl.envs import GymEnv

    return GymEnv(env_id, categorical_action_encoding=True)


class TorchRLSource:
    """``kind`` ``sync`` (SyncDataCollector) or ``multisync`` (MultiSyncDataCollector, 2 workers)."""

    def __init__(self, kind: str, acting: Any, envs: int, steps: int, seed: int, env_id: str = "CartPole-v1"):
        import functools

        from torchrl.collectors import MultiSyncDataCollector, SyncDataCollector
        from torchrl.envs import SerialEnv

        self.acting, self.n, self.steps = acting, envs, steps
        # Workers of their own (multisync) act in other processes, where this one's clock is not.
        self.policy = _policy(acting.agent, acting if kind == "sync" else None)
        make = functools.partial(_make_env, env_id)
        if kind == "sync":
            self.collector = SyncDataCollector(SerialEnv(envs, make), self.policy, frames_per_batch=envs * steps,
                                               total_frames=-1, split_trajs=False)
        else:
            workers = 2
            self.collector = MultiSyncDataCollector([functools.partial(SerialEnv, envs // workers, make)] * workers, self.policy,
                                                    frames_per_batch=envs * steps, total_frames=-1, split_trajs=False,
                                                    cat_results="stack")
        self.collector.set_seed(seed)
        self.it = iter(self.collector)
        self.first = torch.ones(envs, dtype=torch.bool)
        self.ret = np.zeros(envs)

    def collect(self) -> SimpleNamespace:
        td = next(self.it).reshape(self.n, -1)  # [N, T], env-major
        t_len = td.shape[1]
        done = td["next", "done"].reshape(self.n, t_len)
        obs = np.empty((t_len + 1, self.n, *td["observation"].shape[2:]), np.float32)
        obs[:t_len] = td["observation"].transpose(0, 1).numpy()
        obs[t_len] = td["next", "observation"][:, -1].numpy()
        first = np.empty((t_len + 1, self.n), bool)
        first[0] = self.first.numpy()
        first[1:] = done.transpose(0, 1).numpy()
        self.first = done[:, -1].clone()
        rewards = td["next", "reward"].reshape(self.n, t_len).transpose(0, 1).numpy().astype(np.float32)
        finished = []
        for t in range(t_len):
            self.ret += rewards[t]
            finished.extend(self.ret[first[t + 1]].tolist())
            self.ret[first[t + 1]] = 0.0
        extras = {k: td[k].reshape(self.n, t_len).transpose(0, 1).numpy().astype(np.float32) for k in ("logprob", "value")}
        return SimpleNamespace(steps=t_len, envs=self.n, obs=obs, first=first,
                               actions=td["action"].reshape(self.n, t_len).transpose(0, 1).numpy().astype(np.int64),
                               rewards=rewards, extras=extras, finished={"return": np.array(finished)})

    def publish(self, weights: Any = None) -> int:
        self.collector.update_policy_weights_()
        return 0

    def close(self) -> None:
        self.collector.shutdown()
