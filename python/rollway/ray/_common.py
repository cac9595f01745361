"""What ``rollway.ray``'s run driver (:mod:`rollway.ray.driver`) and its training rollout
(:mod:`rollway.ray.rollout`) share: reaching Ray, telling an actor that is gone from one
being restarted and from a task's own error, shipping user code, and closing a run whose
actors have just been killed. Both modules import this one, never each other."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Mapping, Optional

from rollway import _rollway

# Errors that mean "the actor (or its node) is gone", not "the part failed".
# (ActorUnavailableError, "restarting", is told apart first: see _Driver._ok.)
_GONE = ("RayActorError", "ActorDiedError", "WorkerCrashedError", "NodeDiedError", "OwnerDiedError", "ObjectLostError")


def _own_error(e: BaseException) -> BaseException:
    """What a Ray task error wraps (the policy's, an env's or rollway's own exception), else the error itself."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ModuleNotFoundError(
            "rollway.ray needs Ray in this Python: pip install 'ray>=2.9' (every node of the cluster needs "
            f"ray and rollway) [{e}]"
        ) from None
    return ray


# MineStudio's names for the actor options: here `workers` sizes each actor's engine.
_ACTOR_OPTIONS = {"num_workers": "num_actors", "num_cpus_per_worker": "num_cpus_per_actor",
                  "num_gpus_per_worker": "num_gpus_per_actor", "resources_per_worker": "resources_per_actor"}


def _refuse_worker_names(settings: Mapping[str, Any]) -> None:
    """A MineStudio-style ``num_workers=`` is refused with the name to use, not taken as a run setting."""
    for old, new in _ACTOR_OPTIONS.items():
        if old in settings:
            raise _rollway.InputError(f"{old}=: Ray actors are {new}= (workers= is the threads of each actor's engine)")



def ray_failure(e: BaseException) -> str:
    """A Ray task's error sorted: ``"restarting"`` while Ray brings the actor back (a node
    being replaced), ``"gone"`` when the actor (or its node) died; else the task's own
    error (the policy's, an env's, rollway's) is raised as it was."""
    kinds = {c.__name__ for c in type(e).__mro__}
    if "ActorUnavailableError" in kinds:
        return "restarting"
    if kinds & set(_GONE):
        return "gone"
    raise _own_error(e) from None


def close_run(root: str, run_no: int, summary: Optional[str]) -> str:
    """Closes run ``run_no`` of ``root`` with its summary JSON, right after its actors were
    killed: a killed actor's dataset lock goes with its process, moments later."""
    for wait in (0.0, 0.1, 0.3, 1.0, 2.0, 4.0):
        time.sleep(wait)
        try:
            return _rollway.close_run(root, run_no, summary)
        except _rollway.DatasetLockedError:
            if wait == 4.0:
                raise
    raise AssertionError("unreachable")


def hold_dataset(target: Optional[str], want: str, refusal: str) -> Any:
    """For an ``s3://`` dataset, this process's hold on it (``_rollway.HeldDataset``): the
    lease, kept while the actors write, and a local work directory to prepare and close the
    run in; ``want`` is ``"new"`` (refused with ``refusal`` when a dataset is there),
    ``"append"`` or ``"resume"``. None for a directory, which every node must see."""
    if target is None or not _rollway.HeldDataset.is_remote(target):
        return None
    return _rollway.HeldDataset(target, want, refusal)


def _connect(ray: Any, address: Optional[str]) -> bool:
    """Connects to Ray; True when this call started it (and so shuts it down)."""
    if ray.is_initialized():
        return False
    if address is None and not os.environ.get("RAY_ADDRESS"):
        # Left alone, ray.init() joins the cluster a `ray start` on this machine last recorded
        # (/tmp/ray/ray_current_cluster), even one long gone; the promise is a new local cluster.
        address = "local"
    if address not in (None, "auto", "local"):
        # ray.init retries an address nothing listens at for minutes: ask first, briefly.
        import socket

        host, _, port = address.removeprefix("ray://").rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except (OSError, ValueError) as e:
            raise _rollway.InputError(f"address={address!r}: no Ray cluster answered there ({e})") from None
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise _rollway.InputError(f"address={address!r}: no Ray cluster answered there ({e})") from None
    return True



def ship_by_value(ray: Any, *objs: Any) -> None:
    """The modules of ``objs`` (an env callable, a policy) travel to the actors by value when
    they are not installed packages: a script's folder, a folder put on this process's
    ``sys.path``, a notebook. Installed packages (site-packages, like rollway itself) must be
    on every node anyway and go by reference, as Ray sends them."""
    import sysconfig

    installed = tuple(os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib"))
    for obj in objs:
        mod = sys.modules.get(getattr(obj, "__module__", None) or "")
        path = getattr(mod, "__file__", None)
        if mod is None or path is None or mod.__name__.split(".")[0] in ("rollway", "builtins"):
            continue  # __main__ without a file goes by value anyway
        if not os.path.realpath(path).startswith(installed):
            ray.cloudpickle.register_pickle_by_value(mod)


