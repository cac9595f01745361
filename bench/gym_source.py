"""CleanRL's collection loop over a Gymnasium vector env (or EnvPool), as a fragment source for
the PPO benches (bench/ppo_cartpole.py, bench/ppo_pixels.py).

Per step: the policy's forward on all N observations, ``envs.step``, the results written
into preallocated time-major buffers, exactly the fields ``rollway.Fragment`` has (a Dict
observation as one buffer per leaf). ``SyncVectorEnv`` / ``AsyncVectorEnv`` run with
same-step autoreset (CleanRL's gymnasium 0.29 semantics, which rollway's fragments follow
too). EnvPool resets an env on the step after its episode ended, so each episode adds one
transition whose action is ignored; like CleanRL's EnvPool scripts, the loop keeps it
(``first`` marks the step after an end).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional

import numpy as np


def _buffers(obs: Any, rows: int) -> Any:
    """Zeroed ``[rows, *shape]`` buffers like ``obs`` (a dict of them for a Dict space)."""
    if isinstance(obs, dict):
        return {k: _buffers(v, rows) for k, v in obs.items()}
    return np.zeros((rows, *obs.shape), obs.dtype if obs.dtype != np.float64 else np.float32)


def _put(buf: Any, t: int, obs: Any) -> None:
    if isinstance(buf, dict):
        for k in buf:
            buf[k][t] = obs[k]
    else:
        buf[t] = obs


class GymSource:
    """``kind`` is ``sync``, ``async`` (Gymnasium), ``envpool`` or ``ale`` (ale-py's ``AtariVectorEnv``,
    EnvPool's C++ Atari engine inside ale-py, its preprocessing the same); ``make`` builds one env
    (default ``gym.make(env_id)``), ``env_id`` names EnvPool's (``ale``: ``Pong-v5`` plays ``pong``)."""

    def __init__(self, kind: str, acting: Any, envs: int, steps: int, seed: int, env_id: str = "CartPole-v1",
                 make: Optional[Callable[[], Any]] = None, envpool_kwargs: Optional[Dict[str, Any]] = None,
                 ale_kwargs: Optional[Dict[str, Any]] = None):
        import gymnasium as gym

        if kind == "envpool":
            import envpool

            self.vec = envpool.make(env_id, env_type="gymnasium", num_envs=envs, seed=seed, **(envpool_kwargs or {}))
            self.obs, _ = self.vec.reset()
        elif kind == "ale":
            from ale_py.vector_env import AtariVectorEnv

            # Next-step autoreset, as EnvPool's: the loop below keeps the ignored transition as it does for EnvPool.
            self.vec = AtariVectorEnv(env_id.split("-")[0].lower(), num_envs=envs, **(ale_kwargs or {}))
            self.obs, _ = self.vec.reset(seed=seed)
        else:
            fns = [make or (lambda: gym.make(env_id)) for _ in range(envs)]
            cls = gym.vector.SyncVectorEnv if kind == "sync" else gym.vector.AsyncVectorEnv
            self.vec = cls(fns, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
            self.obs, _ = self.vec.reset(seed=seed)
        self.acting, self.steps, self.n = acting, steps, envs
        self.first = np.ones(envs, dtype=bool)
        self.ret = np.zeros(envs)

    def collect(self) -> SimpleNamespace:
        t_len, n = self.steps, self.n
        obs = _buffers(self.obs, t_len + 1)
        first = np.zeros((t_len + 1, n), bool)
        rewards = np.zeros((t_len, n), np.float32)
        term, trunc = np.zeros((t_len, n), bool), np.zeros((t_len, n), bool)
        actions: Any = None
        extras: Dict[str, np.ndarray] = {}
        finished: List[float] = []
        policy_s = 0.0
        for t in range(t_len):
            _put(obs, t, self.obs)
            first[t] = self.first
            t0 = time.perf_counter()
            out: Dict[str, Any] = self.acting(self.obs, self.first, None)
            policy_s += time.perf_counter() - t0
            if actions is None:  # shaped by the first answer: discrete or Box actions, any extras the policy keeps
                a = np.asarray(out["actions"])
                actions = np.zeros((t_len, *a.shape), a.dtype)
                extras = {k: np.zeros((t_len, *np.shape(v)), np.float32) for k, v in out.items() if k != "actions"}
            actions[t] = out["actions"]
            for k, buf in extras.items():
                buf[t] = out[k]
            self.obs, r, term[t], trunc[t], _ = self.vec.step(actions[t])
            rewards[t] = r
            self.ret += r
            self.first = term[t] | trunc[t]
            finished.extend(self.ret[self.first].tolist())
            self.ret[self.first] = 0.0
        _put(obs, t_len, self.obs)
        first[t_len] = self.first
        return SimpleNamespace(steps=t_len, envs=n, obs=obs, first=first, actions=actions, rewards=rewards,
                               terminated=term, truncated=trunc, extras=extras,
                               finished={"return": np.array(finished)}, stats={"policy_s": policy_s})

    def publish(self, weights: Any = None) -> int:
        return 0

    def close(self) -> None:
        self.vec.close()


def atari_preprocessed(game: str) -> Any:
    """``ALE/<game>`` in Gymnasium's standard Atari wrappers (no-ops, frame skip 4 with max-pool,
    84×84 gray by OpenCV, a stack of 4), rewards clipped to their sign: CleanRL's ``ppo_atari`` env."""
    import ale_py
    import gymnasium as gym
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformReward

    gym.register_envs(ale_py)
    env = FrameStackObservation(AtariPreprocessing(gym.make(f"ALE/{game}", frameskip=1)), 4)
    return TransformReward(env, lambda r: float(np.sign(r)))
