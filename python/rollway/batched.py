"""Batched simulators: envs that step a whole block of copies in one call.

The JAX envs of the gymnax interface (``reset(key, params)``, ``step(key, state, action, params)``)
are the first kind: gymnax's envs (``env="gymnax:CartPole-v1"``, ``gymnax:Breakout-MinAtar``, …) and
Craftax (``env="craftax:Craftax-Classic-Symbolic-v1"``, ``craftax:Craftax-Symbolic-v1``, …).
``env_params`` replace fields of the env's own params (``max_steps_in_episode=200``,
``max_timesteps=1000``), except ``pixels``: ``"uint8"`` gives an env's [0, 1] float images
(Craftax's pixel variants) as uint8 frames, ``round(x × 255)``, which rollway records as video.

**How a block steps.** A block of n env slots (a worker's share of the rollout's envs) is one state
pytree with n rows. A round that steps every slot is one jitted, vmapped ``step_env`` over the
block; a round of resets resets only the slots that start an episode (a Craftax world costs ~40
steps to make), in a batch padded to a power of two so that few shapes are compiled; a round where
only some slots step steps them all and puts the others' state back. The state is
donated to each call (updated in place), and every state and observation leaves a jitted call
strongly typed (:func:`strong`): the env's own ``reset`` makes some leaves weakly typed (Python
scalars) that its ``step`` then makes strong, and jit compiles a function again for each; a Craftax
step is ~10 s of XLA, twice. rollway writes the observations into its rows straight
from the call's output: one copy a step, from JAX's buffer into the rows (``np.asarray`` of a CPU
array shares its memory).

**Keys: an episode is reproducible from its seed and equals the env's own loop.** Each slot has its
own key stream:

- a reset with seed ``s`` starts the stream at :func:`key_of` ``(s)`` (``jax.random.PRNGKey(s)``
  for seeds below 2³²), then ``key, k = split(key)`` and ``env.reset(k, params)``;
- each step: ``key, k = split(key)``, then exactly gymnax's auto-resetting step: ``k_step, k_reset =
  split(k)``, ``step_env(k_step, ...)``, and ``reset_env(k_reset, ...)``, which is the next episode's
  start where this one ended. rollway's next reset of that slot without a seed takes it, as the env's
  own loop goes on; a reset with a seed starts the slot anew from that seed.

So the final observation of an episode is the step's own (gymnax's ``step`` hands back the next
episode's first instead), and terminated and truncated are kept apart: gymnax's ``is_truncated``
(its time limit); for Craftax, whose ``step`` reports one ``done``, an end at ``max_timesteps``
with the player alive is a truncation.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

# The ops of a round, by slot, as rollway's env blocks send them (rollway_host::shm's codes).
IDLE, STEP, RESET, RESET_UNSEEDED = 0, 1, 2, 3
KINDS = ("gymnax", "craftax")


def key_of(seed: Any) -> np.ndarray:
    """The JAX key (a legacy ``uint32[2]`` threefry key) that a reset with ``seed`` starts from:
    ``jax.random.PRNGKey(seed)`` for seeds below 2³² (and for any seed with ``jax_enable_x64``).
    An array of seeds gives their keys, ``[..., 2]``."""
    s = np.asarray(seed, np.uint64)
    return np.stack([(s >> np.uint64(32)).astype(np.uint32), (s & np.uint64(0xFFFFFFFF)).astype(np.uint32)], -1)


def _jax() -> Any:
    try:
        import jax
    except ImportError as e:
        raise ImportError(f"JAX envs need jax, which is not installed here ({e}): pip install jax") from None
    return jax


def make_sim(kind: str, name: str, params: Dict[str, Any]) -> Tuple[Any, Any]:
    """``(env, env_params)`` for ``kind:name``, the env's own params with ``params`` replaced."""
    _jax()
    if kind == "gymnax":
        try:
            import gymnax
        except ImportError as e:
            raise ImportError(f"gymnax:{name} needs gymnax ({e}): pip install gymnax") from None
        env, env_params = gymnax.make(name)
    elif kind == "craftax":
        try:
            from craftax.craftax_env import make_craftax_env_from_name
        except ImportError as e:
            raise ImportError(f"craftax:{name} needs craftax ({e}): pip install craftax") from None
        env = make_craftax_env_from_name(name, auto_reset=False)
        env_params = env.default_params
    else:
        raise ValueError(f"{kind}:{name}: batched env kinds are {', '.join(KINDS)}")
    fields = set(getattr(env_params, "__dataclass_fields__", {}))
    unknown = sorted(set(params) - fields)
    if unknown:
        raise ValueError(f"{kind}:{name}: env params {unknown} are not fields of its params; they are {sorted(fields)}")
    return env, env_params.replace(**params) if params else env_params


def is_gymnax_env(made: Any) -> bool:
    """Whether an env factory made a JAX env of the gymnax interface: an object with ``reset_env(key,
    params)``, ``step_env(key, state, action, params)``, ``observation_space(params)`` and
    ``action_space(params)`` (and ``default_params``), or gymnax.make's ``(env, params)`` pair."""
    if isinstance(made, tuple):
        return len(made) == 2 and is_gymnax_env(made[0])
    methods = ("reset_env", "step_env", "observation_space", "action_space")
    return all(callable(getattr(made, m, None)) for m in methods) and hasattr(made, "default_params")


def action_dtype(space: Any) -> Any:
    """The dtype a JAX env's actions take (of its Gymnasium space): int32 for Discrete, else float32."""
    from gymnasium import spaces

    return np.int32 if isinstance(space, spaces.Discrete) else np.float32


def _check_jittable(env_id: str, env: Any, params: Any, action_space: Any) -> None:
    """Traces the env's ``reset_env``, ``step_env`` and ``is_truncated`` abstractly (``jax.eval_shape``:
    no compile, no step run), its params closed over as the block's functions close over them, so an
    env that jax cannot jit fails here, naming the function and the fix, and not deep inside the
    first round."""
    jax = _jax()

    def traced(what: str, fn: Any, *args: Any) -> Any:
        try:
            return jax.eval_shape(fn, *args)
        except jax.errors.JAXTypeError as e:
            first = str(e).strip().splitlines()[0]
            raise ValueError(f"{env_id}: its {what} cannot be traced by jax.jit ({type(e).__name__}: {first}); rollway "
                             "vmaps and jits a JAX env's reset_env and step_env, so they must be pure JAX: jnp.where or "
                             "jax.lax.cond instead of a Python `if` on an array, no numpy on traced values") from None
        except AttributeError as e:
            if what != "is_truncated":
                raise
            raise ValueError(f"{env_id}: its is_truncated (gymnax's, reading state.time and params.max_steps_in_episode) "
                             f"does not fit its state or params ({e}); rollway reads it to tell a time limit from a "
                             "termination: override is_truncated in the env") from None

    key = jax.ShapeDtypeStruct((2,), np.uint32)
    action = jax.ShapeDtypeStruct(action_space.shape, action_dtype(action_space))
    state = traced("reset_env", lambda k: env.reset_env(k, params), key)[1]
    state = traced("step_env", lambda k, s, a: env.step_env(k, s, a, params), key, state, action)[1]
    if callable(getattr(env, "is_truncated", None)):
        traced("is_truncated", lambda s: env.is_truncated(s, params), state)


def gymnasium_space(space: Any) -> Any:
    """A gymnax (or Craftax) space as the Gymnasium space rollway records."""
    from gymnasium import spaces

    kind = type(space).__name__
    if kind == "Discrete":
        return spaces.Discrete(int(space.n))
    if kind == "Box":
        dtype = np.dtype(space.dtype)
        low = np.broadcast_to(np.asarray(space.low, dtype), space.shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), space.shape)
        return spaces.Box(low, high, tuple(space.shape), dtype)
    raise ValueError(f"a {kind} space: rollway's JAX envs take Discrete and Box spaces")


class JaxSim:
    """``kind:name`` with its params: what ``rollway._host.prepare`` hands the hosts (``stepper``
    names the Rust side that steps it); :meth:`block` makes each block."""

    stepper = "batch"

    def __init__(self, kind: str, name: str, params: Dict[str, Any], made: Optional[Tuple[Any, Any]] = None) -> None:
        from rollway.spaces import to_json

        self.id = f"{kind}:{name}"
        self.kind = kind
        params = dict(params)
        pixels = params.pop("pixels", "float")
        if made is None:
            self.env, self.params = make_sim(kind, name, params)
        else:
            self.env, self.params = made
        self.observation_space = gymnasium_space(self.env.observation_space(self.params))
        self.action_space = gymnasium_space(self.env.action_space(self.params))
        if made is not None:  # a user's env: gymnax's and Craftax's own are known to trace
            _check_jittable(self.id, self.env, self.params, self.action_space)
        if pixels == "uint8":
            self.env, self.observation_space = _Uint8Pixels(self.env), _uint8_space(self.id, self.observation_space)
        elif pixels != "float":
            raise ValueError(f"{self.id}: pixels={pixels!r}; it is 'float' (the env's own) or 'uint8'")
        limit = getattr(self.params, "max_steps_in_episode", None) or getattr(self.params, "max_timesteps", None)
        self.spec = {
            "id": self.id, "observation_space": to_json(self.observation_space), "action_space": to_json(self.action_space),
            "max_episode_steps": int(limit) if limit else None, "render_fps": None, "reward_threshold": None,
            "gymnasium": None, "agents": None,
        }

    @classmethod
    def of(cls, made: Any, target: str) -> "JaxSim":
        """A user's own env of the gymnax interface (:func:`is_gymnax_env`): what ``make()`` returned,
        an env (stepped with its ``default_params``) or gymnax.make's ``(env, params)``; its id is
        ``jax:`` and the env's name."""
        env, params = made if isinstance(made, tuple) else (made, made.default_params)
        if not all(callable(getattr(type(env), m, None)) for m in ("reset_env", "step_env")):
            raise ValueError(f"{target} made a {type(env).__name__}, which wraps a gymnax env (its reset_env and step_env "
                             "are the inner env's): rollway vmaps and jits reset_env and step_env itself, so the "
                             "wrapper's own reset and step would be skipped; give rollway the env itself")
        name = getattr(env, "name", None)
        return cls("jax", name if isinstance(name, str) and name else target, {}, (env, params))

    def block(self, n: int) -> "JaxBlock":
        return JaxBlock(self, n)

    def close(self) -> None:
        pass


def _uint8_space(env_id: str, space: Any) -> Any:
    from gymnasium import spaces

    image = isinstance(space, spaces.Box) and len(space.shape) == 3 and space.shape[2] in (1, 3, 4)
    if not image or space.dtype.kind != "f" or space.low.min() < 0 or space.high.max() > 1:
        raise ValueError(f"{env_id}: pixels='uint8' turns [0, 1] float images (H×W×C) into uint8 frames; "
                         f"its observation space is {space}")
    return spaces.Box(0, 255, space.shape, np.uint8)


class _Uint8Pixels:
    """An env whose [0, 1] float image observations come as uint8, ``round(x × 255)`` (``pixels="uint8"``):
    frames, which rollway records as video. Its step and reset are the env's, the image converted."""

    def __init__(self, env: Any) -> None:
        self.env = env

    @staticmethod
    def _u8(obs: Any) -> Any:
        import jax.numpy as jnp

        return jnp.round(jnp.clip(obs, 0.0, 1.0) * 255.0).astype(jnp.uint8)

    def reset_env(self, key: Any, params: Any) -> Tuple[Any, Any]:
        obs, state = self.env.reset_env(key, params)
        return self._u8(obs), state

    def step_env(self, key: Any, state: Any, action: Any, params: Any) -> Tuple[Any, ...]:
        obs, state, reward, done, info = self.env.step_env(key, state, action, params)
        return self._u8(obs), state, reward, done, info

    def is_truncated(self, state: Any, params: Any) -> Any:
        return self.env.is_truncated(state, params)


class SlotInfos:
    """A block's ``infos`` (what rollway calls) from its ``info`` of one slot."""

    def info(self, slot: int) -> str:
        raise NotImplementedError

    def infos(self, slots: List[int]) -> str:
        """The latest round's infos of ``slots`` as a JSON list, in their order: rollway asks once a
        round, for the slots whose infos it reads (those that ended an episode, unless it records all)."""
        return "[" + ",".join(map(self.info, slots)) + "]"


class JaxBlock:
    """n slots of a :class:`JaxSim`, stepped a round at a time (see the module docs)."""

    def __init__(self, sim: JaxSim, n: int) -> None:
        from rollway.spaces import RowViews, to_json

        jax = _jax()
        jnp = jax.numpy
        self.n = n
        self._acts = RowViews(to_json(sim.action_space))
        self._act_dtype = action_dtype(sim.action_space)
        env, params = sim.env, sim.params
        self.keys = jnp.zeros((n, 2), jnp.uint32)
        self.pending = jnp.zeros(n, bool)
        self.pending_keys = jnp.zeros((n, 2), jnp.uint32)
        self.info_rows: Dict[str, Any] = {}
        step_all, keep, reset = _block_fns(jax, env, params, sim.kind)
        # The state is given up to each call (donated): it is updated in place, not copied.
        self._step_all, self._reset = jax.jit(step_all, donate_argnums=0), jax.jit(reset, donate_argnums=0)
        # A round where only some slots step: all step, from a copy of the state, and the others get
        # theirs back. Two programs of a few selects, not a second compile of the env's step. Only the
        # stepped state is given up: the one state out is written over it (the copy has no output to
        # be, and JAX warns of a donation it cannot use).
        self._copy, self._keep = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree)), jax.jit(keep, donate_argnums=0)
        self.state = self._first_state(jax, env, params)

    def _first_state(self, jax: Any, env: Any, params: Any) -> Any:
        """Every slot's state before its first reset: a reset of each, by the block's own reset
        program (a round that resets every slot compiles the same one). The env's reset run
        eagerly instead costs a compile of each of its operations: ~8 s for a Craftax world."""
        jnp, n = jax.numpy, self.n
        shapes = jax.eval_shape(lambda k: env.reset_env(k, params)[1], jnp.zeros(2, jnp.uint32))
        if any(jax.dtypes.issubdtype(s.dtype, jax.dtypes.prng_key) for s in jax.tree.leaves(shapes)):
            # Keys as leaves of the state have no zeros to start from: one reset, eagerly, copied to each slot.
            state1 = env.reset_env(jnp.zeros(2, jnp.uint32), params)[1]
            return strong(jax, jax.tree.map(lambda x: jnp.repeat(jnp.asarray(x)[None], n, axis=0), state1))
        zeros = jax.tree.map(lambda s: jnp.asarray(np.zeros((n, *s.shape), s.dtype)), shapes)
        at = _padded(np.arange(n))
        seed_keys = np.zeros((len(at), 2), np.uint32)
        return self._reset(zeros, self.keys, self.pending, self.pending_keys, at, np.ones(len(at), bool), seed_keys)[0]

    def round(self, ops: bytes, seeds: bytes, actions: bytes) -> Tuple[np.ndarray, Optional[np.ndarray], np.ndarray, np.ndarray]:
        """One round: ``ops`` (uint8 by slot), ``seeds`` (uint64 by slot, read where the op is a
        seeded reset), ``actions`` (the block's action rows). Returns the observations (uint8
        ``[rows, bytes]``, each row's leading bytes), the slot of each row (``None``: row i is slot
        i), and the rewards (float64) and flags (1 terminated, 2 truncated) by slot; a step's info
        stays for :meth:`infos`. A round of the engine either steps every slot or resets some."""
        op = np.frombuffer(ops, np.uint8)
        stepping = op == STEP
        if stepping.all():
            act = np.asarray(self._acts.view(actions, self.n), self._act_dtype)
            (self.state, self.keys, self.pending, self.pending_keys, obs, reward, term, trunc,
             self.info_rows) = self._step_all(self.state, self.keys, act)
            return self._bytes(obs), None, np.asarray(reward, np.float64), flags_of(term, trunc)
        resets = np.flatnonzero((op == RESET) | (op == RESET_UNSEEDED))
        rows: Optional[np.ndarray] = None
        reset_obs: Any = None
        if len(resets):
            # Only the slots that reset are reset: a Craftax world costs ~40 steps to make.
            at = _padded(resets)
            seed_keys = key_of(np.frombuffer(seeds, np.uint64)[at])
            self.state, self.keys, self.pending, reset_obs = self._reset(
                self.state, self.keys, self.pending, self.pending_keys, at, op[at] == RESET, seed_keys)
            rows = resets
        if not stepping.any():
            self.info_rows = {}
            zeros = np.zeros(self.n)
            return self._bytes(reset_obs)[:len(resets)], rows, zeros, zeros.astype(np.uint8)
        # Some slots step while others reset (or idle): every slot steps, those that were not to get
        # their state back, and the reset rows go over the step's.
        act = np.asarray(self._acts.view(actions, self.n), self._act_dtype)
        before = self._copy(self.state)
        state, keys, done, k_auto, obs, reward, term, trunc, self.info_rows = self._step_all(self.state, self.keys, act)
        self.state, self.keys, self.pending, self.pending_keys, reward, term, trunc = self._keep(
            state, before, keys, self.keys, done, self.pending, k_auto, self.pending_keys, reward, term, trunc, stepping)
        out = np.array(self._bytes(obs))
        if rows is not None:
            out[rows] = self._bytes(reset_obs)[:len(resets)]
        return out, None, np.asarray(reward, np.float64), flags_of(term, trunc)

    @staticmethod
    def _bytes(obs: Any) -> np.ndarray:
        # A CPU array's numpy view shares its memory: the rows are written straight from it.
        a = np.asarray(obs)
        return a.reshape(a.shape[0], -1).view(np.uint8)

    def infos(self, slots: List[int]) -> Dict[str, np.ndarray]:
        """The latest step's infos of ``slots`` as columns (:func:`info_columns`; Craftax's
        achievements, gymnax's ``discount``, …): one call a round, whatever the number of slots."""
        return info_columns(self.info_rows, slots)

    def close(self) -> None:
        self.state = None


def _padded(slots: np.ndarray) -> np.ndarray:
    """``slots`` padded to a power of two by repeating the first: a reset batch of few shapes,
    so that few are compiled (a padded row resets its slot again, alike)."""
    at = np.full(1 << (len(slots) - 1).bit_length(), slots[0])
    at[:len(slots)] = slots
    return at


def flags_of(term: Any, trunc: Any) -> np.ndarray:
    """The end flags rollway reads, by row: 1 terminated, 2 truncated."""
    return np.asarray(term).astype(np.uint8) | (np.asarray(trunc).astype(np.uint8) << 1)


def info_columns(columns: Dict[str, Any], at: Any) -> Dict[str, np.ndarray]:
    """The infos of rows ``at`` of ``columns`` (info leaves by name, a row per env step), in
    ``at``'s order, as rollway reads them without a dict a row: each leaf an array ``[len(at),
    ...]`` of bool, int64 or float64 (a leaf of more dimensions is a list in each info)."""
    def plain(k: str, a: np.ndarray) -> np.ndarray:
        # The values the leaf holds, exactly: JAX's narrow ints (ml_dtypes' int4, …) stay ints, its
        # small floats (bfloat16, …) become float64, and what has no such form is refused by name.
        kind, name = a.dtype.kind, a.dtype.name
        if kind == "b":
            return np.ascontiguousarray(a, np.bool_)
        fits = kind == "u" and (a.dtype.itemsize < 8 or a.size == 0 or int(a.max()) <= np.iinfo(np.int64).max)
        if kind == "i" or fits or (kind == "V" and "int" in name):
            return np.ascontiguousarray(a, np.int64)
        if kind == "f" or (kind == "V" and "float" in name):
            return np.ascontiguousarray(a, np.float64)
        raise TypeError(f"info[{k!r}]: an array of {a.dtype} cannot be recorded (infos hold bools, integers up to "
                        "int64 and floats)")

    return {k: plain(k, np.asarray(v)[at]) for k, v in columns.items()}


def strong(jax: Any, tree: Any) -> Any:
    """``tree`` with every numeric leaf strongly typed (same dtype; keys as they are). A leaf's weak
    type is part of what jit compiles for, and an env's ``reset`` leaves Python scalars weak where
    its ``step`` makes them strong: one state type for every call, so each function compiles once."""
    def one(x: Any) -> Any:
        x = jax.numpy.asarray(x)
        return x if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else jax.lax.convert_element_type(x, x.dtype)

    return jax.tree.map(one, tree)


def slot_fns(jax: Any, env: Any, params: Any, kind: str) -> Tuple[Any, Any]:
    """One slot's step, ``(state, key, action) -> (obs, state, key, k_auto, reward, terminated,
    truncated, info)``, and its reset, ``(key, pending, pending_key, seeded, seed_key) -> (obs,
    state, key)``, with the keys of the module docs: what a block vmaps (and a scan, in
    :mod:`rollway.batched_scan`)."""
    jnp = jax.numpy

    def truncated(state: Any, done: Any) -> Any:
        if kind == "craftax":  # one done: a time-limit end with the player alive is a truncation
            return done & (state.timestep >= params.max_timesteps) & (state.player_health > 0)
        if not callable(getattr(env, "is_truncated", None)):  # a user's env without one: every end terminates
            return jnp.zeros_like(done)
        return env.is_truncated(state, params)

    def step_slot(state: Any, key: Any, action: Any) -> Tuple[Any, ...]:
        key, k = jax.random.split(key)
        k_step, k_auto = jax.random.split(k)
        obs, state, reward, done, info = env.step_env(k_step, state, action, params)
        trunc = truncated(state, done)
        done = done | trunc
        obs, state = strong(jax, (obs, state))
        return obs, state, key, k_auto, reward, done & ~trunc, trunc, info

    def reset_slot(key: Any, pending: Any, pending_key: Any, seeded: Any, seed_key: Any) -> Tuple[Any, ...]:
        # Seeded: a new stream from the seed. Unseeded: the auto-reset key the ending step left,
        # or (an episode cut by rollway, not ended by the env) the next from the slot's stream.
        key_next, k = jax.random.split(jnp.where(seeded, seed_key, key))
        auto = ~seeded & pending
        obs, state = strong(jax, env.reset_env(jnp.where(auto, pending_key, k), params))
        return obs, state, jnp.where(auto, key, key_next)

    return step_slot, reset_slot


def _block_fns(jax: Any, env: Any, params: Any, kind: str) -> Tuple[Any, Any, Any]:
    """A block's step of every slot, what puts back the slots that were not to step, and its
    reset of some slots (see the module docs for the keys), to be jitted."""
    jnp = jax.numpy
    step_slot, reset_slot = slot_fns(jax, env, params, kind)

    def step_all(state: Any, keys: Any, actions: Any) -> Tuple[Any, ...]:
        obs, state, keys, k_auto, reward, term, trunc, info = jax.vmap(step_slot)(state, keys, actions)
        # The key the env's own auto-reset would have used is kept for the slot's next unseeded reset.
        return state, keys, term | trunc, k_auto, obs, reward, term, trunc, info

    def keep(state: Any, before: Any, keys: Any, keys_before: Any, done: Any, pending: Any, k_auto: Any,
             pending_keys: Any, reward: Any, term: Any, trunc: Any, stepping: Any) -> Tuple[Any, ...]:
        def pick(new: Any, old: Any) -> Any:
            return jnp.where(stepping.reshape(-1, *([1] * (new.ndim - 1))), new, old)

        return (jax.tree.map(pick, state, before), pick(keys, keys_before), jnp.where(stepping, done, pending),
                pick(k_auto, pending_keys), jnp.where(stepping, reward, 0.0), term & stepping, trunc & stepping)

    def reset(state: Any, keys: Any, pending: Any, pending_keys: Any, at: Any, seeded: Any, seed_keys: Any) -> Tuple[Any, ...]:
        obs, new_state, new_keys = jax.vmap(reset_slot)(keys[at], pending[at], pending_keys[at], seeded, seed_keys)
        state = jax.tree.map(lambda s, r: s.at[at].set(r), state, new_state)
        return state, keys.at[at].set(new_keys), pending.at[at].set(False), obs

    return step_all, keep, reset
