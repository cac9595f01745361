"""``rollway.run``: the ``rollway run`` command as a function."""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from rollway import _rollway

PathLike = Union[str, "os.PathLike[str]"]


class Summary:
    """What a run did: every field of ``rollway run --summary-json`` as an attribute.

    ``episodes``, ``steps``, ``terminated``, ``truncated``, ``given_up``, ``untried``,
    ``labels`` (label → count), ``label_rates``, ``return_`` and ``length`` (mean/std/min/max),
    ``steps_per_sec``, ``seconds``, ``calibration`` (how envs per worker and the mode were measured, or
    None), ``faults`` (failed attempts, with their errors), ``warnings`` (values an env returned that
    Gymnasium would warn about), ``inference`` (what ran an ``onnx:`` agent's model: engine,
    device, threads and the bound inputs and outputs; None for other agents), … plus ``out`` (the dataset directory, or None),
    ``written`` (what this run committed) and ``resumed`` (where a resumed run began).
    """

    def __init__(self, report: Mapping[str, Any]):
        self._fields: Dict[str, Any] = dict(report["summary"])
        self.out: Optional[str] = report.get("out")
        self.written: Optional[Dict[str, int]] = report.get("written")
        self.resumed: Optional[Dict[str, int]] = report.get("resumed")

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        if name == "return_" and "return" in fields:
            return fields["return"]
        if name == "calibration":
            return None  # the run was given its envs per worker, or had no choice to make
        if name == "inference":
            return None  # the agent runs no model
        raise AttributeError(f"Summary has no field {name!r}; fields: {', '.join(sorted(fields))}")

    @property
    def complete(self) -> bool:
        """True when no episode was given up or left untried (the CLI's exit code 0)."""
        return not self._fields.get("given_up") and not self._fields.get("untried")

    def to_dict(self) -> Dict[str, Any]:
        """The summary JSON's fields, plus ``out``, ``written`` and ``resumed``."""
        return {**self._fields, "out": self.out, "written": self.written, "resumed": self.resumed}

    def __repr__(self) -> str:
        f = self._fields
        return (
            f"Summary(env={f.get('env')!r}, agent={f.get('agent')!r}, episodes={f.get('episodes')}, "
            f"steps={f.get('steps')}, given_up={f.get('given_up')}, out={self.out!r})"
        )


def _duration(x: Union[str, float, int, None]) -> Union[str, float, None]:
    # Text with a unit goes as given; a number is seconds, which the engine takes as such.
    if x is None or isinstance(x, str):
        return x
    return float(x)


def _batch(x: Union[str, Tuple[int, int], Sequence[int], None]) -> Optional[str]:
    if x is None or isinstance(x, str):
        return x
    lo, hi = x
    return f"{int(lo)}:{int(hi)}"


def _params(x: Optional[Mapping[str, Any]]) -> Optional[Dict[str, str]]:
    if x is None:
        return None
    return {str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in x.items()}


def _sources(env: Any, agent: Any) -> Tuple[Optional[str], Optional[str], Optional[bytes], Optional[Tuple[str, Any]]]:
    """Env and agent as the names a run records, with a callable env pickled for the env
    processes and a callable agent kept as the policy: ``(env, agent, pickle, policy)``."""
    pickle = policy = None
    _refuse_env_instance(env)
    if callable(env):
        env, pickle = _env_factory(env)
    if callable(agent):
        from rollway.policy import name_of

        policy = (name_of(agent), agent)
        agent = policy[0]
    return env, agent, pickle, policy


def _settings(env: Optional[str], agent: Optional[str], kw: Mapping[str, Any]) -> Dict[str, Any]:
    """Keyword arguments as the config file's keys (what the binding takes as JSON): durations,
    batch bounds and parameter tables in their file form; unset ones left out."""
    form: Dict[str, Callable[[Any], Any]] = {
        "batch": _batch, "max_wait": _duration, "step_timeout": _duration, "env_params": _params,
        "agent_params": _params, "filters": lambda f: None if f is None else list(f),
    }
    given = {"env": env, "agent": agent, **{k: form[k](v) if k in form else v for k, v in _renamed(kw).items()}}
    if "image_media" in given:
        given["frame_media"] = given.pop("image_media")
    return {k: (os.fspath(v) if isinstance(v, os.PathLike) else v) for k, v in given.items() if v is not None}




def _renamed(given: Mapping[str, Any], where: str = "", renames: Optional[Sequence[Tuple[str, str]]] = None,
             stacklevel: int = 4) -> Dict[str, Any]:
    """``given`` with each setting named by its old name (``renames``, the engine's list: a run's
    ``_rollway.RENAMED_SETTINGS`` unless told) under its new one, warned of as deprecated (the
    warning points ``stacklevel`` frames up, at the user's call); both names given is an error."""
    out = dict(given)
    for old, new in _rollway.RENAMED_SETTINGS if renames is None else renames:
        if out.get(old) is None:
            out.pop(old, None)
            continue
        value = out.pop(old)
        if out.get(new) is not None and out[new] != value:
            raise _rollway.InputError(f"{where}{old}={value!r} and {new}={out[new]!r}: {old} is {new}'s old name; give {new} only")
        warnings.warn(f"{where}{_rollway.renamed_warning(old, new)}", DeprecationWarning, stacklevel=stacklevel)
        out[new] = value
    return out


def _refuse_env_instance(env: Any, where: str = "env=",
                         instead: str = 'a factory, `env=lambda: gym.make(...)`, or a Gymnasium id, `env="gym:ID"`') -> None:
    """An env object (``gym.make(...)``) where a name or a factory belongs: rollway makes an env
    per slot, in processes of its own, so it needs to know how to make one, not one made.
    ``where`` names the argument, ``instead`` what it takes."""
    if env is None or isinstance(env, str) or isinstance(env, type) or not hasattr(env, "step") or not hasattr(env, "reset"):
        return
    raise _rollway.InputError(
        f"{where} got an env instance ({type(env).__name__}); rollway makes one env per slot, in processes of its own: pass "
        f"{instead}")


def _env_factory(env: Callable[[], Any]) -> Tuple[str, bytes]:
    # A callable env travels to the env processes pickled by value (lambdas and
    # closures too), with the Gymnasium registrations this process made, so that
    # `gym.make(id)` finds there what it finds here (see `_host.Registered`); runs
    # record it as `python:<its name>`.
    import cloudpickle

    from rollway._host import Registered
    from rollway.policy import name_of

    try:
        return name_of(env), cloudpickle.dumps(Registered.of(env))
    except Exception:  # a registration that does not pickle: the env alone, as before
        return name_of(env), cloudpickle.dumps(env)


def run(
    env: Union[str, Callable[[], Any], None] = None,
    agent: Union[str, Callable[..., Any], None] = None,
    *,
    workers: Optional[int] = None,
    envs_per_worker: Optional[int] = None,
    episodes: Optional[int] = None,
    steps: Optional[int] = None,
    max_episode_steps: Optional[int] = None,
    seed: Optional[int] = None,
    mode: Optional[str] = None,
    batch: Union[str, Tuple[int, int], None] = None,
    max_wait: Union[str, float, None] = None,
    max_restarts: Optional[int] = None,
    max_attempts: Optional[int] = None,
    step_timeout: Union[str, float, None] = None,
    filters: Optional[List[str]] = None,
    env_params: Optional[Mapping[str, Any]] = None,
    agent_params: Optional[Mapping[str, Any]] = None,
    out: Optional[PathLike] = None,
    resume: Optional[PathLike] = None,
    append: bool = False,
    record: bool = True,
    progress: bool = True,
    config: Optional[PathLike] = None,
    host: str = "auto",
    **more: Any,
) -> Summary:
    """Runs envs and an agent in parallel, like ``rollway run``; returns a :class:`Summary`.

    ``env`` is a built-in env id (``rollway.envs()``), ``"gym:ID"`` (any registered
    Gymnasium env; ``env_params`` are ``gymnasium.make`` keyword arguments),
    ``"pz:MODULE"`` (a PettingZoo env's ``parallel_env(**env_params)``), ``"module:callable"``,
    or a callable returning a Gymnasium env or a PettingZoo ``ParallelEnv`` (a lambda is fine:
    it is pickled with cloudpickle); callables are called with ``env_params``. A ``ParallelEnv``
    runs as one env whose rows are its agents (``rollway.multiagent``). Python envs run in worker processes, a block of
    envs per process, stepped through shared memory; ``step_timeout`` (seconds or a
    duration string) kills a process whose envs take longer for one round, and an
    exception or a dead process costs the episodes involved one attempt each.
    ``host``: ``"process"`` keeps them there; ``"inline"`` steps them all in this
    thread, in turn with the agent (sync mode, one worker; no pipe round trip per step,
    no process to start: faster for cheap envs on few cores, but a hang cannot be killed
    and a crash takes this process with it); ``"auto"`` (the default) keeps processes,
    except in a run of at least 100,000 steps or 2,000 episodes without
    ``step_timeout``, which measures both at its start (processes first) and takes the
    faster, reported in
    ``Summary.calibration["host"]``. The episodes are the same either way.

    ``agent`` is a built-in agent (``rollway.agents()``), ``"onnx:PATH"`` (a network
    exported with ``torch.onnx.export``, run natively by ONNX Runtime or tract (where the
    build has it: ``rollway._rollway.ONNX_ENGINES``; the wheel does) with no Python in the loop; ``agent_params`` such as ``backend``, ``device``, ``threads``,
    ``sample`` and ``extras`` are listed by ``rollway.agents()``), or a Python policy
    ``policy(obs, first, state)`` returning actions or ``(actions, state)``, called once per batch on
    numpy arrays (see :mod:`rollway.policy`; a torch module needs a two-line adapter).

    The keyword arguments are the keys of ``rollway run --config FILE`` (the TOML
    file), with the same defaults and checks: ``rollway.run()`` alone runs the default
    job (``PixelMine-v0`` with the scripted miner, recorded under ``./rollway-data``).
    Others: ``record_infos``, ``max_buffer_steps``, ``max_buffer_episodes``, ``commit_every`` (seconds
    between commits at the least while episodes arrive; default 2, as a rollout's ``commit_every``),
    ``frame_media`` (alias ``image_media``: ``lz4``, ``raw``, ``jpeg``, ``h264``), ``crf``,
    ``preset``, ``keyint``, ``fps``, ``jpeg_quality``, ``x264_params``, ``summary_json``,
    ``episodes_json``, ``check`` (``False`` skips the checks of actions, observations and
    rewards against their spaces), ``policy_version`` (recorded as every step's policy version:
    an evaluation of a learner's checkpoint).

    - ``episodes``, ``steps``: the run's target, in episodes or in env steps over all envs
      (the default: 64 episodes; the default job 16); ``max_episode_steps``: cut each episode at
      this many steps (recorded as truncated, as Gymnasium's time limit and ``Rollout`` do;
      ``max_steps``, its old name, is taken with a ``DeprecationWarning`` until 0.2); ``seed``: the run seed (episode ``i`` always
      gets the same env seed and agent stream, whatever the workers; default 0).
    - ``max_attempts``: attempts per episode before it is given up (default 3);
      ``max_restarts``: env rebuilds a worker may make in a row (default 3; the count
      starts again when an episode finishes, so a flaky env does not use it up).
    - ``filters``: label filters, as ``rollway run --filter`` takes them
      (``"key=mine_block,val=diamond.*,num=1,label=diamond"``, ``"kind=return,min=100,label=good"``,
      ``"kind=length,max=50,label=short"``).
    - ``record``: ``False`` records nothing (the default job otherwise records under
      ``./rollway-data``; with ``out=`` it is refused); ``progress``: the progress line on
      stderr while it runs.
    - ``workers``, ``envs_per_worker``, ``mode`` (``"sync"``/``"async"``): left out, they are
      chosen for speed: a worker per core, and envs per worker measured by a short
      calibration at start (built-in envs with a large enough target; reported as
      ``Summary.calibration``), which also tries sync at that size and keeps it when it
      is 5% faster than async (the mode otherwise); episodes are the same whatever they are.
    - ``batch``: ``(min, max)`` envs per agent call (``max`` 0: all); ``max_wait``: seconds
      or a duration string (``"2ms"``).
    - ``out``: record into this new dataset directory (``append=True`` adds a run to an
      existing one); ``resume``: continue the last run of that dataset exactly where its
      committed episodes end: the run's own call with ``resume=out`` added does it
      (``episodes``/``steps`` may raise its target; any other setting given must equal the
      stored one, and each that differs is named; an env or agent that was a Python
      callable is passed again, as ``env=``/``agent=``).
    - ``config``: a TOML config file; keyword arguments override its keys.

    Ctrl-C stops the run: the finished episodes are committed, then
    ``KeyboardInterrupt`` is raised, and ``run(resume=out)`` continues it.

    A run that ends short (episodes given up after ``max_attempts`` failed attempts, or
    left untried when every worker used up its ``max_restarts``) raises
    :class:`IncompleteRunError` with the :class:`Summary` as ``err.summary``; what it
    finished is committed. When a Python policy's exception failed it, that exception, with
    its traceback, is the error's ``__cause__`` (as ``Rollout.collect`` raises it). Actions, observations and rewards are checked (``check=False``
    skips it): a wrong one fails its attempt, naming the env slot, the value and the space;
    values Gymnasium would only warn about are given as :class:`RollwayWarning`.
    """
    env, agent, pickle, policy = _sources(env, agent)
    settings = _settings(env, agent, dict(
        workers=workers, envs_per_worker=envs_per_worker, episodes=episodes, steps=steps, max_episode_steps=max_episode_steps,
        seed=seed, mode=mode, batch=batch, max_wait=max_wait, max_restarts=max_restarts, max_attempts=max_attempts,
        step_timeout=step_timeout, filters=filters, env_params=env_params, agent_params=agent_params, **more))
    common: Dict[str, Any] = dict(out=_path(out), append=append, record=record, progress=progress, python=sys.executable,
                                  host=host)
    if config is not None:
        settings = {**_renamed(_read_config(config), f"config {os.fspath(config)}: ", stacklevel=3), **settings}
    # With resume=, the settings given must equal the stored ones (episodes/steps may
    # raise the target): the same call with resume= added continues its run. A callable
    # env or agent cannot be stored, so a run made with one is resumed by passing it again.
    _rollway.take_policy_error()  # one a run before this left behind is not this run's
    try:
        report = _rollway.run(json.dumps(settings), resume=_path(resume), env_pickle=pickle, agent_factory=policy, **common)
    except _rollway.RollwayError as e:
        # A Python policy's own exception, with its traceback, is what the run failed of.
        cause = _rollway.take_policy_error()
        if cause is None or e.__cause__ is not None:
            raise
        raise e from cause
    return finished(json.loads(report), _rollway.take_policy_error())


def finished(report: Mapping[str, Any], cause: Optional[BaseException] = None) -> Summary:
    """The summary of a run that ended: its warnings given as :class:`RollwayWarning`, and
    :class:`IncompleteRunError` raised when it ended short (the CLI's exit code 1), from
    ``cause`` (the last exception a Python policy raised) when there is one."""
    summary = Summary(report)
    for w in summary.to_dict().get("warnings") or []:
        warnings.warn(w, _rollway.RollwayWarning, stacklevel=3)
    text = report.get("shortfall")
    if text:
        if summary.out is not None and summary.untried:
            text += f"; rollway.run(resume={summary.out!r}) runs the untried ones"
        e = _rollway.IncompleteRunError(f"run ended short: {text}")
        e.summary = summary
        raise e from cause
    return summary


def _path(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


def _read_config(path: PathLike) -> Dict[str, Any]:
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as f:
        try:
            return tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise InputError_(f"config {os.fspath(path)}: {e}") from None


InputError_ = _rollway.InputError


def envs() -> List[Dict[str, Any]]:
    """The built-in envs (``rollway envs``): id, summary, spaces, time limit, parameters."""
    return _rollway.envs()


def agents() -> List[Dict[str, Any]]:
    """The agents (``rollway agents``): the built-in ones and ``onnx:PATH``, with name, summary, envs and parameters."""
    return _rollway.agents()
