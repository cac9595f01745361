"""``rollway.ray.run``, the driver: one run spread over the actors of a Ray cluster, one dataset (the
package docs say how). ``python -m rollway.ray`` is its command line (``rollway run --backend ray``)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from rollway import _rollway
from rollway._run import PathLike, Summary, _path, _read_config, _settings, _sources, finished
from rollway.dataset import Dataset
from rollway.ray._common import _connect, _ray, _refuse_worker_names, close_run, hold_dataset, ray_failure

Range = Tuple[int, int]

def run(
    env: Union[str, Callable[[], Any], None] = None,
    agent: Union[str, Callable[..., Any], None] = None,
    *,
    out: Optional[PathLike] = None,
    num_actors: int = 2,
    num_cpus_per_actor: float = 1.0,
    num_gpus_per_actor: float = 0.0,
    resources_per_actor: Optional[Mapping[str, float]] = None,
    max_restarts: Optional[int] = None,
    address: Optional[str] = None,
    part_episodes: Optional[int] = None,
    resume: Optional[PathLike] = None,
    append: bool = False,
    episodes: Optional[int] = None,
    progress: bool = True,
    summary_json: Optional[PathLike] = None,
    config: Optional[PathLike] = None,
    **settings: Any,
) -> Summary:
    """Runs ``env`` and ``agent`` on ``num_actors`` Ray actors into ``out``; returns a :class:`rollway.Summary`.

    ``env``, ``agent`` and the other keyword arguments are ``rollway.run``'s (the config
    file's keys: ``workers`` and ``envs_per_worker`` size each actor's engine, ``seed``,
    ``filters``, ``frame_media``…); the target is a number of ``episodes``. Ray options:

    - ``num_actors``: actors (MineStudio's ``num_workers``; here ``workers`` are the
      threads of each actor's engine, as in a local run); each asks Ray for
      ``num_cpus_per_actor`` CPUs, ``num_gpus_per_actor`` GPUs (fractions share a GPU:
      0.5 puts two actors on one) and ``resources_per_actor`` (custom resources).
    - ``max_restarts``: how often Ray restarts a dead actor (default: the run's
      ``max_restarts``, 3); the run's own key also bounds env rebuilds in each actor.
    - ``address``: the cluster (``"auto"``, ``"HOST:PORT"``); left out, this process's
      Ray if ``ray.init`` was called, else the one ``$RAY_ADDRESS`` names, else a new local
      cluster for this run (never one an earlier ``ray start`` left recorded).
    - ``part_episodes``: episodes per task an actor is given. Each task starts the
      actor's engine afresh (for Python envs, new env processes: ~0.5 s), so by default
      each actor gets one task, an equal share of the episodes; smaller parts rebalance
      across unequal nodes at the cost of a start each.
    - ``out``: the dataset: a directory on storage every node sees, or an
      ``s3://bucket/prefix`` URL, for nodes that share no filesystem (each actor pushes its
      shards as it commits them; this process holds the dataset's lease meanwhile);
      ``append=True`` adds the run to an existing dataset; ``resume=DIR`` (or URL) finishes
      its last run (killed, or short of actors), ``episodes`` may raise its target.

    The summary is a local run's (episodes, steps, returns, labels…) computed from the
    committed index, plus ``backend``, ``actors``, ``actor_failures``, ``retried``
    (episodes run again after an actor died) and ``nodes``: per-node episodes, steps
    and steps per second. Actors are killed when the call returns, fails or is
    interrupted (Ctrl-C); committed episodes stay.
    """
    _refuse_worker_names(settings)
    if num_actors < 1:
        raise _rollway.InputError(f"num_actors={num_actors}: a Ray run needs at least one actor")
    if part_episodes is not None and part_episodes < 1:
        raise _rollway.InputError(f"part_episodes={part_episodes}: a part has at least one episode")
    ray = _ray()
    env, agent, pickle, policy = _sources(env, agent)
    if resume is not None and _rollway.resume_starts_afresh(os.fspath(resume), _given(env, agent, settings, episodes, config),
                                                            progress):
        # Killed before its dataset was set up: nothing to continue, the run starts afresh there.
        resume, out = None, resume
    target = os.fspath(resume) if resume is not None else _path(out)
    if target is None:
        raise _rollway.InputError("rollway.ray.run records into out=DIR (on storage every node of the cluster sees) "
                                  "or out=\"s3://bucket/prefix\"")
    # On an object store this process holds the dataset's lease while the actors write, and prepares
    # and closes the run in a local work directory; the actors write to the URL.
    want = "resume" if resume is not None else "append" if append else "new"
    hold = hold_dataset(target, want, f"out={target!r} already holds a dataset: resume= continues its last run, "
                                      "append=True records a new run after it")
    started = False
    try:
        started = _connect(ray, address)
        local = target if hold is None else os.fspath(hold.work_dir)
        if resume is not None:
            if settings or config is not None or out is not None:
                raise _rollway.InputError(f"resume={os.fspath(resume)!r} continues the stored run; only episodes= may be given")
            run_no, target_episodes, stored = _resumed(local, episodes)
        else:
            given = json.loads(_given(env, agent, settings, episodes, config))
            run_no, target_episodes, stored = _prepare(given, local, append, pickle, policy)
        if hold is not None:
            hold.flush()
        restarts = stored.get("max_restarts", 3) if max_restarts is None else max_restarts
        opts = dict(num_cpus=num_cpus_per_actor, num_gpus=num_gpus_per_actor, resources=dict(resources_per_actor or {}),
                    max_restarts=restarts)
        ledger = _Ledger(target, local, hold)
        driver = _Driver(ray, ledger, run_no, target_episodes, opts, num_actors, pickle, policy, part_episodes, progress)
        report = driver.drive()
        return _finish(report, ledger, run_no, summary_json)
    finally:
        try:
            if hold is not None:
                hold.finish()
        finally:
            if started:
                ray.shutdown()


def _given(env: Any, agent: Any, settings: Dict[str, Any], episodes: Optional[int], config: Optional[PathLike]) -> str:
    """The run's settings as the config file's keys, in JSON: the call's, over its config file's."""
    given = _settings(env, agent, dict(settings, episodes=episodes))
    if config is not None:
        given = {**_read_config(config), **given}
    return json.dumps(given)


class _Ledger:
    """Where the run's dataset is: ``root`` as the actors are given it (a directory, or an
    ``s3://`` URL), ``local`` the directory this process reads its index from and closes
    the run in (the same directory, or the hold's work directory, its index pulled)."""

    def __init__(self, root: str, local: str, hold: Any):
        self.root, self.local, self.hold = root, local, hold

    def committed(self, run_no: int) -> set:
        if self.hold is not None:
            self.hold.pull_index()
        return {e["run_index"] for e in Dataset(self.local).episodes if e["run"] == run_no}


def _prepare(given: Dict[str, Any], out: str, append: bool, pickle: Optional[bytes],
             policy: Any) -> Tuple[int, int, Dict[str, Any]]:
    """Records the run in ``out``: its run number, episode target and stored config."""
    if given.get("steps") is not None:
        raise _rollway.InputError("steps=: a Ray run's target is a number of episodes (episodes=)")
    _rollway.run(json.dumps(given), out=out, append=append, progress=False, env_pickle=pickle, agent_factory=policy,
                 python=sys.executable, prepare=True)
    runs = Dataset(out).metadata["runs"]
    return len(runs) - 1, int(runs[-1]["config"]["episodes"]), runs[-1]["config"]


def _resumed(root: str, episodes: Optional[int]) -> Tuple[int, int, Dict[str, Any]]:
    """The last run of ``root``, as :func:`_prepare` returns a new one (its target raised to ``episodes``)."""
    runs = Dataset(root).metadata["runs"]
    if not runs:
        raise _rollway.InputError(f"resume={root!r}: the dataset has no run to resume")
    target = runs[-1]["config"].get("episodes")
    if target is None:
        raise _rollway.InputError(f"resume={root!r}: its last run has a step target; a Ray run's target is episodes")
    if episodes is not None and episodes < target:
        raise _rollway.InputError(f"episodes={episodes}: the resumed run's target is {target}; it can only be raised")
    return len(runs) - 1, int(episodes if episodes is not None else target), runs[-1]["config"]


class _Member:
    """A Ray actor: one rollway engine, writing its parts into the dataset as one of many writers."""

    def __init__(self, root: str, run_no: int, pickle: Optional[bytes], policy: Any):
        self.root, self.run_no, self.pickle, self.policy = root, run_no, pickle, policy

    def ping(self) -> bool:
        return True

    def part(self, start: int, end: int) -> Dict[str, Any]:
        import ray

        # Unique per call: a restarted actor, or the same range given again, is a new writer.
        wid = f"r{self.run_no}-{start}-{end}-{uuid.uuid4().hex[:12]}"
        t = time.monotonic()
        report = _rollway.run(None, join=(self.root, f"{self.run_no}:{start}:{end}:{wid}"), progress=False,
                              env_pickle=self.pickle, agent_factory=self.policy, python=sys.executable)
        ctx = ray.get_runtime_context()
        return {"report": json.loads(report), "node": ctx.get_node_id(), "seconds": time.monotonic() - t,
                "resources": ctx.get_assigned_resources()}


def _ranges(indices: Sequence[int], size: int) -> List[Range]:
    """Sorted indices as contiguous ranges of at most ``size``."""
    out: List[Range] = []
    for i in indices:
        if out and out[-1][1] == i and out[-1][1] - out[-1][0] < size:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


class _Driver:
    """The ledger and the actors: hands out ranges, re-runs what a dead actor left."""

    def __init__(self, ray: Any, ledger: _Ledger, run_no: int, target: int, opts: Dict[str, Any], actors: int,
                 pickle: Optional[bytes], policy: Any, part: Optional[int], progress: bool):
        self.ray, self.ledger, self.run_no, self.target, self.show = ray, ledger, run_no, target, progress
        self.size, self.n = part, actors
        cls = ray.remote(_Member).options(max_task_retries=0, **opts)
        self.actors = [cls.remote(ledger.root, run_no, pickle, policy) for _ in range(actors)]
        self.parts: List[Dict[str, Any]] = []
        self.failures, self.retried, self.t0, self.shown = 0, 0, time.monotonic(), 0.0

    def committed(self) -> set:
        return self.ledger.committed(self.run_no)

    def drive(self) -> Dict[str, Any]:
        ray = self.ray
        have = self.committed()
        left = [i for i in range(self.target) if i not in have]
        # One part per actor unless told: an engine start costs more than the imbalance saves.
        self.size = self.size or max(1, -(-len(left) // self.n))
        todo = _ranges(left, self.size)
        idle = list(range(len(self.actors)))
        busy: Dict[Any, Tuple[int, Range]] = {}
        probing: Dict[Any, int] = {}
        try:
            while todo or busy:
                while todo and idle:
                    a, rng = idle.pop(0), todo.pop(0)
                    busy[self.actors[a].part.remote(*rng)] = (a, rng)
                if not busy and not probing:
                    break  # every actor is gone: what is left stays untried
                done, _ = ray.wait(list(busy) + list(probing), num_returns=1, timeout=1.0)
                self._tick()
                for ref in done:
                    if ref in probing:
                        a = probing.pop(ref)
                        state = self._ok(ref)
                        if state == "ok":
                            idle.append(a)
                        elif state == "restarting":
                            time.sleep(0.2)
                            probing[self.actors[a].ping.remote()] = a
                        continue
                    a, rng = busy.pop(ref)
                    if self._ok(ref, rng) == "ok":
                        idle.append(a)
                        continue
                    # The actor died: keep what it committed, run the rest again, and
                    # ask whether Ray brings it back (a ping answers once it has).
                    self.failures += 1
                    have = self.committed()
                    left = [i for i in range(*rng) if i not in have]
                    self.retried += len(left)
                    todo[:0] = _ranges(left, self.size)
                    probing[self.actors[a].ping.remote()] = a
            return self._report(todo)
        finally:
            for h in self.actors:
                ray.kill(h, no_restart=True)

    def _ok(self, ref: Any, rng: Optional[Range] = None) -> str:
        """A part's result (kept) or a ping's: ``"ok"``; ``"restarting"`` while Ray brings
        the actor back (a node being replaced); ``"gone"`` when it is dead for good (or,
        for a part, when it died during it). Other errors are the part's own: raised."""
        try:
            res = self.ray.get(ref)
        except Exception as e:  # noqa: BLE001 - sorted by Ray's error types
            return ray_failure(e)
        if rng is not None:
            self.parts.append(res)
        return "ok"

    def _tick(self, last: bool = False) -> None:
        # Reading the index costs a file per shard: at most once a second.
        if not self.show or (not last and time.monotonic() - self.shown < 1.0):
            return
        self.shown = time.monotonic()
        n = len(self.committed())
        rate = n / max(time.monotonic() - self.t0, 1e-9)
        print(f"\rrollway.ray: {n}/{self.target} episodes committed, {rate:.1f}/s, {len(self.actors)} actors, "
              f"{self.failures} actor failures", end="", file=sys.stderr, flush=True)

    def _report(self, todo: List[Range]) -> Dict[str, Any]:
        if self.show:
            self._tick(last=True)
            print(file=sys.stderr)
        return {"parts": self.parts, "seconds": time.monotonic() - self.t0, "actors": len(self.actors),
                "actor_failures": self.failures, "retried": self.retried,
                "untried": sum(b - a for a, b in todo)}


def _summary(root: str, run_no: int, report: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[str]]:
    """The run's summary as a local run's (counted in Rust from the committed index,
    with the parts' failed attempts and restarts), plus Ray's own fields; and its
    shortfall, if any."""
    parts = json.dumps([p["report"]["summary"] for p in report["parts"]])
    out = json.loads(_rollway.run_summary(root, run_no, parts, report["untried"], report["seconds"]))
    summary, secs = out["summary"], report["seconds"]
    nodes: Dict[str, Dict[str, Any]] = {}
    for p in report["parts"]:
        s = p["report"]["summary"]
        n = nodes.setdefault(p["node"], {"parts": 0, "episodes": 0, "steps": 0, "busy_seconds": 0.0})
        n["parts"] += 1
        n["episodes"] += s["episodes"] + s["given_up"]
        n["steps"] += s["steps"]
        n["busy_seconds"] += p["seconds"]
        n["resources"] = p["resources"]  # what Ray gave the actor: CPU, GPU (fractions), custom
    for n in nodes.values():
        n["steps_per_sec"] = n["steps"] / secs if secs else 0.0
    summary.update(backend="ray", actors=report["actors"], actor_failures=report["actor_failures"],
                   retried=report["retried"], nodes=nodes)
    return summary, out["shortfall"]


def _finish(report: Dict[str, Any], ledger: _Ledger, run_no: int, summary_json: Optional[PathLike]) -> Summary:
    if ledger.hold is not None:
        ledger.hold.pull_index()
    summary, short = _summary(ledger.local, run_no, report)
    written = json.loads(close_run(ledger.local, run_no, json.dumps(summary)))
    if ledger.hold is not None:
        ledger.hold.finish()  # the summary pushed, what killed actors left settled, the lease given back
    if summary_json is not None:
        with open(os.fspath(summary_json), "w") as f:
            json.dump(summary, f, indent=2)
    return finished({"summary": summary, "out": ledger.root, "written": written, "shortfall": short})


def read_dataset(path: PathLike, **read_parquet_args: Any) -> Any:
    """The committed steps of a rollway dataset as a ``ray.data.Dataset`` (one row per step).

    Only shards whose index is committed are read — never a file without its index —
    wherever each file is at the moment (published, or still staged); episodes
    committed later are not included (call again). An ``s3://`` dataset is read from the
    store by every node (pyarrow's S3 filesystem, configured by the ``AWS_*`` variables),
    its committed files named by the index. ``read_parquet_args`` go to
    ``ray.data.read_parquet``. Without a Ray in this process, it starts one as
    :func:`run` does (the cluster ``$RAY_ADDRESS`` names, else a new local one), which
    stays up for the dataset's reads.
    """
    ray = _ray()
    target = os.fspath(path)
    handle = _rollway.DatasetHandle(target, False)
    files = [os.fspath(p) for p in handle.parquet_files()]
    if not files:
        raise _rollway.InputError(f"{target}: no committed steps to read")
    if _rollway.HeldDataset.is_remote(target):
        # This machine's replica is not the other nodes': name the store's objects instead.
        root = os.fspath(handle.root)
        files = [target.rstrip("/") + "/" + os.path.relpath(f, root).replace(os.sep, "/") for f in files]
    # ray.data would start Ray on its own, joining whatever cluster `ray start` last recorded here;
    # this starts it as a run does (this process's Ray, $RAY_ADDRESS's, else a new local one).
    _connect(ray, None)
    return ray.data.read_parquet(files, **read_parquet_args)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``rollway run --backend ray`` hands its resolved settings here (``python -m rollway.ray``).

    Exit codes as ``rollway run``'s: 0 done, 1 episodes given up or untried (or the run
    failed), 2 bad input (settings, dataset, address, Ray missing).
    """
    import argparse

    p = argparse.ArgumentParser(prog="python -m rollway.ray", description="The driver of `rollway run --backend ray`.")
    p.add_argument("--settings", help="the run's settings: the config file's keys, as JSON")
    p.add_argument("--out")
    p.add_argument("--append", action="store_true")
    p.add_argument("--resume")
    p.add_argument("--episodes", type=int)
    p.add_argument("--address")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--summary-json")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    common = dict(address=a.address, num_actors=a.actors, progress=not a.quiet, summary_json=a.summary_json)
    try:
        if a.resume is not None:
            s = run(resume=a.resume, episodes=a.episodes, **common)
        else:
            # Output files are the driver's own options (here --summary-json), not settings.
            settings = {k: v for k, v in json.loads(a.settings or "{}").items()
                        if v is not None and k not in ("summary_json", "episodes_json")}
            s = run(out=a.out, append=a.append, **common, **settings)
    except _rollway.IncompleteRunError as e:
        print(f"rollway: {e}", file=sys.stderr)
        s = e.summary
    except (_rollway.InputError, ModuleNotFoundError) as e:
        print(f"rollway: error: {e}", file=sys.stderr)
        return 2
    except _rollway.RollwayError as e:
        print(f"rollway: failed: {e}", file=sys.stderr)
        return 1
    f = s.to_dict()
    print(f"  {'episodes':<18} {f['episodes']} ({f['given_up']} given up, {f['untried']} untried)")
    print(f"  {'steps':<18} {f['steps']} in {f['seconds']:.1f} s ({f['steps_per_sec']:.0f}/s)")
    print(f"  {'actors':<18} {f['actors']} ({f['actor_failures']} failed; {f['retried']} episodes run again)")
    for node, n in sorted(f["nodes"].items()):
        print(f"  {'node ' + node[:12]:<18} {n['episodes']} episodes, {n['steps_per_sec']:.0f} steps/s")
    print(f"  {'dataset':<18} {s.out}")
    return 0 if s.complete else 1
