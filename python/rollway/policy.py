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
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from rollway.spaces import batch_packer, leaves


class Adapter:
    """Turns the run's packed rows into numpy arrays for ``fn`` and its answer back
    into packed action rows (used by the Rust agent; not called by users)."""

    def __init__(self, fn: Callable[..., Any], obs_json: str, act_json: str):
        self.fn = fn
        self.obs, self.obs_row = leaves(obs_json)
        # One unpadded leaf: the batch's rows are that leaf's array as is.
        self.obs_single = len(self.obs) == 1 and self.obs[0].path == "" and self.obs[0].nbytes == self.obs_row
        self._pack = batch_packer(act_json, strict_as="the policy returned actions")
        # A Tuple action space's actions are a tuple too: then a 2-tuple carries a
        # state only if its first item is itself the actions' tuple (or dict).
        self.act_tuple = json.loads(act_json).get("type") == "Tuple"

    def _obs(self, buf: bytearray, n: int) -> Any:
        if self.obs_single:
            leaf = self.obs[0]
            return np.frombuffer(buf, dtype=leaf.dtype).reshape((n, *leaf.shape))
        arrays: Dict[str, np.ndarray] = {}
        for leaf in self.obs:
            strides = (self.obs_row, *np.empty(leaf.shape, leaf.dtype).strides)
            arrays[leaf.path] = np.ndarray((n, *leaf.shape), dtype=leaf.dtype, buffer=buf, offset=leaf.offset, strides=strides)
        return arrays

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
    """What runs record for a Python callable (a policy, or an env factory)."""
    return "python:" + (getattr(fn, "__qualname__", None) or type(fn).__name__)
