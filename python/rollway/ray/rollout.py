"""``rollway.ray.Rollout``: the rollout engine of a training loop spread over Ray actors,
feeding one learner (this process). Same fragments, versions and lag as
:class:`rollway.Rollout`; what changes is where the envs run::

    import rollway.ray

    rollout = rollway.ray.Rollout("gym:CartPole-v1", policy, num_actors=4, num_envs=8, steps_per_fragment=128,
                                  max_policy_lag=2, num_gpus_per_actor=0.25)
    for update in range(1000):
        frag = rollout.collect()            # from whichever actor finished first
        ...                                 # train on it
        rollout.publish(model.state_dict()) # every actor loads these before its next fragment

**Actors.** Each of ``num_actors`` Ray actors hosts a local :class:`rollway.Rollout`
(its own envs, env processes and batched policy, on its ``num_gpus_per_actor`` share)
and makes one fragment per request. Fragments travel through Ray's object store: the
learner's arrays are views of it (read-only, no copy on this side).

**Weights out, versions back.** :meth:`Rollout.publish` makes the next version; its
weights are put in the object store once and go to each actor once, with its first
request after the publish, so it loads them (its policy's ``load(weights)``, between
fragments) before the first fragment it starts after the publish. The learner's count
is the only one: an actor publishes the learner's number to its local rollout
(``publish(version=)``), so every step carries, and a recording actor stores as
``policy_version``, the version of the learner whose weights acted (``frag.version``),
a restarted actor's too. A policy in an actor is a copy: publish weights, or the actors
keep acting with the ones they were built with. Warnings an actor's envs raise (values
Gymnasium would warn about) reach ``collect`` as :class:`rollway.RollwayWarning`, as locally.

**Lag.** Steps older than the learner's version − ``max_policy_lag`` are never
delivered. ``stale="wait"`` (the default) starts fragments only as a local rollout
does (the engine's own rule, ``rollway._rollway.LagGate``): ``max_policy_lag`` ahead of the learner's requests, plus one per ``collect``, so a
learner that publishes once per collected fragment never sees a stale one; at lag 0
nothing is collected while the learner trains, and ``collect(n)`` asks ``n`` actors at
once (a synchronous PPO round over the cluster). ``stale="drop"`` keeps every actor
busy (IMPALA); a fragment too old on arrival is dropped and counted. Either way a
stale fragment is dropped, counted, and never mixed in.

**Your code on the actors.** The env callable and the policy are pickled to each actor;
a module of theirs that is not an installed package (a script's folder, a notebook)
travels with them by value, so what runs locally runs here. Installed packages, rollway
with them, must be on every node.

**Faults.** An actor that dies mid-fragment (SIGKILL, ``ray.kill``, its node gone)
loses that fragment whole (counted in ``lost_fragments``); Ray restarts it up to
``max_restarts`` times and it starts afresh (new episode ids, new seeds), while the
learner goes on with the others. Inside each actor, env faults cost an episode as
locally. When no actor is left, ``collect`` raises. Actors are owned by this process:
if it dies, Ray ends them.
"""

from __future__ import annotations

import collections
import json
import os
import time
import warnings
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Set, Tuple, Union

import rollway
from rollway import _rollway
from rollway.ray._common import (_connect, _own_error, _ray, _refuse_worker_names, close_run, hold_dataset, ray_failure,
                                 ship_by_value)
from rollway._training_log import TrainingLog
from rollway.rollout import STEPS_PER_FRAGMENT, Fragment, _old_names
from rollway.spaces import RowViews

# An actor restarted by Ray numbers its episodes from base `incarnation << 32` on
# (rollway.Rollout's episode_ids), so a restart never repeats an episode id or seed.
_INCARNATION_SHIFT = 32


class _RolloutActor:
    """A Ray actor: a local rollway.Rollout at lag 0, one fragment per request. Actor ``a``
    of ``A`` numbers slot ``i``'s ``j``-th episode ``(base + j) × A·N + a·N + i``: unique
    across actors, and seeded as ``rollway.run``'s episode of that index."""

    def __init__(self, index: int, actors: int, env: Any, policy: Any, kwargs: Dict[str, Any],
                 record: Optional[Tuple[str, int]], starts: Optional[List[int]] = None):
        self.index, self.actors, self.env, self.policy, self.kwargs, self.record = index, actors, env, policy, kwargs, record
        self.starts = starts  # a resumed run's: each of this actor's slots' episodes already taken
        self.r: Any = None
        self.incarnation, self.version = -1, 0

    def _rollout(self, incarnation: int) -> Any:
        import uuid


        if self.r is None or incarnation != self.incarnation:
            if self.r is not None:
                self.r.close()
            n = int(self.kwargs["num_envs"])
            ids = (incarnation << _INCARNATION_SHIFT, self.index * n, self.actors * n)
            kw = dict(self.kwargs, episode_ids=ids, episode_starts=self.starts)
            if self.record is not None:
                out, run = self.record
                kw.update(out=out, join=(run, f"rollout{run}-a{self.index}-i{incarnation}-{uuid.uuid4().hex[:8]}"))
            self.r = rollway.Rollout(self.env, self.policy, max_policy_lag=0, **kw)
            self.incarnation, self.version = incarnation, 0
        return self.r

    def spec(self, incarnation: int) -> Tuple[Tuple[str, str], Optional[int], int]:
        import os

        r = self._rollout(incarnation)
        return r._spaces, r.max_episode_steps, os.getpid()

    def collect(self, incarnation: int, version: int, weights: Any) -> Dict[str, Any]:
        """A fragment acted by the learner's ``version``: its number published to the local
        rollout, with ``weights`` when the learner sends them (once per version)."""
        import ray

        r = self._rollout(incarnation)
        if version != self.version:
            r.publish(weights, version=version)
            self.version = version
        t = time.monotonic()
        raw = r._h.collect()
        ctx = ray.get_runtime_context()
        raw["ray"] = {"actor": self.index, "node": ctx.get_node_id(), "seconds": time.monotonic() - t,
                      "resources": ctx.get_assigned_resources()}
        return raw

    def close(self) -> None:
        if self.r is not None:
            self.r.close()
            self.r = None


class RayFragment(Fragment):
    """A :class:`rollway.rollout.Fragment` from an actor: ``actor`` (its index) and
    ``node`` (its Ray node id) besides. The arrays are read-only views of Ray's object
    store; episode ids are unique across actors (see ``_RolloutActor``)."""

    __slots__ = ("actor", "node")
    actor: int
    node: str


class Rollout:
    """Rollout actors on Ray feeding this process (see the module docs).

    ``env``, ``agent``, ``num_envs``, ``steps_per_fragment``, ``seed`` and the keyword arguments
    (``workers``, ``mode``, ``host``, ``env_params``, ``agent_params``, ``max_episode_steps``, ``step_timeout``,
    ``check``, ``seed_each_episode``) are :class:`rollway.Rollout`'s, for each actor (their old
    names ``policy``, ``policy_params`` and ``steps`` too, with a ``DeprecationWarning``, until 0.2).
    ``num_actors``: actors, each asking Ray for ``num_cpus_per_actor`` CPUs,
    ``num_gpus_per_actor`` GPUs (fractions share one) and ``resources_per_actor``;
    ``max_restarts``: how often Ray restarts each actor; ``max_policy_lag`` and
    ``stale`` (``"wait"`` or ``"drop"``): see the module docs; ``address``: the Ray
    cluster (left out: this process's Ray, else ``$RAY_ADDRESS``'s, else a new local one,
    shut down at ``close``).
    ``log_dir`` and ``progress``: :class:`rollway.Rollout`'s, here in the learner's process
    over the fragments of every actor.
    ``out``: a new dataset that every actor records its finished episodes into, as one
    run of many writers (this process creates it, reading the env's spaces from one env
    it makes): a directory on storage every node sees, or an ``s3://bucket/prefix`` URL
    (this process holds the dataset's lease until ``close``; each actor pushes its
    shards as it commits them); ``commit_every`` as
    :class:`rollway.Rollout`'s. A follow-mode :class:`rollway.Loader` here sees every
    actor's commits. Episodes an actor had not committed when it died are lost.
    ``resume=True`` and ``version``: :class:`rollway.Rollout`'s, for the whole cluster: a
    learner killed or preempted continues its replay at ``out`` in a new run, every actor's
    slots numbering and seeding their episodes on from what the replay holds (the seed,
    ``num_actors`` × ``num_envs`` must be the recorded ones), acting as the learner's
    checkpointed ``version``; :attr:`resumed` says what the replay held.
    """

    def __init__(self, env: Union[str, Callable[[], Any]], agent: Union[str, Callable[..., Any], None] = None, *,
                 num_actors: int = 2, num_envs: int = 8, steps_per_fragment: int = STEPS_PER_FRAGMENT, seed: int = 0,
                 max_policy_lag: int = 1,
                 stale: str = "wait", num_cpus_per_actor: float = 1.0, num_gpus_per_actor: float = 0.0,
                 resources_per_actor: Optional[Mapping[str, float]] = None, max_restarts: int = 3,
                 address: Optional[str] = None, out: Optional[Union[str, "os.PathLike[str]"]] = None,
                 log_dir: Optional[Union[str, "os.PathLike[str]"]] = None, progress: bool = False,
                 resume: bool = False, version: int = 0, **rollout_args: Any):
        old = {k: rollout_args.pop(k) for k in [o for o, _ in _rollway.RENAMED_ROLLOUT_SETTINGS] if k in rollout_args}
        policy, agent_params, steps = _old_names(old, "rollway.ray.Rollout", agent, rollout_args.pop("agent_params", None),
                                                 steps_per_fragment)
        if agent_params is not None:
            rollout_args["agent_params"] = agent_params
        _refuse_worker_names(rollout_args)
        for own in ("episode_ids", "join", "episode_starts"):
            if own in rollout_args:
                raise _rollway.InputError(f"{own}=: rollway.ray.Rollout sets it for its actors")
        if num_actors < 1:
            raise _rollway.InputError(f"num_actors={num_actors}: a Ray rollout needs at least one actor")
        if max_policy_lag < 0:
            raise _rollway.InputError(f"max_policy_lag must be 0 or more, got {max_policy_lag}")
        if stale not in ("wait", "drop"):
            raise _rollway.InputError(f"stale must be \"wait\" or \"drop\", got {stale!r}")
        self._ray = ray = _ray()
        self._started = _connect(ray, address)
        self.num_actors, self.num_envs, self.steps_per_fragment = int(num_actors), int(num_envs), int(steps)
        self.steps = self.steps_per_fragment  # T, as each fragment's ``steps``
        self.max_policy_lag, self.stale = int(max_policy_lag), stale
        opts = dict(num_cpus=num_cpus_per_actor, num_gpus=num_gpus_per_actor, resources=dict(resources_per_actor or {}),
                    max_restarts=max_restarts, max_task_retries=0)
        # The settings that made this rollout, in its summary (and so in the dataset's run, with `out`):
        # the run's stored config is one actor's local rollout, which says nothing of the cluster.
        self._config = dict(num_actors=self.num_actors, num_envs=self.num_envs, steps_per_fragment=self.steps, seed=int(seed),
                            max_policy_lag=self.max_policy_lag, stale=stale, max_restarts=int(max_restarts),
                            num_cpus_per_actor=float(num_cpus_per_actor), num_gpus_per_actor=float(num_gpus_per_actor),
                            resources_per_actor=dict(resources_per_actor or {}))
        kwargs = dict(rollout_args, num_envs=num_envs, steps_per_fragment=steps, seed=seed)
        self._out = None if out is None else os.fspath(out)
        self._run, starts = 0, None
        self.resumed: Optional[Dict[str, int]] = None
        if resume and self._out is None:
            raise _rollway.InputError("resume=True continues the rollout recorded at out=; give out=")
        if self._out is not None:
            # The run every actor joins: made here by the engine (one env made to read the spaces), then left
            # open. On an object store, made in the hold's work directory and pushed; the hold keeps the lease.
            from rollway.rollout import _prepare

            refusal = f"out={self._out}: already holds a dataset; a rollout records into a new one (resume=True continues it)"
            self._hold = hold_dataset(self._out, "append" if resume else "new", refusal)
            try:
                # Numbered over every actor's slots, so that a resume finds each slot's stream.
                self._run, found = _prepare(env, out=self._local_out(), resume=bool(resume),
                                            episode_ids=(0, 0, num_actors * num_envs), **kwargs)
                if self._hold is not None:
                    self._hold.flush()
            except BaseException:
                self.close()
                raise
            if found is not None:
                starts = found[0]
                self.resumed = dict(episodes=found[1], steps=found[2])
        if isinstance(policy, str) and policy.startswith("onnx:"):
            policy = "onnx:" + os.path.abspath(policy[len("onnx:"):])  # actors have working directories of their own
        ship_by_value(ray, env, policy)
        cls = ray.remote(_RolloutActor).options(**opts)
        record = None if self._out is None else (self._out, self._run)
        n = int(num_envs)
        self._actors = [cls.remote(a, num_actors, env, policy, kwargs, record, None if starts is None else starts[a * n:(a + 1) * n])
                        for a in range(num_actors)]
        self._incarnation = [0] * num_actors
        try:
            spaces, self.max_episode_steps, _ = self._get(self._actors[0].spec.remote(0))
        except BaseException:
            self.close()
            raise
        self._obs, self._act = RowViews(spaces[0]), RowViews(spaces[1])
        self._stagings: Dict[str, Any] = {}  # rollway.torch.Staging per device, for the fragments' to()
        self._version, self._weights = int(version), None
        self._sent: List[Any] = [None] * num_actors  # the weights each actor has (None: as it was built)
        self._warnings: List[str] = []
        self._warned: Set[str] = set()
        self._loads = callable(getattr(policy, "load", None))
        self._idle: List[int] = list(range(num_actors))
        self._busy: Dict[Any, int] = {}  # a fragment's task → its actor
        self._probing: Dict[Any, int] = {}
        self._ready: Deque[RayFragment] = collections.deque()
        self._gate = _rollway.LagGate(self.max_policy_lag)
        self._stats: Dict[str, Any] = dict(fragments=0, lost_fragments=0,
                                           actor_failures=0, lags=collections.Counter(),
                                           actors={a: dict(fragments=0, steps=0, seconds=0.0) for a in range(num_actors)})
        self._t0 = time.monotonic()
        steps0 = self.resumed["steps"] if self.resumed else 0
        self._log = TrainingLog(log_dir, progress, steps0, self.resumed is not None) if log_dir is not None or progress else None
        self._dispatch()

    def _get(self, ref: Any) -> Any:
        try:
            return self._ray.get(ref)
        except Exception as e:  # noqa: BLE001 - the policy's or env's own exception, as locally
            raise _own_error(e) from None

    @property
    def version(self) -> int:
        """The latest published version (0 before any)."""
        return self._version

    def publish(self, weights: Any = None) -> int:
        """Makes the next version; ``weights`` go to every actor's ``policy.load`` before its
        next fragment (put in the object store once). Returns the version."""
        if weights is not None and not self._loads:
            raise _rollway.InputError("publish(weights) needs a policy with a load(weights) method")
        self._version += 1
        if weights is not None:
            self._weights = self._ray.put(weights)
        return self._version

    def collect(self, n: Optional[int] = None) -> Any:
        """The next fragment (``n`` left out), or a list of the next ``n``. Warnings the
        actors' envs raised come as :class:`rollway.RollwayWarning`, each kind once."""
        out = self._next(1 if n is None else int(n))
        if self._log is not None:
            for f in out:
                self._log.fragment(f, self._version)
        for w in self._warnings:
            warnings.warn(w, _rollway.RollwayWarning, stacklevel=2)
        self._warnings.clear()
        return out[0] if n is None else out

    def _next(self, n: int) -> List[RayFragment]:
        self._gate.ask(n)
        out: List[RayFragment] = []
        while len(out) < n:
            self._dispatch()
            while self._ready and len(out) < n:
                f = self._ready.popleft()
                if self._fresh(f):
                    out.append(f)
            if len(out) < n:
                self._wait()
        self._dispatch()  # what may run ahead starts now, while the learner trains
        return out

    def _dispatch(self) -> None:
        while self._idle and (self.stale == "drop" or self._gate.take()):
            a = self._idle.pop(0)
            # Weights travel to an actor once: with its first request after they were published.
            weights = self._weights if self._sent[a] is not self._weights else None
            ref = self._actors[a].collect.remote(self._incarnation[a], self._version, weights)
            self._sent[a] = self._weights
            self._busy[ref] = a

    def _fresh(self, f: RayFragment) -> bool:
        lag = self._gate.admit(int(f.version.min()), int(f.version.size), self._version)
        if lag is None:
            return False
        self._stats["lags"][lag] += 1
        self._stats["fragments"] += 1
        f.stats.update(lag_min=lag, lag_mean=float(lag), lag_max=lag, dropped_steps=self._gate.dropped_steps)
        return True

    def _wait(self) -> None:
        if not self._busy and not self._probing:
            raise _rollway.RollwayError(f"every one of the {self.num_actors} rollout actors is gone (max_restarts spent)")
        done, _ = self._ray.wait(list(self._busy) + list(self._probing), num_returns=1, timeout=0.5)
        for ref in done:
            probing = ref in self._probing
            a = self._probing.pop(ref) if probing else self._busy.pop(ref)
            try:
                raw = self._ray.get(ref)
            except Exception as e:  # noqa: BLE001 - sorted by Ray's error types
                state = ray_failure(e)
                if not probing:
                    self._lost(a)
                elif state == "restarting":
                    time.sleep(0.2)
                    self._probing[self._actors[a].spec.remote(self._incarnation[a])] = a
                # A probe that finds the actor gone: Ray will not bring it back (restarts spent).
                continue
            self._idle.append(a)
            if not probing:
                self._ready.append(self._fragment(raw))

    def _lost(self, a: int) -> None:
        """Actor ``a`` died during a fragment: the fragment is lost whole, and a probe asks
        whether Ray brings the actor back (it answers once restarted, as a new incarnation)."""
        self._stats["lost_fragments"] += 1
        self._stats["actor_failures"] += 1
        self._gate.ask(1)
        self._sent[a] = None  # a restarted actor has its policy as it was built
        self._incarnation[a] += 1
        self._probing[self._actors[a].spec.remote(self._incarnation[a])] = a

    def _fragment(self, raw: Dict[str, Any]) -> RayFragment:
        info = raw.pop("ray")
        for w in raw.get("warnings", ()):
            if w not in self._warned:  # each kind once, whichever actor saw it first
                self._warned.add(w)
                self._warnings.append(w)
        f = RayFragment.__new__(RayFragment)
        Fragment.__init__(f, raw, self._obs, self._act, self._stagings)
        f.actor, f.node = info["actor"], info["node"]
        s = self._stats["actors"][info["actor"]]
        s["fragments"] += 1
        s["steps"] += f.steps * f.envs
        s["seconds"] += info["seconds"]
        s["node"], s["resources"] = info["node"], info["resources"]
        return f

    def summary(self) -> Dict[str, Any]:
        """What the rollout did so far: fragments delivered, dropped (stale) and lost (actor
        deaths), actor failures, the lag histogram (lag → fragments) and per actor its
        fragments, steps, steps/s while collecting, node and Ray resources; ``config``, the settings
        it was made with (actors, envs and steps per actor, lag bound, resources). With ``out`` it
        is stored as the dataset's run summary at close."""
        s = {k: v for k, v in self._stats.items() if k not in ("lags", "actors")}
        s.update(dropped_fragments=self._gate.dropped_fragments, dropped_steps=self._gate.dropped_steps)
        s["config"] = dict(self._config)
        s["lag_histogram"] = dict(sorted(self._stats["lags"].items()))
        s["seconds"] = time.monotonic() - self._t0
        s["actors"] = {a: dict(v, steps_per_s=v["steps"] / v["seconds"] if v["seconds"] else 0.0)
                       for a, v in self._stats["actors"].items()}
        return s

    def close(self) -> None:
        """Ends the actors (their envs and env processes with them), each first committing
        what its dataset writer holds (``out``); closes the run; shuts Ray down if this
        rollout started it."""
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
        actors, self._actors = getattr(self, "_actors", []), []
        if actors and getattr(self, "_out", None) is not None:
            self._ray.wait([h.close.remote() for h in actors], num_returns=len(actors), timeout=60)
        for h in actors:
            self._ray.kill(h, no_restart=True)
        if actors and getattr(self, "_out", None) is not None:
            self._close_run()
        hold, self._hold = getattr(self, "_hold", None), None
        if hold is not None:
            hold.finish()  # the summary pushed, what killed actors left settled, the lease given back
        if getattr(self, "_started", False):
            self._ray.shutdown()
            self._started = False

    def _local_out(self) -> str:
        """The directory this process prepares and closes the run in (with ``out`` given):
        ``out``, or on an object store the hold's work directory."""
        hold = getattr(self, "_hold", None)
        return str(self._out) if hold is None else os.fspath(hold.work_dir)

    def _close_run(self) -> None:
        summary = json.dumps(self.summary(), default=str) if hasattr(self, "_stats") else None
        hold = getattr(self, "_hold", None)
        if hold is not None:
            hold.pull_index()  # the actors' shards, counted in the run's summary
        if self._out is not None:
            close_run(self._local_out(), self._run, summary)

    def __enter__(self) -> "Rollout":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
