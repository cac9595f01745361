"""The env process of a run hosting Python envs: ``python -m rollway._host``.

A worker thread of the run starts this module, sends it a setup (which env, how
many slots, the shared memory region) on stdin, and then drives it round by round;
the protocol and the round loop are in Rust (``rollway_host`` and
``_rollway.host_serve``). This module only does what must be Python: turn the
setup's target into an env factory and read the first env's spec.

Targets: ``gym:ID`` (``gymnasium.make(ID, **params)``), ``module:callable``
(``callable(**params)``), or a callable pickled with cloudpickle (``rollway.run(env=f)``).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from typing import Any, Callable, Dict, Tuple


def _value(text: str) -> Any:
    # Parameters arrive as text (`--env-opt size=64`): numbers, booleans, lists and
    # null are read as JSON, anything else stays a string.
    try:
        return json.loads(text)
    except ValueError:
        return text


def resolve(target: str, params: Dict[str, str], pickled: bytes) -> Callable[[], Any]:
    """The env factory a setup names."""
    kwargs = {k: _value(v) for k, v in params.items()}
    if pickled:
        import cloudpickle

        fn = cloudpickle.loads(pickled)
        return lambda: fn(**kwargs)
    kind, _, rest = target.partition(":")
    if kind == "python":
        raise ValueError(f"{target} was a Python callable given to rollway.run(env=...), which a dataset cannot store: "
                         "resume the run from Python, passing it again: rollway.run(resume=DIR, env=callable)")
    if kind == "gym":
        import gymnasium

        return lambda: gymnasium.make(rest, **kwargs)
    module = importlib.import_module(kind)
    obj: Any = module
    for part in rest.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is a {type(obj).__name__}, not a callable that makes an env")
    return lambda: obj(**kwargs)


def prepare(setup_json: str, pickled: bytes) -> Tuple[Any, ...]:
    """``(make, first_env, spec_json, pack_obs, unpack_act, dump_info)`` for a setup."""
    from rollway.spaces import dump_info, env_spec, packer, unpacker

    setup = json.loads(setup_json)
    make = resolve(setup["target"], setup["params"], pickled)
    env = make()
    for m in ("reset", "step"):
        if not callable(getattr(env, m, None)):
            raise TypeError(f"{setup['target']} made a {type(env).__name__}, which has no {m}(): not a Gymnasium env")
    spec = env_spec(env)
    return make, env, json.dumps(spec), packer(spec["observation_space"]), unpacker(spec["action_space"]), dump_info


def main() -> None:
    # The run stops its env processes itself; a Ctrl-C meant for it must not kill them mid-step.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Replies go to the original stdout; anything the env prints goes to stderr instead.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from rollway import _rollway

    _rollway.host_serve(reply_fd, prepare)


if __name__ == "__main__":
    main()
