"""Gymnasium vector envs as batched env sources: a ``gymnasium.vector.VectorEnv`` steps a block of
rollway's env slots in one call.

**Naming one.** ``env="vec:ID"`` is ``gymnasium.make_vec(ID, num_envs=<the block's envs>,
vectorization_mode="sync", **env_params)``; ``env_params`` may name another
``vectorization_mode`` and ``vector_kwargs`` (``{"autoreset_mode": "SameStep"}``). Any callable
that takes ``num_envs`` and returns a ``VectorEnv`` works too, e.g.
``functools.partial(gymnasium.make_vec, "CartPole-v1", vectorization_mode="async")``: rollway
calls it once per block (a worker's share of the rollout's envs), with that block's size.

**Autoreset, mapped so that episodes are the env's own.** rollway starts each episode itself, in a
round of resets, and steps only envs whose episode goes on:

- a round of resets is ``reset(seed=[…], options={"reset_mask": …})`` over the envs that start
  (an unseeded one: ``None``, which is what the env's own autoreset does), or one ``reset`` of all
  when every env starts;
- ``NEXT_STEP`` and ``DISABLED``: the reset mask clears the env's pending autoreset, so a step is
  never spent on a reset and the recorded final observation is the ending step's own;
- ``SAME_STEP``: the step has already reset an env that ended; its row gets ``final_obs`` (and its
  info ``final_info``), and the reset's observation waits for that slot's next unseeded reset, which
  costs no call. A seeded reset starts the env again from its seed.

The reset mask is Gymnasium's ``SyncVectorEnv`` and ``AsyncVectorEnv`` option. A vector env of its
own class (e.g. ``CartPoleVectorEnv``, what ``make_vec`` gives by default for CartPole) resets all
its envs whatever the mask says, so rollway takes it only in ``SAME_STEP`` mode with unseeded resets
after the first, and otherwise refuses it with the fix: ``vectorization_mode="sync"`` or
``"async"``.

**EnvPool.** EnvPool's Gymnasium vector envs (``envpool.make(ID, env_type="gymnasium",
num_envs=num_envs, seed=...)`` in a factory taking ``num_envs``) run the same way, in NEXT_STEP mode
with masked resets. EnvPool fixes each env's seed when it is made (env i: ``seed + i``) and ignores
a reset's seed, so rollway resets them unseeded: a run is reproducible from the factory's seed, while
an episode's recorded seed does not restart that episode.

**Copies.** The vector env's observations (one numpy array a leaf, ``[n, …]``) are viewed as bytes
where they are already one contiguous array of the space's dtype, and copied once, into the rows;
actions are numpy views of rollway's action rows.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from rollway.batched import IDLE, RESET, RESET_UNSEEDED, STEP, SlotInfos

SAME_STEP, NEXT_STEP, DISABLED = "SameStep", "NextStep", "Disabled"


def is_vector_env(env: Any) -> bool:
    try:
        from gymnasium.vector import VectorEnv
    except ImportError:
        return False
    return isinstance(env, VectorEnv)


def make_vec_of(env_id: str, kwargs: Dict[str, Any]) -> Callable[..., Any]:
    """The factory ``vec:ID`` names: ``make_vec(ID, num_envs=…)``, sync unless ``kwargs`` say."""
    import gymnasium

    return lambda **more: gymnasium.make_vec(env_id, **{"vectorization_mode": "sync", **kwargs, **more})


def _mode(vec: Any) -> str:
    mode = (getattr(vec, "metadata", None) or {}).get("autoreset_mode", NEXT_STEP)
    return str(getattr(mode, "value", mode))


def _masks_resets(vec: Any) -> bool:
    """Whether ``reset(options={"reset_mask": m})`` resets only the envs of ``m`` (Gymnasium's own
    two vector envs and EnvPool's do; another class may reset every env)."""
    from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

    return isinstance(getattr(vec, "unwrapped", vec), (SyncVectorEnv, AsyncVectorEnv)) or isinstance(vec, _EnvPoolVec)


def is_envpool(vec: Any) -> bool:
    """Whether ``vec`` is one of EnvPool's Gymnasium vector envs (``envpool.make(..., env_type="gymnasium")``):
    its spaces are one env's (``observation_space`` is ``single_observation_space``), its seeds are
    fixed by ``envpool.make(seed=...)`` (env i: seed + i) and its ``reset`` ignores seeds."""
    return any(c.__module__.split(".")[0] == "envpool" for c in type(getattr(vec, "unwrapped", vec)).__mro__)


class _EnvPoolVec:
    """One of EnvPool's vector envs as Gymnasium's own are where rollway meets them, so the rest of
    this module has no case of its own for it: the batch's spaces (EnvPool gives one env's), a masked
    reset answered for every env (EnvPool answers for the reset envs only, each named by ``env_id``;
    the others get zeros, which rollway does not read), and no reset seeds (EnvPool's are fixed by
    ``envpool.make``, env i: seed + i; one given would only be warned of and ignored)."""

    def __init__(self, vec: Any, name: str) -> None:
        from gymnasium.vector.utils import batch_space

        n = vec.num_envs
        if getattr(vec, "config", {}).get("batch_size", n) != n:
            raise ValueError(f"{name} made an asynchronous EnvPool (batch_size {vec.config['batch_size']} of num_envs "
                             f"{n}), whose steps answer for some envs only; rollway steps every env of a block a "
                             "call: make it with batch_size=num_envs (EnvPool's default)")
        self.vec, self.num_envs, self.metadata, self.spec = vec, n, getattr(vec, "metadata", None) or {}, None
        self.unwrapped = getattr(vec, "unwrapped", vec)
        self.single_observation_space, self.single_action_space = vec.single_observation_space, vec.single_action_space
        self.observation_space = batch_space(vec.single_observation_space, n)
        self.action_space = batch_space(vec.single_action_space, n)

    def reset(self, *, seed: Any = None, options: Optional[Dict[str, Any]] = None) -> Tuple[Any, Any]:
        obs, info = self.vec.reset(options=options)
        if (options or {}).get("reset_mask") is None:
            return obs, info
        at = np.asarray(info["env_id"])
        return _spread(obs, at, self.num_envs), _spread(info, at, self.num_envs)

    def step(self, actions: Any) -> Tuple[Any, ...]:
        return self.vec.step(actions)

    def close(self) -> None:
        self.vec.close()


class VecSim:
    """A VectorEnv factory (``make(num_envs=n)``) with the spec of the vector env it made first:
    what ``rollway._host.prepare`` hands the hosts (``stepper = "batch"``, as for JAX envs)."""

    stepper = "batch"

    def __init__(self, make: Callable[..., Any], first: Any, name: str) -> None:
        from rollway.spaces import env_spec, to_json

        self.make, self.name = make, name
        first.close()
        # The spec comes from a vector env of one, made as the blocks will be: a factory that
        # ignores num_envs is an input error here, before any env slot starts.
        one = self.sized(1)
        try:
            self.observation_space, self.action_space = _single_spaces(one, name)
            _check_resets(one, name)
            self.spec = env_spec(_SpecView(one, self.observation_space, self.action_space))
        finally:
            one.close()
        self.obs_json, self.act_json = to_json(self.observation_space), to_json(self.action_space)

    def sized(self, n: int) -> Any:
        """The factory's vector env of ``n`` envs; one of another size is an error."""
        vec = make_batch(self.make, n, self.name, "a VectorEnv", "as gymnasium.make_vec does")
        return _EnvPoolVec(vec, self.name) if is_envpool(vec) else vec

    def block(self, n: int) -> "VecBlock":
        return VecBlock(self, self.sized(n), n)

    def close(self) -> None:
        pass


def make_batch(make: Callable[..., Any], n: int, name: str, what: str, like: str) -> Any:
    """``make(num_envs=n)``, a batched env of ``n`` envs (``what`` it is, a factory ``like`` which to
    follow); a factory that takes no ``num_envs`` or makes another number is an error naming the fix."""
    try:
        env = make(num_envs=n)
    except TypeError as e:
        if "num_envs" not in str(e):
            raise
        raise TypeError(f"{name} made {what}; rollway calls its factory with num_envs= (each block's size), which it "
                        f"does not take ({e}): take num_envs, {like}") from None
    if getattr(env, "num_envs", None) != n:
        env.close() if callable(getattr(env, "close", None)) else None
        raise ValueError(f"{name} was asked for {n} envs and made {getattr(env, 'num_envs', None)}: a batched "
                         "env's factory must make exactly num_envs envs")
    return env


class _SpecView:
    """A vector env seen as one of its envs, for ``env_spec``: the single spaces, and the spec
    without the vector's own arguments (so that ``gymnasium.make`` rebuilds one env from it)."""

    def __init__(self, vec: Any, obs: Any, act: Any) -> None:
        self.observation_space, self.action_space = obs, act
        self.unwrapped = getattr(vec, "unwrapped", vec)  # named by its class where it has no spec
        self.metadata = getattr(vec, "metadata", None) or {}
        spec: Any = getattr(vec, "spec", None)
        if isinstance(getattr(spec, "kwargs", None), dict):  # an EnvSpec (a dataclass)
            vector_args = ("num_envs", "vectorization_mode", "vector_kwargs", "wrappers", "max_episode_steps")
            kwargs = {k: v for k, v in spec.kwargs.items() if k not in vector_args}
            # make_vec's own time limit is a make() argument, not the env's.
            limit = spec.kwargs.get("max_episode_steps", spec.max_episode_steps)
            spec = dataclasses.replace(spec, kwargs=kwargs, max_episode_steps=limit)
        self.spec = spec


def _check_resets(vec: Any, name: str) -> None:
    """Refuses a vector env that rollway cannot start envs of one at a time (module docs)."""
    mode = _mode(vec)
    if mode != SAME_STEP and not _masks_resets(vec):
        raise ValueError(
            f"{name} made a {type(vec).__name__}, which resets its envs in {mode} mode and does not reset some of them "
            "alone (options={'reset_mask': ...}); rollway starts each env's episodes itself. Make it with "
            "vectorization_mode='sync' or 'async', or give it autoreset_mode='SameStep'")


def _single_spaces(vec: Any, name: str) -> Tuple[Any, Any]:
    """A vector env's one-env spaces; every env of the batch must share them."""
    from gymnasium.vector.utils import batch_space

    obs, act = getattr(vec, "single_observation_space", None), getattr(vec, "single_action_space", None)
    if obs is None or act is None:
        raise TypeError(f"{name} made a {type(vec).__name__} without single_observation_space / single_action_space")
    n = vec.num_envs
    for what, one, whole in (("observation", obs, vec.observation_space), ("action", act, vec.action_space)):
        if whole != batch_space(one, n):
            raise ValueError(f"{name}: its {what}_space is not {n} copies of its single_{what}_space ({one}): the envs "
                             "of a batch differ in spaces, and rollway records one space for all; give each env the same "
                             "space (group the others into envs of their own)")
    return obs, act


class VecBlock(SlotInfos):
    """n slots of a :class:`VecSim`: one vector env, a round a call (see the module docs)."""

    def __init__(self, sim: VecSim, vec: Any, n: int) -> None:
        from rollway.spaces import RowViews, batch_packer, leaves

        self.vec, self.n, self.name = vec, n, sim.name
        self.mode, self.masks = _mode(vec), _masks_resets(vec)
        self._acts = RowViews(sim.act_json)
        self._pack = batch_packer(sim.obs_json)
        self._row = leaves(sim.obs_json)[1]
        self.started = False  # every env has been reset once
        self.ended: np.ndarray = np.zeros(n, bool)  # the env's episode ended at its last step (its autoreset is due)
        # Ended in the vector env's own eyes: it steps every env, idle slots' too, so an idle env can
        # reach its end unseen by the engine (a run winding down idles the slots it has no episode for).
        self.due: np.ndarray = np.zeros(n, bool)
        self.pending: Optional[np.ndarray] = None  # SAME_STEP: the reset observations the ending steps made
        self._round_infos: Tuple[Any, Any] = ({}, {})

    def round(self, ops: bytes, seeds: bytes, actions: bytes) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray, np.ndarray]:
        """One round, as :meth:`rollway.batched.JaxBlock.round` answers it: the observations (uint8
        ``[rows, bytes]``), the slot of each row (``None``: row i is slot i), the rewards and the flags."""
        op = np.frombuffer(ops, np.uint8)
        resets = (op == RESET) | (op == RESET_UNSEEDED)
        stepping = op == STEP
        if resets.any() and stepping.any():
            return self._step_and_autoreset(op, actions)
        if resets.any():
            return self._reset(op, np.frombuffer(seeds, np.uint64), resets)
        return self._step(stepping, actions, op == IDLE)

    def _reset(self, op: np.ndarray, seeds: np.ndarray, resets: np.ndarray) -> Tuple[Any, ...]:
        rows = np.flatnonzero(resets)
        zeros = np.zeros(self.n)
        out = np.zeros((self.n, self._row), np.uint8)
        # SAME_STEP: the ending steps reset these envs already; their observations wait in `pending`.
        free = (op == RESET_UNSEEDED) & self.ended if self.pending is not None else np.zeros(self.n, bool)
        need = resets & ~free
        if need.any():
            seed_list = [int(s) if o == RESET else None for o, s in zip(op, seeds)]
            masked = not need.all() and self.started
            if not masked:
                # Every env's first reset is one call: a vector env's masked reset needs the others
                # started (Gymnasium's concatenates every env's last observation).
                obs, info = self.vec.reset(seed=seed_list)
                self.started = True
            elif self.masks:
                obs, info = self.vec.reset(seed=seed_list, options={"reset_mask": need.copy()})
            else:
                raise ValueError(f"{self.name}: a {type(self.vec).__name__} cannot reset some of its envs alone "
                                 "(options={'reset_mask': ...}), and these resets are seeded or come before the env's "
                                 "own autoreset; make it with vectorization_mode='sync' or 'async'")
            out[need] = self._bytes(obs)[need]
            self._round_infos = (info, {})
            self.due = self.due & ~need if masked else np.zeros(self.n, bool)
        if free.any():
            assert self.pending is not None
            out[free] = self.pending[free]
        self.ended[rows] = False
        return out[rows], rows, zeros, zeros.astype(np.uint8)

    def _step(self, stepping: np.ndarray, actions: bytes, idle: np.ndarray) -> Tuple[Any, ...]:
        if self.mode == DISABLED and (idle & self.due).any():
            # A disabled-autoreset env must not step past its end: an idle slot's env restarts first.
            self.vec.reset(options={"reset_mask": idle & self.due})
            self.ended &= ~idle
            self.due &= ~idle
        act = self._acts.view(actions, self.n)
        obs, reward, term, trunc, info = self.vec.step(act)
        self.due = np.asarray(term, bool) | np.asarray(trunc, bool)
        done = self.due & stepping
        out = self._bytes(obs)
        final: Dict[str, Any] = {}
        if self.mode == SAME_STEP and done.any():
            self.pending = out.copy() if self.pending is None else np.where(done[:, None], out, self.pending)
            out = np.where(done[:, None], self._bytes(_filled(info["final_obs"], done)), out)
            final = info.get("final_info", {})
        self.ended = np.where(stepping, done, self.ended)
        self._round_infos = (info, final)
        flags = (np.asarray(term, np.uint8) & stepping) | ((np.asarray(trunc, np.uint8) & stepping) << 1)
        return out, None, np.where(stepping, np.asarray(reward, np.float64), 0.0), flags.astype(np.uint8)

    def _step_and_autoreset(self, op: np.ndarray, actions: bytes) -> Tuple[Any, ...]:
        """A round that steps some envs and starts others, unseeded, just after their ends (rollway's own
        ``make_vec`` asks so): in NEXT_STEP mode that is the env's own next step."""
        starting = (op == RESET) | (op == RESET_UNSEEDED)
        if self.mode != NEXT_STEP or (op[starting] != RESET_UNSEEDED).any() or not self.ended[starting].all():
            raise ValueError(f"{self.name}: a round both steps envs and starts others, which a {self.mode} vector env "
                             "can do only for unseeded starts after ends, in NextStep mode")
        out, _, reward, flags = self._step(op == STEP, actions, op == IDLE)
        self.ended[starting] = False
        return out, None, reward, flags

    def _bytes(self, obs: Any) -> np.ndarray:
        """Observations of every env as uint8 rows ``[n, bytes]``, packed as rollway lays them out."""
        return np.frombuffer(self._pack(obs, self.n), np.uint8).reshape(self.n, -1)

    def info(self, slot: int) -> str:
        """The latest call's info of ``slot`` as JSON (SAME_STEP, an ended env: its ``final_info``)."""
        from rollway.spaces import dump_info

        info, final = self._round_infos
        source = final if self.ended[slot] and self.mode == SAME_STEP and final else info
        return dump_info(_slot_info(source, slot))

    def close(self) -> None:
        self.vec.close()


def _spread(x: Any, at: np.ndarray, n: int) -> Any:
    """Values for the envs ``at`` only (row k is env ``at[k]``'s; arrays, or dicts of them), laid out
    for all ``n`` envs, zeros elsewhere."""
    if isinstance(x, dict):
        return {k: _spread(v, at, n) for k, v in x.items()}
    if isinstance(x, np.ndarray) and x.ndim and len(x) == len(at):
        out = np.zeros((n, *x.shape[1:]), x.dtype)
        out[at] = x
        return out
    return x


def _filled(final: Any, done: np.ndarray) -> Any:
    """SAME_STEP's ``final_obs`` with every env's row filled: an object array (what Gymnasium
    makes of observations that are not one array) holds ``None`` where an env did not end."""
    if isinstance(final, np.ndarray) and final.dtype == object:
        some = final[np.flatnonzero(done)[0]]
        return np.stack([final[i] if done[i] else np.zeros_like(some) for i in range(len(final))])
    return final


def _slot_info(info: Dict[str, Any], slot: int) -> Dict[str, Any]:
    """One env's info out of Gymnasium's vector layout (``key`` → values by env, ``_key`` → which
    envs set it; a dict value, such as ``episode``, laid out the same one level down)."""
    out: Dict[str, Any] = {}
    for k, v in info.items():
        if k.startswith("_") or k in ("final_obs", "final_info"):
            continue
        mask = info.get("_" + k)
        if mask is not None and not bool(np.asarray(mask)[slot]):
            continue
        out[k] = _slot_info(v, slot) if isinstance(v, dict) else _item(np.asarray(v)[slot] if _indexable(v) else v)
    return out


def _indexable(v: Any) -> bool:
    return isinstance(v, (np.ndarray, list, tuple))


def _item(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0) else v


