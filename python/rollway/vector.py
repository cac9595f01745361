"""``rollway.make_vec``: rollway's envs (its Rust envs, and ``gym:``, ``atari:`` and
``module:callable`` ids hosted in Python) as a ``gymnasium.vector.VectorEnv``."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import batch_space

from rollway import _rollway
from rollway.spaces import RowError, batch_packer, from_json


# A JSON info value back as the value the env made, where JSON keeps no type (see INFO_TYPES).
Typer = Callable[[Any], Any]


def _vector_infos(raw: Union[str, Dict[str, Any], None], types: Dict[str, Typer]) -> Dict[str, Any]:
    # Gymnasium's vector info layout: key → array over envs, "_key" → which envs set it. Flat
    # infos come laid out already (the handle's columns); the rest as JSON text.
    if raw is None:
        return {}
    if isinstance(raw, dict):
        for key, typed in types.items():
            if key in raw:
                raw[key] = _typed(raw[key], raw["_" + key], typed)
        return raw
    return _batched(json.loads(raw), types)


def _batched(infos: List[Dict[str, Any]], types: Dict[str, Typer]) -> Dict[str, Any]:
    """Per-env info dicts in Gymnasium's vector layout; a dict value (``episode``: ``r``, ``l``)
    is batched the same way, one level down, as Gymnasium's vector envs do. ``types`` turns the
    values of some keys back into what the env made (``reward_ctrl``: a numpy float32)."""
    out: Dict[str, Any] = {}
    for key in sorted({k for i in infos for k in i}):
        vals = [i.get(key) for i in infos]
        mask = np.array([key in i for i in infos])
        if all(isinstance(v, dict) for v, m in zip(vals, mask) if m):
            out[key] = _batched([i.get(key) or {} for i in infos], {})
        else:
            typed = types.get(key)
            column = _column(vals, mask)
            out[key] = column if typed is None else _typed(column, mask, typed)
        out["_" + key] = mask
    return out


def _numpy_type(typed: Typer) -> Optional[type]:
    """``typed`` when it is a numpy scalar type (``np.float32``), which applies to a whole array."""
    return typed if isinstance(typed, type) and issubclass(typed, np.generic) else None


def _typed(column: np.ndarray, mask: np.ndarray, typed: Typer) -> np.ndarray:
    """An info column with ``typed`` given back: a numpy scalar type (``np.float32``) as the
    column's dtype, in one conversion; any other value by value (where ``mask`` says an env
    has one), then laid out again by :func:`_column`."""
    dtype = _numpy_type(typed)
    if dtype is not None:
        return column.astype(dtype)
    return _column([typed(v) if m else None for v, m in zip(column.tolist(), mask)], mask)


def _column(vals: List[Any], mask: np.ndarray) -> np.ndarray:
    """One info key over the envs, laid out by the rule of Gymnasium's ``VectorEnv._add_info``:
    zeros of the first value's type where an env has no value (bool, int64, float64, a numpy
    scalar's dtype; a list stands for the numpy array JSON made of it), else an object array
    with ``None`` where missing."""
    first = next(v for v, m in zip(vals, mask) if m)
    out: Optional[np.ndarray] = None
    if type(first) in (int, float, bool) or isinstance(first, np.number):
        if mask.all() and all(type(v) is type(first) for v in vals):
            return np.array(vals, dtype=type(first))  # the common case, in one conversion
        out = np.zeros(len(vals), dtype=type(first))
    elif isinstance(first, list):
        try:
            sample = np.asarray(first)
        except ValueError:  # ragged
            sample = np.asarray(None)
        if sample.dtype != object:
            out = np.zeros((len(vals), *sample.shape), sample.dtype)
    if out is None:
        out = np.full(len(vals), None, dtype=object)
    for i, (v, m) in enumerate(zip(vals, mask)):
        if m:
            out[i] = v
    return out


class VectorEnv(gym.vector.VectorEnv):
    """N rollway envs of one id, stepped in Rust: a drop-in ``gymnasium.vector.VectorEnv``.

    An id a Python process hosts (``gym:ID``, ``atari:GAME``, ``module:callable``) is stepped
    as a rollout steps it: in this thread (``host="inline"``) or in ``workers`` env processes
    at once (``host="process"``); ``"auto"`` is inline with one worker, except for the
    MuJoCo tasks rollway steps (``gym:HalfCheetah-v5``, …), which step without the GIL on a
    thread per core in this process, as in a rollout. ``workers`` defaults to one, and for
    ``atari:`` ids to one process per core. Every step reads each env's info (Gymnasium's
    vector layout), as a vector env returns them.

    Same semantics as ``gymnasium.make_vec(id, N, vectorization_mode="sync")``:
    ``reset(seed=s)`` seeds env i with ``s + i`` (or takes a list of seeds) and gives the
    same observations bit for bit for the classic-control envs; autoreset is
    Gymnasium's default next-step mode (the step after an episode ends returns the
    reset observation, reward 0, both flags false); infos use Gymnasium's vector
    layout (``key``/``_key`` arrays). Observations and flags are fresh arrays each step.

    Actions are taken as Gymnasium's vector envs take them: of the batch's shapes; a Box action
    outside its bounds reaches the env unchanged; a Discrete action that is not a whole number is
    refused. Each mistake (shapes, values, ``step()`` before ``reset()``) is a
    :class:`rollway.InputError`, which is a ``ValueError``.
    """

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, env_id: str, num_envs: int, *, threads: int = 1, workers: Optional[int] = None,
                 host: str = "auto", **env_params: Any):
        from rollway._run import _refuse_env_instance

        _refuse_env_instance(env_id, "make_vec", 'an id: `"gym:ID"` (gymnasium.make\'s keyword arguments as keywords), '
                             '`"atari:GAME"`, `"module:callable"` or a built-in env')
        if not isinstance(env_id, str):
            raise _rollway.InputError(f"make_vec takes an env id (a str), not {type(env_id).__name__}: `\"gym:ID\"`, "
                                      "`\"atari:GAME\"`, `\"module:callable\"` or a built-in env (rollway.envs())")
        params = [(str(k), str(v).lower() if isinstance(v, bool) else str(v)) for k, v in env_params.items()]
        if ":" in env_id:
            self._h = _rollway.VecEnvHandle.hosted(env_id, int(num_envs), params, workers, host, sys.executable)
        else:
            self._h = _rollway.VecEnvHandle(env_id, int(num_envs), params, int(threads))
        obs_json, act_json, limit = self._h.spec()
        self.num_envs = int(num_envs)
        self.single_observation_space = from_json(obs_json)
        self.single_action_space = from_json(act_json)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.spec = None
        self.env_id, self.max_episode_steps = env_id, limit
        # Actions of the batch's shapes, converted without loss (a Discrete action of 0.6 is refused, as
        # Gymnasium's space refuses it); the handle checks their values as a rollout checks its policy's.
        self._pack = batch_packer(act_json, strict_as="actions")
        self._reset_done = False
        self._info_types = _info_types(env_id)

    def reset(self, *, seed: Union[int, Sequence[Optional[int]], None] = None,
              options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
        if seed is None:
            seeds: List[Optional[int]] = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = [None if s is None else int(s) for s in seed]
        obs, infos = self._h.reset(seeds, json.dumps(options) if options else None)
        self._reset_done = True
        return obs, _vector_infos(infos, self._info_types)

    def step(self, actions: Any) -> Tuple[Any, np.ndarray, np.ndarray, np.ndarray, Dict[str, Any]]:
        if not self._reset_done:
            raise _rollway.InputError("step() before reset(): call reset() first, as for any Gymnasium vector env")
        obs, rew, term, trunc, infos, _ = self._h.step(self._rows(actions), columns=True)
        return obs, rew, term, trunc, _vector_infos(infos, self._info_types)

    def _rows(self, actions: Any) -> bytes:
        """The batch of actions as the handle's action rows; a value that does not convert names its env."""
        try:
            return self._pack(actions, self.num_envs)
        except RowError as e:
            raise _rollway.InputError(f"the action of env {e.row}: {e}") from None

    def close_extras(self, **kwargs: Any) -> None:
        # The handle's env processes (hosted ids) stop when it is dropped.
        self.__dict__.pop("_h", None)


def _info_types(env_id: str) -> Dict[str, Typer]:
    """The info keys of ``env_id`` whose values JSON does not give back as the env made them."""
    from rollway import _atari, _mujoco

    kind = env_id.partition(":")[0]
    return _atari.INFO_TYPES if kind == "atari" else _mujoco.info_types(env_id)


def make_vec(env_id: str, num_envs: int = 1, *, threads: int = 1, workers: Optional[int] = None, host: str = "auto",
             **env_params: Any) -> VectorEnv:
    """``env_id`` × ``num_envs`` as a Gymnasium vector env: a built-in env (``rollway.envs()``),
    ``gym:ID``, ``atari:GAME`` (Atari with the standard preprocessing, as
    ``gymnasium.make_vec`` of ``AtariPreprocessing`` + ``FrameStackObservation`` gives it) or
    ``module:callable``.

    ``threads`` > 1 steps slices of a built-in env's copies on that many threads (worth it
    for large ``num_envs`` or costly envs); ``workers`` is the env processes a hosted id's
    envs are split over (default one, and one per core for ``atari:``), ``host`` where they
    step (``"inline"``, ``"process"`` or ``"auto"``, as :class:`rollway.Rollout`'s);
    ``env_params`` are the env's parameters (``rollway envs``; for ``gym:`` ids
    ``gymnasium.make``'s keyword arguments).
    """
    return VectorEnv(env_id, num_envs, threads=threads, workers=workers, host=host, **env_params)
