"""A JAX env and a JAX policy, a whole fragment in one jitted call: ``rollway.JaxPolicy``.

A :class:`rollway.Rollout` of a JAX env (``gymnax:``, ``craftax:``, a user's env of the gymnax
interface) steps its envs a round at a time, calling the policy between rounds: a jitted call,
a trip between Rust and Python and per-slot bookkeeping every step. For a cheap env that is
more than the step itself (gymnax's Breakout-MinAtar: ~0.3 µs an env step). Given a
:class:`JaxPolicy` instead of a Python policy, the rollout runs env and policy together, T steps
of every env in one ``jax.lax.scan`` under ``jax.jit`` (as PureJaxRL collects), and rollway makes
the fragment from its arrays: the same episodes, ids, seeds, final observations and infos,
and the same recording (``out=``) as a round-at-a-time rollout acting alike::

    def act(params, obs, key):                 # pure JAX: obs [N, ...] -> actions [N]
        logits = obs.reshape(obs.shape[0], -1) @ params["w"]
        return {"actions": jax.random.categorical(key, logits), "logits": logits}

    with rollway.Rollout("gymnax:Breakout-MinAtar", rollway.JaxPolicy(act, {"w": w}), num_envs=256) as r:
        frag = r.collect()                      # extras["logits"]: [T, N, 3]
        r.publish({"w": new_w})                 # the next version's params

**Keys.** Each env slot keeps the key stream of :mod:`rollway.batched` (an episode equals the
env's own loop from its seed); the policy gets a key of its own each step, from a stream
started at the rollout's first episode's seed. :meth:`JaxPolicy.uniform` draws random actions
in JAX: not the draws of the ``"random"`` agent, which acts from Rust.

**Resets.** The env's own auto-resetting step resets every env at every step (under ``vmap``
both sides of an episode's end are computed): right for gymnax's envs, whose reset costs about
a step, ruinous for Craftax, whose world costs ~40 steps to make. The scan times, at its start,
a reset of every slot together against a few slots reset one at a time (a loop inside the call,
one turn per ended episode), and takes the cheaper for the episodes that end per step, judged
again on each call's own count. In the runs measured, Craftax's scan resets only the ended
slots and Breakout-MinAtar's every slot; an env whose episodes are long may choose otherwise.
Both ways make the same episodes. Measured in bench/RESULTS.md (issue 69).

**What it does not do.** The policy acts inside the call, so ``workers=1`` (one block),
``host`` and ``mode`` do not apply; an error in the call ends the rollout (no per-env faults);
episodes end where the env's params say (``max_episode_steps`` is refused: set the env's own
``max_steps_in_episode``); actions are not checked against the space.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np

from rollway.batched import JaxSim, action_dtype, flags_of, info_columns, key_of, slot_fns


class JaxPolicy:
    """A policy in JAX for a rollout of a JAX env: ``fn(params, obs, key)`` on the batch of
    every env's observation (``[N, ...]``, a JAX array), returning the actions (``[N]`` for a
    Discrete space, ``[N, d]`` for a Box) or a dict with ``"actions"`` and float extras
    (``"logprob"``, ``"value"``: ``[N, ...]``), kept per step in ``frag.extras``. ``fn`` must be
    pure JAX (it is traced into the rollout's jitted scan). ``params``: its pytree of weights,
    replaced by :meth:`rollway.Rollout.publish`'s ``weights``."""

    def __init__(self, fn: Callable[[Any, Any, Any], Any], params: Any = None) -> None:
        if not callable(fn):
            raise TypeError(f"JaxPolicy(fn): fn must be callable, got {type(fn).__name__}")
        self.fn, self.params = fn, params

    @classmethod
    def uniform(cls) -> "JaxPolicy":
        """Uniformly random actions drawn in JAX (Discrete: every action alike; Box: uniform
        between its bounds)."""
        return cls(_Uniform(), None)

    def __repr__(self) -> str:
        return f"JaxPolicy({getattr(self.fn, '__name__', type(self.fn).__name__)})"


class _Uniform:
    """:meth:`JaxPolicy.uniform`'s fn; the scan that traces it gives it the action space."""

    __name__ = "uniform"

    def __init__(self, space: Any = None) -> None:
        self.space = space

    def __call__(self, params: Any, obs: Any, key: Any) -> Any:
        import jax

        n, space = obs.shape[0], self.space
        if hasattr(space, "n"):
            return jax.random.randint(key, (n,), 0, int(space.n))
        return jax.random.uniform(key, (n, *space.shape), minval=space.low, maxval=space.high)


def _reset_all(jax: Any, reset_slot: Any, seeded: bool) -> Callable[..., Any]:
    """``(state, keys, obs, done, k_auto, seed_key) -> (state, keys, obs)`` with every slot
    reset and the ended ones kept: both sides of an episode's end computed, as the env's own
    auto-resetting step does under ``vmap``."""
    jnp = jax.numpy

    def reset_all(state: Any, keys: Any, obs: Any, done: Any, k_auto: Any, seed_key: Any) -> Any:
        obs_re, state_re, keys_re = jax.vmap(reset_slot)(keys, done, k_auto, seeded & done, seed_key)

        def pick(new: Any, old: Any) -> Any:
            return jnp.where(done.reshape(-1, *([1] * (new.ndim - 1))), new, old)

        return jax.tree.map(pick, state_re, state), pick(keys_re, keys), pick(obs_re, obs)

    return reset_all


def _reset_each(jax: Any, reset_slot: Any, seeded: bool) -> Callable[..., Any]:
    """``(state, keys, obs, done, k_auto, seed_key) -> (state, keys, obs)`` with the slots where
    ``done`` reset one at a time, a loop of one turn per ended slot: the others cost a pass over
    ``done`` (the slots' keys as :func:`~rollway.batched.slot_fns`' reset takes them)."""
    jnp = jax.numpy
    # Arrays, not Python bools: the reset negates them (``~`` on a bool is deprecated).
    pending, seeded_ = jnp.asarray(True), jnp.asarray(seeded)

    def reset_each(state: Any, keys: Any, obs: Any, done: Any, k_auto: Any, seed_key: Any) -> Any:
        at = jnp.nonzero(done, size=done.shape[0], fill_value=0)[0]

        def one(i: Any, c: Any) -> Any:
            state, keys, obs = c
            j = at[i]
            o, s, k = reset_slot(keys[j], pending, k_auto[j], seeded_, seed_key[j])
            return jax.tree.map(lambda a, b: a.at[j].set(b), state, s), keys.at[j].set(k), obs.at[j].set(o)

        return jax.lax.fori_loop(0, done.sum(), one, (state, keys, obs))

    return reset_each


def _least_time(jax: Any, call: Callable[[], Any], tries: int = 3) -> float:
    """The least of ``tries`` timings of ``call``, its result waited for."""
    best = math.inf
    for _ in range(tries):
        t = time.perf_counter()
        jax.block_until_ready(call())
        best = min(best, time.perf_counter() - t)
    return best


def _rows(a: Any, dtype: Any, row: int) -> np.ndarray:
    """``a`` (``[rows, ...]``) as uint8 rows of ``row`` bytes: a view of the array's own memory
    when its values fill the row, else a zero-padded copy (a row padded to rollway's alignment)."""
    x = np.ascontiguousarray(np.asarray(a), dtype)
    # The row's size spelled out: a fragment where no episode ended has no final rows, and -1 is
    # no size for none.
    flat = x.reshape(x.shape[0], math.prod(x.shape[1:])).view(np.uint8)
    if flat.shape[1] == row:
        return flat
    out = np.zeros((x.shape[0], row), np.uint8)
    out[:, :flat.shape[1]] = flat
    return out


def _steps(a: Any) -> np.ndarray:
    """A scan's output ``[T, N, ...]`` as ``[T × N, ...]`` rows, time-major (a view)."""
    x = np.asarray(a)
    return x.reshape(x.shape[0] * x.shape[1], *x.shape[2:])


class JaxScan:
    """``n`` slots of a :class:`~rollway.batched.JaxSim` and a :class:`JaxPolicy`, stepped T
    steps a call: what ``rollway.Rollout`` hands the engine for a JAX policy (the engine
    calls :meth:`begin` once, then :meth:`steps` a fragment, and :meth:`load` at ``publish``)."""

    rollway_scan = True

    #: The most ended slots a step can reset one at a time for no more than resetting every slot
    #: together: measured at :meth:`begin` unless set (the tests set it, to take each way).
    one_limit: Optional[int] = None

    def __init__(self, sim: JaxSim, policy: JaxPolicy, n: int) -> None:
        from rollway.spaces import RowViews, to_json

        import jax

        self.sim, self.n, self._jax = sim, n, jax
        self.fn, self.params = policy.fn, policy.params
        if isinstance(self.fn, _Uniform):
            self.fn = _Uniform(sim.action_space)  # the space of the env as rollway hosts it: sim.env may be a wrapper
        views = RowViews(to_json(sim.observation_space)), RowViews(to_json(sim.action_space))
        for what, v in zip(("observation", "action"), views):
            if not v.one:
                raise ValueError(f"{sim.id}: a JaxPolicy takes spaces of one array; the {what} space is {v.leaves}")
        self._obs_dtype, self._obs_row = views[0].leaves[0].dtype, views[0].row
        self._act_dtype, self._act_row = views[1].leaves[0].dtype, views[1].row
        self._scans: Dict[Tuple[int, bool, bool], Any] = {}
        self.state: Any = None
        self._final: Any = None
        self._seen: Any = None
        self.one_at_a_time = False

    def begin(self, seeds: bytes) -> np.ndarray:
        """Resets every slot from its seed (``uint64`` by slot); the first observations as rows."""
        jax = self._jax
        keys = key_of(np.frombuffer(seeds, np.uint64))
        _, reset_slot = slot_fns(jax, self.sim.env, self.sim.params, self.sim.kind)
        no = np.zeros(self.n, bool)
        reset_all = jax.jit(jax.vmap(reset_slot)).lower(keys, no, keys, ~no, keys).compile()
        t = time.perf_counter()
        obs, self.state, self.keys = jax.block_until_ready(reset_all(keys, no, keys, ~no, keys))
        all_s = time.perf_counter() - t
        if all_s < 1.0:  # timed again, the first run's setup left out as on the other side
            tries = 3 if all_s < 0.05 else 1
            all_s = min(all_s, _least_time(jax, lambda: reset_all(keys, no, keys, ~no, keys), tries))
        if self.one_limit is None:
            self.one_limit = self._measure_one_limit(reset_slot, obs, keys, all_s)
        # Until the ends are counted: as if an eighth of the slots ended every step.
        self.one_at_a_time = self.n / 8 < self.one_limit
        # The policy's own stream, from the first episode's seed (and apart from the envs' keys).
        self.policy_key = jax.random.fold_in(keys[0], 0x706F6C)
        self.obs = obs
        return _rows(obs, self._obs_dtype, self._obs_row)

    def _measure_one_limit(self, reset_slot: Any, obs: Any, keys: Any, all_s: float) -> int:
        """How many slots reset one at a time cost no more than every slot reset together
        (``all_s`` seconds, measured), timed on a few slots. Craftax's world costs ~40 steps to
        make and vectorizes little: one slot's reset costs about 1/N of resetting all of them.
        gymnax's reset costs about a step, and all N of them fused cost what a few cost one at a
        time."""
        jax, m = self._jax, min(self.n, 4)
        done = np.arange(self.n) < m
        each = jax.jit(_reset_each(jax, reset_slot, False)).lower(self.state, self.keys, obs, done, keys, keys).compile()
        # Not timed: a first run sets up what later ones reuse (measured with eight slots of
        # Craftax at N = 512: 640 ms, then 1.1 ms a slot).
        jax.block_until_ready(each(self.state, self.keys, obs, done, keys, keys))
        one_s = _least_time(jax, lambda: each(self.state, self.keys, obs, done, keys, keys)) / m
        return int(all_s / max(one_s, 1e-9))

    def load(self, params: Any) -> None:
        """The next version's params (``Rollout.publish(weights)``)."""
        self.params = params

    def _choose(self, ends_per_step: float) -> None:
        """Chooses how the next call resets: the ended slots one at a time while the ends per
        step are fewer than ``one_limit`` (resetting them so costs less than resetting every
        slot together), judged on the last call's ends, with a quarter's margin either way so
        that a rate near the limit does not compile the other scan back and forth."""
        limit = self.one_limit or 0
        if self.one_at_a_time and ends_per_step > 1.25 * limit:
            self.one_at_a_time = False
        elif not self.one_at_a_time and ends_per_step < 0.75 * limit:
            self.one_at_a_time = True

    def _scan(self, steps: int, seeded: bool) -> Any:
        one = self.one_at_a_time
        if (steps, seeded, one) in self._scans:
            return self._scans[(steps, seeded, one)]
        jax, n = self._jax, self.n
        jnp = jax.numpy
        step_slot, reset_slot = slot_fns(jax, self.sim.env, self.sim.params, self.sim.kind)
        fn, act_dtype = self.fn, action_dtype(self.sim.action_space)

        reset = (_reset_each if one else _reset_all)(jax, reset_slot, seeded)

        def body(carry: Any, t: Any) -> Any:
            state, keys, obs, pkey, started, params, seed_keys, final, ends, seen = carry
            pkey, k = jax.random.split(pkey)
            out = fn(params, obs, k)
            acts = out["actions"] if isinstance(out, dict) else out
            extras = {name: jnp.asarray(v, jnp.float32) for name, v in out.items() if name != "actions"} if isinstance(out, dict) else {}
            acts = acts.astype(act_dtype)
            obs_st, state, keys, k_auto, reward, term, trunc, info = jax.vmap(step_slot)(state, keys, acts)
            done = term | trunc
            # Each slot that ended starts its next episode from the next of its seeds (or its own stream).
            seed_key = seed_keys[jnp.minimum(started, seed_keys.shape[0] - 1), jnp.arange(n)]
            state, keys, nxt = reset(state, keys, obs_st, done, k_auto, seed_key)
            # The final observations are packed, in (t, i) order, where they ended: a second
            # [T, N] array of observations would be written whole for a few rows of it.
            at = jnp.where(done, ends + jnp.cumsum(done) - 1, final.shape[0])
            final = final.at[at].set(obs_st, mode="drop")
            seen = jax.lax.dynamic_update_index_in_dim(seen, nxt, t, 0)
            carry = (state, keys, nxt, pkey, started + done, params, seed_keys, final, ends + done.sum(), seen)
            return carry, (acts, reward.astype(jnp.float32), term, trunc, extras, info)

        def scan(state: Any, keys: Any, obs: Any, pkey: Any, params: Any, seed_keys: Any, final: Any, seen: Any) -> Any:
            carry = (state, keys, obs, pkey, jnp.zeros(n, jnp.int32), params, seed_keys, final, jnp.int32(0), seen)
            (state, keys, obs, pkey, _, _, _, final, ends, seen), outs = jax.lax.scan(body, carry, jnp.arange(steps))
            return state, keys, obs, pkey, final, ends, seen, outs

        # The state and the buffers of the observations (every step's, and the final ones) are
        # given up to each call and written in place. A fresh [T, N, ...] output each call was
        # memory the allocator mapped anew (52 MB at N = 1024, past glibc's largest mmap
        # threshold), and its page faults cost more than the scan's own steps (issue 69,
        # bench/RESULTS.md).
        self._scans[(steps, seeded, one)] = jax.jit(scan, donate_argnums=(0, 1, 6, 7))
        return self._scans[(steps, seeded, one)]

    def steps(self, steps: int, seeds: bytes, seeded: bool) -> Tuple[Any, ...]:
        """``steps`` steps of every slot; ``seeds`` (``uint64`` ``[steps, n]``): each slot's next
        episodes' seeds, in order (read when ``seeded``). Returns the rows the engine reads
        (``rollway_runner``'s ``Scanned``): observations ``[T × N]``, the final observations of
        the steps that ended an episode, actions, rewards, flags (1 terminated, 2 truncated),
        extras and those steps' infos (:func:`~rollway.batched.info_columns`)."""
        n = self.n
        seed_keys = key_of(np.frombuffer(seeds, np.uint64).reshape(-1, n)) if seeded else np.zeros((1, n, 2), np.uint32)
        tn = steps * n
        if self._final is None or self._final.shape[0] != tn:
            jnp = self._jax.numpy
            self._final = jnp.zeros((tn, *self.obs.shape[1:]), self.obs.dtype)
            self._seen = jnp.zeros((steps, *self.obs.shape), self.obs.dtype)
        self.state, self.keys, self.obs, self.policy_key, self._final, ends, self._seen, outs = self._scan(steps, seeded)(
            self.state, self.keys, self.obs, self.policy_key, self.params, seed_keys, self._final, self._seen)
        nxt, (acts, reward, term, trunc, extras, info) = self._seen, outs
        ends = int(ends)
        self._choose(ends / steps)
        flags = flags_of(term, trunc).reshape(-1)
        ended = np.flatnonzero(flags)
        # Read (and copied by rollway) before the next call gives the buffer up.
        final = _rows(np.asarray(self._final)[:ends], self._obs_dtype, self._obs_row)
        cols = [(name, np.asarray(v, np.float32).reshape(-1), list(np.shape(v)[2:])) for name, v in extras.items()]
        return (_rows(_steps(nxt), self._obs_dtype, self._obs_row), final, _rows(_steps(acts), self._act_dtype, self._act_row),
                np.asarray(reward).reshape(-1), flags, cols, info_columns({k: _steps(v) for k, v in info.items()}, ended))

    def close(self) -> None:
        self.state = None


def scan_for(env: Any, env_params: Optional[Mapping[str, Any]], policy: JaxPolicy, n: int, workers: Optional[int],
             max_episode_steps: Optional[int] = None) -> JaxScan:
    """The :class:`JaxScan` of ``rollway.Rollout(env, policy)`` for a JAX env (an id ``KIND:NAME``
    of :data:`rollway.batched.KINDS`, or a callable making an env of the gymnax interface)."""
    from rollway.batched import KINDS, is_gymnax_env

    if workers not in (None, 1):
        raise ValueError(f"a JaxPolicy steps its envs in one jitted call: workers={workers} does not apply (leave it out)")
    if max_episode_steps is not None:
        raise ValueError(f"max_episode_steps={max_episode_steps}: a JaxPolicy's envs end their episodes inside the jitted "
                         "call, where the env's own params say: set its time limit in env_params (gymnax's "
                         "max_steps_in_episode, Craftax's max_timesteps)")
    params = dict(env_params or {})
    if isinstance(env, str):
        kind, _, name = env.partition(":")
        if kind not in KINDS:
            raise ValueError(f"a JaxPolicy acts on a JAX env ({', '.join(k + ':NAME' for k in KINDS)}, or a callable making "
                             f"an env of the gymnax interface), not {env!r}: give a Python policy for it")
        return JaxScan(JaxSim(kind, name, params), policy, n)
    made = env()
    if not is_gymnax_env(made):
        raise ValueError(f"a JaxPolicy acts on a JAX env; {env!r} made a {type(made).__name__}: give a Python policy for it")
    return JaxScan(JaxSim.of(made, getattr(env, "__name__", "env")), policy, n)


__all__: List[str] = ["JaxPolicy", "JaxScan", "scan_for"]
