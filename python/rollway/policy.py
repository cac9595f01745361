"""Python policies on rollway's central batch: ``rollway.run(agent=policy)``.

A policy is any callable ``policy(obs, first, state)`` called once per batch on
the run's central stage (the GIL is taken for the call only):

- ``obs``: the batch's observations, an array of shape ``(n, *space.shape)`` (a
  dict of such arrays by leaf path for Dict/Tuple spaces, e.g. ``"pos"``,
  ``"t/_index_0"``); a fresh, writable array the policy may keep;
- ``first``: ``bool[n]``, True where the observation starts an episode;
- ``state``: ``float32[n, d]``, each env's recurrent state (zeros at an episode's
  first step; ``d`` is 0 until the policy returns a state).

It returns the actions, an array-like of shape ``(n, *action_space.shape)`` (a
dict for Dict/Tuple action spaces), or ``(actions, new_state)`` with ``new_state``
of shape ``(n, d)``; states are recorded as the dataset's ``agent_state``.
A torch module needs two lines::

    @torch.no_grad()
    def policy(obs, first, state):
        return model(torch.from_numpy(obs)).argmax(-1).numpy()

Batch sizes follow the run's ``batch=(min, max)`` and ``max_wait`` settings, as for
the built-in agents. An exception fails the batch's episodes' attempts (they are
retried from their seeds), like a failing built-in agent.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rollway import _rollway


Leaf = Tuple[str, np.dtype, Tuple[int, ...], int, int]


def _leaves(space_json: str) -> Tuple[List[Leaf], int, bool]:
    """(path, dtype, shape, offset, bytes) per leaf, the row size, and whether the
    row is one unpadded leaf (then arrays map to rows one to one)."""
    leaves, row = _rollway.layout(space_json)
    out, at = [], 0
    for path, dtype, shape, nbytes in leaves:
        out.append((path, np.dtype(dtype), tuple(shape), at, nbytes))
        at += nbytes + (-nbytes) % 8
    single = len(out) == 1 and out[0][0] == "" and out[0][4] == row
    return out, row, single


def _get(value: Any, path: str) -> Any:
    for part in path.split("/") if path else []:
        value = value[int(part[len("_index_"):])] if part.startswith("_index_") else value[part]
    return value


class Adapter:
    """Turns the run's packed rows into numpy arrays for ``fn`` and its answer back
    into packed action rows (used by the Rust agent; not called by users)."""

    def __init__(self, fn: Callable[..., Any], obs_json: str, act_json: str):
        self.fn = fn
        self.obs, self.obs_row, self.obs_single = _leaves(obs_json)
        self.act, self.act_row, self.act_single = _leaves(act_json)
        # A Tuple action space's actions are a tuple too: then a 2-tuple carries a
        # state only if its first item is itself the actions' tuple (or dict).
        self.act_tuple = json.loads(act_json).get("type") == "Tuple"

    def _obs(self, buf: bytearray, n: int) -> Any:
        if self.obs_single:
            _, dt, shape, _, _ = self.obs[0]
            return np.frombuffer(buf, dtype=dt).reshape((n, *shape))
        arrays: Dict[str, np.ndarray] = {}
        for path, dt, shape, off, _ in self.obs:
            strides = (self.obs_row, *np.empty(shape, dt).strides)
            arrays[path] = np.ndarray((n, *shape), dtype=dt, buffer=buf, offset=off, strides=strides)
        return arrays

    def _pack(self, actions: Any, n: int) -> bytes:
        if self.act_single:
            return self._leaf(actions, n, self.act[0]).tobytes()
        rows = np.zeros((n, self.act_row), dtype=np.uint8)
        for leaf in self.act:
            off, nbytes = leaf[3], leaf[4]
            rows[:, off:off + nbytes] = self._leaf(_get(actions, leaf[0]), n, leaf).reshape(n, -1).view(np.uint8)
        return rows.tobytes()

    @staticmethod
    def _leaf(a: Any, n: int, leaf: Leaf) -> np.ndarray:
        path, dt, shape = leaf[0], leaf[1], leaf[2]
        a = np.ascontiguousarray(a, dtype=dt)
        if a.shape != (n, *shape):
            raise ValueError(f"the policy returned actions{'[' + repr(path) + ']' if path else ''} of shape {a.shape}; "
                             f"the batch needs {(n, *shape)}")
        return a

    def __call__(self, obs: bytearray, first: bytearray, state: bytearray, n: int, d: int) -> Tuple[bytes, Optional[Tuple[bytes, int]]]:
        st = np.frombuffer(state, dtype=np.float32).reshape(n, d)
        out = self.fn(self._obs(obs, n), np.frombuffer(first, dtype=np.bool_), st)
        new_state = None
        if isinstance(out, tuple) and len(out) == 2 and (not self.act_tuple or isinstance(out[0], (tuple, list, dict))):
            out, s = out
            s = np.ascontiguousarray(s, dtype=np.float32)
            if s.ndim != 2 or s.shape[0] != n:
                raise ValueError(f"the policy returned a state of shape {s.shape}; it must be (n, d) with n = {n}")
            new_state = (s.tobytes(), int(s.shape[1]))
        return self._pack(out, n), new_state


def name_of(fn: Callable[..., Any]) -> str:
    """What runs record for a Python policy."""
    return "python:" + (getattr(fn, "__qualname__", None) or type(fn).__name__)
