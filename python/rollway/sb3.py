"""``rollway.sb3.VecEnv``: rollway's vector envs as a Stable-Baselines3 ``VecEnv``.

SB3's algorithms take any ``VecEnv``; this one steps ``rollway.make_vec``'s envs (a
built-in id, ``gym:ID``, ``atari:GAME``, ``module:callable``) with SB3's conventions:
an env whose episode ends is reset within the same step, its last observation in
``infos[i]["terminal_observation"]`` and ``infos[i]["TimeLimit.truncated"]`` set when a
time limit cut it (SB3 bootstraps those), rewards as float32, ``seed()`` taking effect at
the next ``reset()``, and ``infos[i]["episode"]`` (return ``r``, length ``l``, seconds
``t``) as SB3's ``Monitor`` writes it, so that PPO logs ``ep_rew_mean`` without a
``VecMonitor`` (an episode is what the env ends: a life, with ``terminal_on_life_loss``;
with ``episodic_life``, the whole game, its raw return, at game over, as SB3's ``Monitor``
under its ``AtariWrapper`` and CleanRL's ``RecordEpisodeStatistics`` log it)::

    from stable_baselines3 import PPO
    from rollway.sb3 import VecEnv

    model = PPO("CnnPolicy", VecEnv("atari:Breakout-v5", 8, reward_clip=True), n_steps=128)
    model.learn(100_000)

Needs ``stable-baselines3`` (not a dependency of rollway).
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterable, List, Optional, Type

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv as _SB3VecEnv

from rollway.vector import VectorEnv, make_vec


def _row(obs: Any, i: int) -> Any:
    """Env ``i``'s observation of a batch (an array, or a dict of arrays)."""
    return {k: _row(v, i) for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


class VecEnv(_SB3VecEnv):
    """``num_envs`` envs ``env_id`` (``make_vec``'s keyword arguments after them) as an SB3 ``VecEnv``.

    ``seed``: env ``i``'s first reset is seeded with ``seed + i``, as a script that seeds each of
    its envs with ``args.seed + i`` (CleanRL's) or calls ``VecEnv.seed(seed)`` (SB3's) does; the
    same seed then gives the same episodes. Left out, each env draws its own seed, as Gymnasium's
    vector envs do."""

    def __init__(self, env_id: str, num_envs: int = 1, *, seed: Optional[int] = None, **make_vec_kwargs: Any) -> None:
        self.venv: VectorEnv = make_vec(env_id, num_envs, **make_vec_kwargs)
        self._actions: Optional[np.ndarray] = None
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        if seed is not None:
            self.seed(seed)
        self._started = time.time()
        # With episodic_life an episode is a life: SB3's Monitor (under the life wrapper) logs games.
        self._games = str(make_vec_kwargs.get("episodic_life", False)).lower() == "true"
        self._returns = np.zeros(num_envs)
        self._lengths = np.zeros(num_envs, dtype=np.int64)

    def reset(self) -> Any:
        seeds = None if all(s is None for s in self._seeds) else self._seeds
        obs, _ = self.venv.reset(seed=seeds)
        self._reset_seeds()
        self._returns[:] = 0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> Any:
        obs, rewards, terminated, truncated, raw, finals = self.venv._h.step(self.venv._rows(self._actions), same_step=True)
        # Without `columns`, infos come as JSON text (or None when all are empty).
        infos: List[Dict[str, Any]] = json.loads(raw) if isinstance(raw, str) else [{} for _ in range(self.num_envs)]
        dones = terminated | truncated
        self._returns += rewards
        self._lengths += 1
        for i in np.flatnonzero(dones):
            t = round(time.time() - self._started, 6)
            game = infos[i].get("episode")
            if game is not None:
                # The env's own: with episodic_life, the whole game's raw return and length, at its end.
                infos[i]["episode"] = {**game, "t": t}
            elif not self._games:
                infos[i]["episode"] = {"r": round(float(self._returns[i]), 6), "l": int(self._lengths[i]), "t": t}
        self._returns[dones] = 0
        self._lengths[dones] = 0
        if finals is not None:
            final_obs, _ = finals
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = _row(final_obs, i)
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> List[Any]:
        # The envs live in Rust or in env processes: only what the vector env knows is there.
        value = getattr(self.venv, attr_name, None)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"rollway's envs are not Python objects here: {attr_name} cannot be set on them")

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> List[Any]:
        raise AttributeError(f"rollway's envs are not Python objects here: {method_name}() cannot be called on them")

    def env_is_wrapped(self, wrapper_class: Type[Any], indices: Any = None) -> List[bool]:
        return [False for _ in self._indices(indices)]

    def _indices(self, indices: Any) -> Iterable[int]:
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else list(indices)
