"""``rollway.Rollout``: rollway as the rollout engine of a training loop.

Envs and a batched policy stay up between the learner's updates; each
:meth:`Rollout.collect` hands over a :class:`Fragment` of ``steps`` (T) steps of
``num_envs`` (N) envs, time-major, with the bootstrap observation::

    rollout = rollway.Rollout("CartPole-v1", policy, num_envs=8, steps_per_fragment=128)
    for update in range(100):
        frag = rollout.collect()        # obs [T+1, N, 4], actions [T, N], rewards [T, N], ...
        loss = ...                      # train on it (torch.from_numpy takes the arrays as they are)
        rollout.publish()               # the next policy version

The policy is called as in :mod:`rollway.policy` (``policy(obs, first, state)``, on all
N envs at once) and may return a dict: ``{"actions": a, "state": s, "logprob": lp,
"value": v}``; keys other than ``actions`` and ``state`` are *extras*, kept per step
as float32 arrays ``[T, N, ...]`` in ``frag.extras``.

**Versions and lag.** Every step carries the version of the policy that chose its
action (``frag.version``); :meth:`Rollout.publish` makes the next one. With
``max_policy_lag=0`` (the default) nothing is collected while the learner trains:
strictly on-policy, CleanRL's loop; the fragment is made inside ``collect``, on the
learner's own thread (so a torch policy's forward and the update share one thread
pool). With ``max_policy_lag=k`` collection runs up to
``k`` fragments ahead on a thread of its own while the learner trains (IMPALA, Sample
Factory); it then acts with a copy of the network, and ``publish(weights)`` hands
the new weights to the policy's ``load(weights)`` method, which the rollout calls
between two batches, never during one. A fragment with a step older than the
current version − k is dropped and counted (``frag.stats["dropped_steps"]``), never
delivered.

**Recording.** With ``out=DIR`` every episode that ends is recorded, as it ends, into
a new rollway dataset at ``DIR`` (the replay buffer of MineStudio's online training):
the observations, actions, rewards and flags the learner saw, the policy's extras as
columns ``extras.<name>``, and the version that chose each action as
``policy_version``. Commits land at least every ``commit_every`` seconds, crash-safely:
a killed learner keeps every committed episode. A :class:`rollway.Loader` with
``follow=True`` samples from it while it grows, in this process or another.
An episode cut by an env fault is not recorded.

**Faults.** An env that raises (or a hosted env's process that dies) costs that env's
episode: the step ends it as truncated with reward 0, the env restarts with
``first`` set, and ``frag.stats["env_faults"]`` counts it; an env that fails more
than ``max_restarts`` times in a row ends the rollout. A policy that raises ends
the rollout, and :meth:`~Rollout.collect` raises that exception. Ctrl-C during
``collect`` raises ``KeyboardInterrupt``: at ``max_policy_lag=0`` it lands in the policy
and ends the rollout as any exception there does; at lag ≥ 1 it interrupts the wait and
the rollout stays usable. One that lands while an inline Python env (``host="inline"``,
or ``"auto"`` at one worker and lag 0) is stepping costs that env's op (its episode is
retried, as for a fault), and ``collect`` raises ``KeyboardInterrupt`` once the fragment
under way is made (at lag 0 it is made in ``collect``'s own call).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np

from rollway import _rollway
from rollway._training_log import TrainingLog
from rollway.batched_scan import JaxPolicy, scan_for
from rollway.spaces import RowViews


class Fragment:
    """T steps × N envs, time-major. ``obs[t]`` is what ``actions[t]`` was chosen on (by
    policy version ``version[t]``); ``rewards[t]``, ``terminated[t]``, ``truncated[t]``
    are what it led to. An episode that ends at ``t`` is reset in the same step:
    ``obs[t + 1]`` is the next episode's first observation and ``first[t + 1]`` is True.
    ``obs[T]`` is the bootstrap observation.

    Attributes (numpy arrays; ``torch.from_numpy`` takes each without a copy):

    - ``steps``: T, the steps per env in this fragment (an int); ``envs``: N, the envs (an int)
    - ``obs``: ``[T + 1, N, *shape]`` (a dict of such arrays by leaf path for Dict/Tuple spaces)
    - ``actions``: ``[T, N, *shape]`` (likewise)
    - ``rewards``: float32 ``[T, N]``; ``terminated``, ``truncated``: bool ``[T, N]``
    - ``first``: bool ``[T + 1, N]``, the observation starts an episode
    - ``episode``: int64 ``[T + 1, N]``, the episode each observation belongs to (env
      slot ``i``'s ``j``-th episode is ``j * N + i``, seeded as ``rollway.run``'s episode
      of that index with the same seed)
    - ``version``: int64 ``[T, N]``; ``state``: float32 ``[N, d]``, each env's recurrent
      state before ``obs[0]`` was acted on (zeros where ``first[0]``)
    - ``extras``: dict of float32 ``[T, N, ...]``, the policy's per-step outputs
    - ``finished``: dict of arrays over the episodes that ended inside the fragment, in
      the order they ended: ``env``, ``episode``, ``return``, ``length``, ``terminated``,
      and ``step``, the ``t`` whose action ended it
    - ``final_obs``: ``[F, *shape]`` (or a dict by leaf), F = ``len(finished["env"])``:
      each finished episode's final observation, the one its reset replaced in ``obs``
      (what the env returned at ``(finished["step"][k], finished["env"][k])``, bit for bit
      the last observation a recording rollout stores). Bootstrap a truncated episode
      with its value, as Gymnasium's ``final_obs`` and SB3's ``terminal_observation``::

              v = value(frag.final_obs)                       # [F]
              cut = ~frag.finished["terminated"]
              t, i = frag.finished["step"][cut], frag.finished["env"][cut]
              rewards[t, i] += gamma * v[cut]                 # then treat every done as terminal

      A step truncated by an env fault (``stats["env_faults"]``) has no entry: the env
      failed, there is nothing to bootstrap from.
    - ``final_info``: list of F dicts, the info each finished episode's last step
      returned (Gymnasium's ``final_info``; ``{}`` for an env that gives none; arrays
      arrive as lists), also stored as the episode's ``info`` by a recording rollout
    - ``stats``: how it was made: ``steps_per_s``, ``wall_s``, ``policy_s``, ``env_s``,
      ``waited_s`` (the rollout waiting for the learner), ``lag_min``,
      ``lag_mean``, ``lag_max``, ``dropped_steps`` (so far), ``env_faults``, ``mean_batch``
    """

    __slots__ = ("steps", "envs", "obs", "actions", "rewards", "terminated", "truncated", "first",
                 "episode", "version", "state", "extras", "finished", "final_obs", "_final_info", "stats", "_stagings")
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    first: np.ndarray
    episode: np.ndarray
    version: np.ndarray
    state: np.ndarray
    extras: Dict[str, np.ndarray]
    finished: Dict[str, np.ndarray]
    stats: Dict[str, Any]

    def __init__(self, raw: Dict[str, Any], obs: RowViews, act: RowViews, stagings: Optional[Dict[str, Any]] = None):
        t, n = raw["steps"], raw["envs"]
        # The rollout's rollway.torch.Staging per device, shared by its fragments' to().
        self._stagings: Dict[str, Any] = {} if stagings is None else stagings
        self.steps: int = t
        self.envs: int = n
        self.obs: Any = obs.view(raw["obs"], t + 1, n)
        self.actions: Any = act.view(raw["actions"], t, n)
        self.final_obs: Any = obs.view(raw["final_obs"], len(raw["finished"]["env"]))
        # The engine's JSON text, parsed when first read: a learner that never reads them does not
        # pay for thousands of dicts a fragment (a JAX env's short episodes at large N).
        self._final_info: Union[str, List[Dict[str, Any]]] = raw["final_info"]
        for k in ("rewards", "terminated", "truncated", "first", "episode", "version", "state", "extras", "finished", "stats"):
            setattr(self, k, raw[k])

    @property
    def final_info(self) -> List[Dict[str, Any]]:
        """The info each finished episode's last step returned (see the class docs)."""
        info = self._final_info
        if isinstance(info, str):
            info = self._final_info = json.loads(info)
        return info

    @property
    def dones(self) -> np.ndarray:
        """``dones``: ``terminated | truncated``, bool ``[T, N]``."""
        return self.terminated | self.truncated

    def to(self, device: Any) -> "Fragment":
        """This fragment with every array a torch tensor on ``device`` (``"cuda"``, a
        ``torch.device``): ``obs`` (each leaf of a Dict space's), ``actions``, ``rewards``,
        the flags, ``first``, ``episode``, ``version``, ``state``, ``extras``, ``finished``
        and ``final_obs``; ``steps``, ``envs``, ``final_info`` and ``stats`` stay as they
        are. Each array goes in one host-to-device copy from pinned buffers that the
        rollout's fragments reuse (:class:`rollway.torch.Staging`), issued without waiting:
        work queued after it on the device sees the data. At ``max_policy_lag`` ≥ 1 the
        next fragment is being collected meanwhile, so the copies overlap collection.
        ``device="cpu"`` gives tensors sharing the arrays' memory, no copy. Needs torch."""
        import torch

        from rollway.torch import Staging, fragment_to

        key = str(torch.device(device))
        if key not in self._stagings:
            self._stagings[key] = Staging(key)
        return fragment_to(self, key, self._stagings[key])

    def __repr__(self) -> str:
        return (f"Fragment(steps={self.steps}, envs={self.envs}, versions={int(self.version.min())}..{int(self.version.max())}, "
                f"finished={len(self.finished['episode'])}, extras={sorted(self.extras)})")


def _request(env: Union[str, Callable[[], Any]], settings: Dict[str, Any]) -> Tuple[str, Optional[bytes], str]:
    """The env's name, its pickle (a callable's), and the settings as the one JSON mapping the
    engine reads (``rollway_engine::RolloutRequest``: it declares them and their defaults, and
    names an unknown or mistyped one)."""
    from rollway._run import _env_factory, _params, _refuse_env_instance

    pickle = None
    _refuse_env_instance(env)
    if callable(env):
        env, pickle = _env_factory(env)
    s = dict(settings)
    for k in ("env_params", "agent_params"):
        if k in s:
            s[k] = _params(s[k]) or {}
    if s.get("out") is not None:
        s["out"] = os.fspath(s["out"])
    try:
        return env, pickle, json.dumps(s, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise _rollway.InputError(f"rollout settings: {e}") from None


def _prepare(env: Union[str, Callable[[], Any]], **settings: Any) -> Tuple[int, Optional[Tuple[List[int], int, int]]]:
    """Creates the dataset and run of ``settings["out"]`` as a recording rollout would (with
    ``resume``, a run continuing the one there), without starting one: the run
    :class:`rollway.ray.Rollout`'s actors join. Returns its number and, resumed, each of the
    stream's slots' episodes taken, the replay's episodes and steps."""
    env, pickle, text = _request(env, {k: v for k, v in settings.items() if k != "agent_params"})
    return _rollway.prepare_rollout(env, text, pickle, sys.executable)


# A fragment's steps unless told (the engine's `RolloutConfig` default).
STEPS_PER_FRAGMENT = 128


def _old_names(old: Mapping[str, Any], where: str, agent: Any, agent_params: Optional[Mapping[str, Any]],
               steps_per_fragment: int) -> Tuple[Any, Optional[Mapping[str, Any]], int]:
    """A rollout's ``(agent, agent_params, steps_per_fragment)``, with those given by an old
    name in ``old`` (``_rollway.RENAMED_ROLLOUT_SETTINGS``, the engine's list) moved over and
    warned of as deprecated (a ``steps_per_fragment`` left at its default gives way to an old
    ``steps``); another unknown keyword, or no agent at all, is the ``TypeError`` Python
    raises for one."""
    from rollway._run import _renamed

    renames = _rollway.RENAMED_ROLLOUT_SETTINGS
    unknown = sorted(set(old) - {o for o, _ in renames})
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    given = dict(agent=agent, agent_params=agent_params,
                 steps_per_fragment=None if steps_per_fragment == STEPS_PER_FRAGMENT else steps_per_fragment)
    merged = _renamed({**{k: v for k, v in given.items() if v is not None}, **old}, f"{where}: ", renames, stacklevel=4)
    if merged.get("agent") is None:
        raise TypeError(f"{where}() missing 1 required argument: 'agent' (a policy, or an agent's name)")
    return merged["agent"], merged.get("agent_params"), merged.get("steps_per_fragment", STEPS_PER_FRAGMENT)


class Rollout:
    """Envs and a batched policy kept running for a learner (see the module docs).

    ``env``: a built-in id (``rollway.envs()``), ``"gym:ID"``, ``"pz:MODULE"``, or a callable
    returning a Gymnasium env or a PettingZoo ``ParallelEnv`` (pickled into the env processes);
    ``env_params`` its parameters. A ``ParallelEnv`` is one env whose rows are its agents
    (``rollway.multiagent``): its observations stack them, ``obs["obs"]`` ``[T + 1, N, K, ...]``.
    ``agent``: a policy, the callable ``policy(obs, first, state)`` (:mod:`rollway.policy`), a
    built-in agent's name, or ``"onnx:PATH"``: a network exported to ONNX, run natively
    with no Python in the loop, its outputs other than the actions (``value``,
    ``logprob``) in each fragment's ``extras`` when ``agent_params={"extras": "all"}``;
    ``agent_params``: the named agent's parameters (``rollway agents`` lists them); both as
    :func:`rollway.run` names them. ``num_envs``: N, all acted on in each policy call;
    ``steps_per_fragment``: T per fragment (a run's ``steps`` is its total target).
    ``policy``, ``policy_params`` and ``steps``, these settings' old names, are taken
    with a ``DeprecationWarning`` until 0.2. ``workers``: threads (hosted envs: processes) the envs
    are split over (default one; for ``atari:`` envs one process per core); ``seed``: env seeds (same seed, same fragments, whatever the
    workers); ``mode``: ``"sync"`` steps every worker's envs together, one policy call on all N a
    step, so each step waits for the slowest worker; ``"async"`` lets each worker's envs run ahead,
    the policy called on one worker's envs (a batch of N / ``workers``) as soon as they are back, as
    EnvPool's async mode does: no env process waits for another within a fragment, at the cost of
    ``workers`` policy calls a step. Built-in agents (each env its own random stream) make the same
    fragments and the same recording in both modes; a policy that samples from one random stream
    for its whole batch sees its calls in the order the workers come back. ``max_policy_lag``: see the module docs; ``max_restarts``: failures in a
    row one env may have; ``max_episode_steps``: truncates episodes at this length;
    ``step_timeout``: seconds a hosted env's step may take before its process is replaced.
    ``host``: where Python envs (``gym:ID``, callables) step: ``"inline"`` in the rollout's
    own thread under the GIL (no process, no pipe round trip: fastest for few cheap envs,
    but an env that hangs or crashes the interpreter takes the learner with it),
    ``"process"`` in env processes (``workers`` of them, stepping in parallel, outside the
    GIL, killable), or ``"auto"``: at ``max_policy_lag=0``, with no ``step_timeout`` and ``workers`` not
    given, one step of the env is timed (on the env made to read its spaces, ~50 ms) and
    the envs step inline unless processes, one per core, save more than their round trip
    costs (:attr:`host_choice` says which and why: a cheap env like CartPole stays inline,
    one of ~100 µs or more goes to processes); processes otherwise
    (``host="inline"`` with a ``step_timeout`` is refused: a thread cannot be stopped).
    ``check``: actions are checked against the action space (one outside it ends the
    rollout with :class:`rollway.RollwayError`, naming the env slot, the value and the
    space), and observations and rewards (a NaN costs that env its episode, as a
    fault); ``False`` skips the checks.
    ``out``: a new dataset directory (one that holds a dataset is refused) that records every finished episode (see the
    module docs), or an ``s3://bucket/prefix`` URL, whose shards are pushed as they commit so that learners on
    other nodes can follow it; ``commit_every``: the longest a finished episode waits to be committed, seconds.
    ``frame_media``: how ``out`` stores image leaves, as :func:`rollway.run`'s (``"h264"``: as video;
    the default keeps them as lz4 frames).
    ``seed_each_episode``: every episode starts with ``reset(seed=...)`` of its own seed,
    so it can be replayed from that seed alone (needed with ``out``). ``False`` is
    Gymnasium's vector-env convention: each env is seeded at its first reset (and after
    a failure) and its later episodes continue its random stream. Fragments are as
    deterministic for a given ``seed`` either way; ``False`` saves what a Python env's
    ``reset(seed=...)`` costs (a new numpy ``Generator``: ~13 µs for CartPole, a tenth
    of the engine's time on random-policy CartPole, whose episodes last ~10 steps).
    The default is ``True``, except for ``atari:`` envs that record nothing: a seeded ALE
    reset reloads the ROM (~150 ms, half a random Pong episode's steps).
    ``episode_ids=(base, offset, slots)``: env slot ``i``'s ``j``-th episode is episode
    ``(base + j) * slots + offset + i`` (and seeded as ``rollway.run``'s episode of that
    index), instead of ``j * num_envs + i``; with ``join=(run, writer_id)``, ``out`` is an
    existing dataset whose run ``run`` this rollout writes as one of many writers. Both
    are how :class:`rollway.ray.Rollout`'s actors share one run.
    ``log_dir``: writes each fragment's stats as TensorBoard scalars into an event file
    there (``tensorboard --logdir DIR``; tags in :mod:`rollway._training_log`);
    ``progress``: a progress line on stderr, once a second (steps/s, episodes, the mean
    return of the last 100 episodes, the policy version, lag, dropped steps).
    ``resume=True``: continues the training run recorded at ``out`` after a crash or a
    preemption (or starts it, when nothing is there): the same dataset, a new run in it
    (each life of the learner is a run, so a report tells the kills from the clean end),
    every env slot numbering and seeding its episodes on from the last it committed (no
    committed id repeats; numbers of episodes lost with the crash are reused, with their
    seeds, as an unbroken rollout would have used them); the seed and the slot count
    (``num_envs``) must be the recorded ones. ``version``: the version the rollout acts as
    until the first :meth:`publish`: a resumed learner's, from its checkpoint. Steps its
    last life recorded after that checkpoint keep their (higher) versions. :attr:`resumed`
    then says what the replay held (``episodes``, ``steps``), and ``log_dir``'s x axis
    goes on from those steps. ``episode_starts``: each slot's episodes already taken, as
    :class:`rollway.ray.Rollout` gives its actors.
    """

    def __init__(
        self,
        env: Union[str, Callable[[], Any]],
        agent: Union[str, Callable[..., Any], None] = None,
        *,
        num_envs: int = 8,
        steps_per_fragment: int = STEPS_PER_FRAGMENT,
        seed: int = 0,
        workers: Optional[int] = None,
        mode: str = "sync",
        max_policy_lag: int = 0,
        max_restarts: int = 3,
        max_episode_steps: Optional[int] = None,
        step_timeout: Optional[float] = None,
        env_params: Optional[Mapping[str, Any]] = None,
        host: str = "auto",
        check: bool = True,
        out: Optional[Union[str, "os.PathLike[str]"]] = None,
        commit_every: float = 1.0,
        frame_media: Optional[str] = None,
        seed_each_episode: Optional[bool] = None,
        episode_ids: Optional[Tuple[int, int, int]] = None,
        join: Optional[Tuple[int, str]] = None,
        agent_params: Optional[Mapping[str, Any]] = None,
        log_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
        progress: bool = False,
        resume: bool = False,
        version: int = 0,
        episode_starts: Optional[List[int]] = None,
        **old_names: Any,
    ):
        policy, agent_params, steps_per_fragment = _old_names(old_names, "Rollout", agent, agent_params, steps_per_fragment)
        if max_policy_lag < 0:
            raise _rollway.InputError(f"max_policy_lag must be 0 or more, got {max_policy_lag}")
        if mode not in ("sync", "async"):
            raise _rollway.InputError(f"mode must be \"sync\" or \"async\", got {mode!r}")
        if getattr(policy, "rollway_draws", 0):
            raise _rollway.InputError("a rollway.policy.draws policy is for rollway.run, whose batches vary; a rollout calls "
                                      "its policy on the same N envs every step: seed your framework's generator instead")
        self._policy, self._env, self._env_params = policy, env, dict(env_params or {})
        if isinstance(policy, JaxPolicy):  # env and policy in one jitted call a fragment (rollway.batched_scan)
            try:
                policy = scan_for(env, env_params, policy, num_envs, workers, max_episode_steps)
            except ValueError as e:
                raise _rollway.InputError(str(e)) from None
            host, workers, self._policy = "inline", None, policy
        env, pickle, settings = _request(env, dict(
            env_params=env_params, agent_params=agent_params, seed=seed, num_envs=num_envs, workers=workers,
            mode=mode, steps_per_fragment=steps_per_fragment,
            max_policy_lag=max_policy_lag, max_restarts=max_restarts, max_episode_steps=max_episode_steps,
            step_timeout=step_timeout, host=host, check=check, out=out, commit_every=commit_every,
            frame_media=frame_media, seed_each_episode=seed_each_episode, episode_ids=episode_ids, join=join, resume=bool(resume),
            version=int(version), episode_starts=list(episode_starts or ())))
        self._h = _rollway.RolloutHandle(env, policy, settings, pickle, sys.executable)
        obs_json, act_json, limit = self._h.spec()
        self._obs, self._act = RowViews(obs_json), RowViews(act_json)
        self._stagings: Dict[str, Any] = {}
        self._spaces = (obs_json, act_json)
        self.num_envs, self.steps_per_fragment, self.max_policy_lag = int(num_envs), int(steps_per_fragment), int(max_policy_lag)
        self.steps = self.steps_per_fragment  # T, as each fragment's ``steps``
        # The episodes' limit: the rollout's cut or the env's own, whichever comes first (as nested TimeLimits).
        self.max_episode_steps: Optional[int] = min((x for x in (limit, max_episode_steps) if x is not None), default=None)
        self.resumed: Optional[Dict[str, int]] = None
        # What is wrong with the store (out="s3://…") as of the last collect(); None while it answers.
        self.store_trouble: Optional[str] = None
        if self._h.resumed is not None:
            _, episodes, steps = self._h.resumed
            self.resumed = dict(episodes=episodes, steps=steps)
        steps0 = self.resumed["steps"] if self.resumed else 0
        self._log = TrainingLog(log_dir, progress, steps0, self.resumed is not None) if log_dir is not None or progress else None

    @property
    def single_observation_space(self) -> Any:
        """One env's observation space (a ``gymnasium`` space)."""
        from rollway.spaces import from_json

        return from_json(self._spaces[0])

    @property
    def single_action_space(self) -> Any:
        """One env's action space (a ``gymnasium`` space)."""
        from rollway.spaces import from_json

        return from_json(self._spaces[1])

    def collect(self) -> Fragment:
        """The next fragment (waits for it with the GIL released). Values an env returned
        that Gymnasium would warn about are given as :class:`rollway.RollwayWarning`, each
        kind once; so is a store (``out="s3://…"``) that stops answering, when it does (the
        rollout goes on recording locally), and :attr:`store_trouble` says it meanwhile."""
        raw = self._h.collect()
        for w in raw.get("warnings", ()):
            warnings.warn(w, _rollway.RollwayWarning, stacklevel=2)
        trouble = self._h.store_trouble()
        if trouble is not None and self.store_trouble is None:
            warnings.warn(trouble, _rollway.RollwayWarning, stacklevel=2)
        self.store_trouble = trouble
        frag = Fragment(raw, self._obs, self._act, self._stagings)
        if self._log is not None:
            self._log.fragment(frag, self.version)
        return frag

    def publish(self, weights: Any = None, *, version: Optional[int] = None) -> int:
        """Makes the next policy version and returns it. ``weights`` (e.g. a
        ``state_dict``) go to ``policy.load(weights)``, called by the rollout between two
        batches; without them the policy is used as it is (enough at ``max_policy_lag=0``,
        where nothing runs while the learner trains). ``version``: the learner's own
        number for it, newer than :attr:`version` (else :class:`rollway.InputError`), for
        a rollout that acts for a learner counting elsewhere (a resumed run, a Ray actor):
        steps then carry, and a recording rollout stores, that number."""
        if weights is not None and isinstance(self._policy, str):
            raise _rollway.InputError(f"publish(weights): {self._policy!r} is a policy given by name (a built-in agent, an "
                                      "onnx: model), with no weights to load; publish() alone versions its steps")
        if weights is not None and not callable(getattr(self._policy, "load", None)):
            raise _rollway.InputError("publish(weights) needs a policy with a load(weights) method")
        return self._h.publish(weights, version)

    @property
    def version(self) -> int:
        """The latest published version (0 before any)."""
        return self._h.version

    @property
    def host_choice(self) -> Optional[str]:
        """Where ``host="auto"`` put Python envs by what one step of theirs costs, and the
        figures it weighed (``"process: a step costs 1.02 ms; 2 processes would save …"``);
        ``None`` when nothing was weighed (another host, given ``workers``, Rust envs)."""
        return self._h.host_choice

    def evaluate(self, policy: Optional[Callable[..., Any]] = None, *, episodes: int = 8, seed: int = 1_000_003,
                 out: Optional[Union[str, "os.PathLike[str]"]] = None) -> Dict[str, Any]:
        """Plays ``episodes`` evaluation episodes with the current policy, between updates,
        and returns ``{"version", "episodes", "steps", "return", "length"}`` (``return`` and
        ``length``: mean, std, min, max). ``policy``: the one
        to evaluate (the rollout's own when left out; give a greedy one, e.g. the argmax of
        the logits, for no exploration), called as a rollout's policy (a dict answer's
        ``"actions"`` and ``"state"`` are taken). The episodes run as ``rollway.run``'s on
        the rollout's env, one worker, with seeds of their own (``seed``: the same
        ``episodes`` seeds at every call, so checkpoints are compared on the same starts),
        apart from the rollout: nothing of them reaches the fragments or the replay. With
        ``out``, they are recorded (frames too) into the evaluation dataset there, a run per
        call, every step's ``policy_version`` the version evaluated: ``rollway report OUT``
        draws return by version and plays the earliest and the latest versions' episodes."""
        from rollway._run import run

        acting = self._policy if policy is None else policy
        if getattr(acting, "rollway_scan", False):
            raise _rollway.InputError("evaluate(): a JaxPolicy acts inside the rollout's jitted scan; give evaluate a "
                                      "Python policy (policy(obs, first, state) on numpy arrays)")
        if isinstance(acting, str):
            agent: Any = acting
        else:
            def agent(obs: Any, first: Any, state: Any) -> Any:
                out_ = acting(obs, first, state)
                if isinstance(out_, dict) and "actions" in out_:
                    return out_["actions"] if out_.get("state") is None else (out_["actions"], out_["state"])
                return out_
        s = run(self._env, agent, episodes=int(episodes), seed=int(seed), workers=1, env_params=self._env_params,
                max_episode_steps=self.max_episode_steps, out=out, append=out is not None, record=out is not None,
                progress=False, policy_version=self.version)
        return {"version": self.version, "episodes": int(s.episodes), "steps": int(s.steps), "return": dict(s.return_),
                "length": dict(s.length)}

    def __iter__(self) -> Iterator[Fragment]:
        while True:
            yield self.collect()

    def close(self) -> None:
        """Stops collecting and closes every env (hosted processes included); with
        ``out=``, stores the run's summary as a run does (``kind: "rollout"``, what it
        delivered: ``fragments``, ``steps``, ``episodes``, ``return_sum``, ``versions``
        (oldest, newest), ``lag_max``, ``env_faults``, ``dropped_steps``, ``seconds``,
        ``steps_per_sec``; and ``config``, its settings), commits the episodes that ended
        and closes the dataset. A rollout killed before ``close`` stores no summary: a
        report says so."""
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()
        self._h.close()

    def __enter__(self) -> "Rollout":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
