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

**Sampling policies: same seed, same dataset.** Which episodes share a batch depends on
the workers, the mode and timing, so a policy that samples from its own generator (or
torch's) records different actions on every run. A policy decorated with
:func:`draws` is called with a fourth argument instead, ``uniform``: ``float64[n, k]``
in ``[0, 1)``, drawn from each episode's own random stream, the one a built-in agent
samples from, so the same episode sees the same numbers at the same step whatever the
batch. Sampling from them gives the same dataset for the same seed at any worker
count::

    @rollway.policy.draws(1)
    @torch.no_grad()
    def policy(obs, first, state, uniform):
        probs = model(torch.from_numpy(obs)).softmax(-1)
        u = torch.from_numpy(uniform).to(probs.dtype)                  # [n, 1]
        return (probs.cumsum(-1) < u).sum(-1).clamp(max=probs.shape[-1] - 1).numpy()

(A training rollout calls its policy on the same N envs every step, so a seeded torch
generator is deterministic there already; :class:`rollway.Rollout` refuses ``draws``.)
"""

from __future__ import annotations

import json
from typing import Any, Callable, List, Optional, Tuple, TypeVar

import numpy as np

from rollway.spaces import RowViews, batch_packer


F = TypeVar("F", bound=Callable[..., Any])


def draws(k: int) -> Callable[[F], F]:
    """Marks a policy as one that samples: ``rollway.run`` calls it as
    ``policy(obs, first, state, uniform)`` with ``uniform`` of shape ``(n, k)``, ``k``
    numbers in ``[0, 1)`` a row, drawn from each episode's own random stream (see the
    module docs: the same seed gives the same dataset at any worker count)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"draws({k!r}): the numbers a row takes per step, an int of at least 1")

    def mark(fn: F) -> F:
        fn.rollway_draws = k  # type: ignore[attr-defined]
        return fn

    return mark


class Adapter:
    """Turns the run's packed rows into numpy arrays for ``fn`` and its answer back
    into packed action rows (used by the Rust agent; not called by users)."""

    def __init__(self, fn: Callable[..., Any], obs_json: str, act_json: str, agents: Optional[List[str]] = None):
        self.fn = fn
        # Uniform numbers a row per call (rollway.policy.draws), drawn by the Rust agent.
        self.draws = int(getattr(fn, "rollway_draws", 0))
        self.obs = RowViews(obs_json)
        self._pack = batch_packer(act_json, strict_as="the policy returned actions", hint=agent_rows_hint(agents))
        # A Tuple action space's actions are a tuple too: then a 2-tuple carries a
        # state only if its first item is itself the actions' tuple (or dict).
        self.act_tuple = json.loads(act_json).get("type") == "Tuple"
        # A Dict action space's actions are a dict: a dict answer without "actions" is them.
        self.act_dict_space = json.loads(act_json).get("type") == "Dict"

    def _state(self, s: Any, n: int) -> Optional[Tuple[bytes, int]]:
        s = np.ascontiguousarray(_numpy(s), dtype=np.float32)
        if s.ndim != 2 or s.shape[0] != n:
            raise ValueError(f"the policy returned a state of shape {s.shape}; it must be (n, d) with n = {n}")
        return s.tobytes(), int(s.shape[1])

    def _call(self, obs: bytearray, first: bytearray, state: bytearray, n: int, d: int, uniform: Optional[bytearray] = None) -> Any:
        st = np.frombuffer(state, dtype=np.float32).reshape(n, d)
        if self.draws:
            u = np.frombuffer(uniform, dtype=np.float64).reshape(n, self.draws)  # type: ignore[arg-type]
            return self.fn(self.obs.view(obs, n), np.frombuffer(first, dtype=np.bool_), st, u)
        return self.fn(self.obs.view(obs, n), np.frombuffer(first, dtype=np.bool_), st)

    def _split(self, out: Any, n: int) -> Tuple[bytes, Optional[Tuple[bytes, int]]]:
        new_state = None
        if isinstance(out, tuple) and len(out) == 2 and (not self.act_tuple or isinstance(out[0], (tuple, list, dict))):
            out, s = out
            new_state = self._state(s, n)
        return self._pack(_numpy(out), n), new_state

    def __call__(self, obs: bytearray, first: bytearray, state: bytearray, n: int, d: int,
                 uniform: Optional[bytearray] = None) -> Tuple[bytes, Optional[Tuple[bytes, int]]]:
        return self._split(self._call(obs, first, state, n, d, uniform), n)

    def rollout(self, obs: bytearray, first: bytearray, state: bytearray, n: int, d: int) -> Tuple[bytes, Optional[Tuple[bytes, int]], List[Tuple[str, bytes, List[int]]]]:
        """A rollout's call: the answer may also be a dict with ``"actions"``, an
        optional ``"state"`` and any other keys as per-step extras (float32)."""
        out = self._call(obs, first, state, n, d)
        if not isinstance(out, dict) or ("actions" not in out and self.act_dict_space):
            return (*self._split(out, n), [])
        if "actions" not in out:
            raise ValueError(f"the policy returned a dict without 'actions' (keys: {sorted(out)}); "
                             "a rollout policy returns actions, (actions, state), or {'actions': ..., 'state': ..., extras...}")
        extras = []
        for name, v in out.items():
            if name in ("actions", "state"):
                continue
            a = np.ascontiguousarray(_numpy(v), dtype=np.float32)
            if a.ndim == 0 or a.shape[0] != n:
                raise ValueError(f"the policy's extra {name!r} has shape {a.shape}; it must be (n, ...) with n = {n}")
            extras.append((str(name), a.tobytes(), list(a.shape[1:])))
        new_state = out.get("state")
        return self._pack(_numpy(out["actions"]), n), None if new_state is None else self._state(new_state, n), extras

    def load(self, weights: Any) -> None:
        """Loads a published version's weights (the rollout's thread, between batches)."""
        self.fn.load(weights)  # type: ignore[attr-defined]  # rollout.publish checked it has one


def agent_rows_hint(agents: Optional[List[str]]) -> str:
    """What a multi-agent env's action rows are, for a wrong-shape error (empty for one agent)."""
    if not agents:
        return ""
    named = ", ".join(repr(a) for a in agents[:6]) + (f", … {agents[-1]!r}" if len(agents) > 6 else "")
    return (f" (n envs × {len(agents)} agents: {named}): return an action for every possible agent, in this order; "
            "the rows of agents that are not live are ignored")


def _numpy(v: Any) -> Any:
    # Torch tensors (any device, with or without grad) become numpy arrays; the rest as is.
    # A numpy array is let through first: a failed hasattr raises inside (~0.3 µs a round).
    if type(v) is np.ndarray:
        return v
    if hasattr(v, "detach") and hasattr(v, "cpu"):
        return v.detach().cpu().numpy()
    return v


def name_of(fn: Callable[..., Any]) -> str:
    """What runs record for a Python callable (a policy, or an env factory)."""
    return "python:" + (getattr(fn, "__qualname__", None) or type(fn).__name__)
