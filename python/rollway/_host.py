"""The env process of a run hosting Python envs: ``python -m rollway._host``.

A worker thread of the run starts this module, sends it a setup (which env, how
many slots, the shared memory region) on stdin, and then drives it round by round;
the protocol and the round loop are in Rust (``rollway_host`` and
``_rollway.host_serve``). This module only does what must be Python: turn the
setup's target into an env factory and read the first env's spec.

Targets: ``gym:ID`` (``gymnasium.make(ID, **params)``), ``atari:GAME`` (ALE with
rollway's own preprocessing, see ``rollway._atari``), ``pz:MODULE`` (a PettingZoo env's
``parallel_env(**params)``, see ``rollway.multiagent``), ``vec:ID`` (a Gymnasium vector env,
``rollway.batched_vec``), ``vmas:SCENARIO`` (``rollway.batched_torch``), ``module:callable``
(``callable(**params)``), or a callable pickled with cloudpickle (``rollway.run(env=f)``).
A ``ParallelEnv`` any of them makes runs as one env whose rows are its agents.

Envs made with ``render_mode="rgb_array"`` (``env_params={"render_mode": "rgb_array"}``
for ``gym:`` ids) have their ``render()`` frame recorded with every observation, under
the key ``render`` (see :class:`Rendered`).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from typing import Any, Callable, Dict, List, Tuple

from rollway.spaces import RENDER_KEY


def _value(text: str) -> Any:
    # Parameters arrive as text (`--env-opt size=64`): numbers, booleans, lists and
    # null are read as JSON, anything else stays a string.
    try:
        return json.loads(text)
    except ValueError:
        return text


def resolve(target: str, params: Dict[str, str], pickled: bytes) -> Callable[..., Any]:
    """The env factory a setup names."""
    kwargs = {k: _value(v) for k, v in params.items()}
    if pickled:
        import cloudpickle

        fn = cloudpickle.loads(pickled)
        # `more`: a vector env's factory is also given num_envs (rollway.batched_vec).
        return lambda **more: fn(**kwargs, **more)
    kind, _, rest = target.partition(":")
    if kind == "python":
        raise ValueError(f"{target} was a Python callable given to rollway.run(env=...), which a dataset cannot store: "
                         "resume the run from Python, passing it again: rollway.run(resume=DIR, env=callable)")
    if kind == "gym":
        return lambda: _gym_make(rest, kwargs)
    if kind == "pz":
        from rollway.multiagent import make_pz

        return lambda: make_pz(rest, kwargs)
    if kind == "vec":
        from rollway.batched_vec import make_vec_of

        return make_vec_of(rest, kwargs)
    if kind == "vmas":
        from rollway.batched_torch import make_vmas_of

        return make_vmas_of(rest, kwargs)
    module = importlib.import_module(kind)
    obj: Any = module
    for part in rest.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{target} is a {type(obj).__name__}, not a callable that makes an env")
    return lambda **more: obj(**kwargs, **more)


def _gym_make(env_id: str, kwargs: Dict[str, Any]) -> Any:
    """``gymnasium.make(env_id)``; an id of a namespace no module registered in this (fresh)
    process says how to name the module that does."""
    import gymnasium

    try:
        return gymnasium.make(env_id, **kwargs)
    except gymnasium.error.NamespaceNotFound as e:
        ns = env_id.split(":")[-1].split("/")[0]
        raise gymnasium.error.NamespaceNotFound(
            f"{e} An env process is a fresh Python: name the module that registers the {ns} namespace before the id, "
            f"gym:MODULE:{env_id} (Atari: gym:ale_py:ALE/Pong-v5), or pass a callable that makes the env "
            "(registrations made in the calling process travel with it)") from None


class Registered:
    """An env callable together with the Gymnasium registrations its process had made
    beyond Gymnasium's own (``gym.register_envs(ale_py)``, ``gym.register(...)`` in a
    script): an env process is a fresh interpreter, where ``gym.make("ALE/Pong-v5")``
    would otherwise fail with ``NamespaceNotFound``. The specs are registered there,
    where missing, before the callable is first called; their entry points are imported
    then, as ``gym.make`` would import them here."""

    def __init__(self, fn: Callable[..., Any], specs: List[Any]):
        self.fn, self.specs = fn, specs

    @staticmethod
    def of(fn: Callable[..., Any]) -> Any:
        """``fn`` with this process's own registrations, or ``fn`` itself when there are none."""
        gym = sys.modules.get("gymnasium")
        if gym is None:
            return fn
        own = [spec for spec in gym.registry.values()
               if not (isinstance(spec.entry_point, str) and spec.entry_point.startswith(("gymnasium.", "gymnasium:")))]
        return Registered(fn, own) if own else fn

    def __call__(self, **kwargs: Any) -> Any:
        if self.specs:
            import gymnasium

            for spec in self.specs:
                gymnasium.registry.setdefault(spec.id, spec)
            self.specs = []
        return self.fn(**kwargs)


class Rendered:
    """An env whose observations carry its ``render()`` frame under ``"render"``.

    The frame becomes one more uint8 H×W×3 observation leaf, so it goes to the frame
    store with the run's image media (video, JPEG, …) like a camera would, and the
    loader hands it back as ``obs["render"]``. A Dict observation gains the key; any
    other becomes ``{"observation": obs, "render": frame}``. The cost is one
    ``render()`` per step, in the env process: for CartPole's 400×600 pygame frames
    ~1.4 ms, far more than the step itself, so only envs asked for it pay it.
    """

    def __init__(self, env: Any, frame: Any) -> None:
        import numpy as np
        from gymnasium import spaces

        shape = getattr(frame, "shape", None)
        if getattr(frame, "dtype", None) != np.uint8 or shape is None or len(shape) != 3 or shape[2] not in (1, 3, 4):
            raise ValueError(f"render_mode='rgb_array' but env.render() returned {_describe(frame)}, "
                             "not a uint8 H×W×3 frame")
        inner = env.observation_space
        box = spaces.Box(0, 255, tuple(shape), np.uint8)
        self.nested = isinstance(inner, spaces.Dict)
        if self.nested and RENDER_KEY in inner.spaces:
            raise ValueError(f"the env's Dict observation already has a {RENDER_KEY!r} key; "
                             "render() frames cannot be added to it")
        parts = dict(inner.spaces) if self.nested else {"observation": inner}
        self.observation_space = spaces.Dict({**parts, RENDER_KEY: box})
        self.env, self.action_space = env, env.action_space
        self.spec, self.metadata = getattr(env, "spec", None), getattr(env, "metadata", {})
        self.unwrapped = getattr(env, "unwrapped", env)

    def _observe(self, obs: Any) -> Dict[str, Any]:
        out = dict(obs) if self.nested else {"observation": obs}
        out[RENDER_KEY] = self.env.render()
        return out

    def reset(self, **kwargs: Any) -> Tuple[Any, Any]:
        obs, info = self.env.reset(**kwargs)
        return self._observe(obs), info

    def step(self, action: Any) -> Tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._observe(obs), reward, terminated, truncated, info

    def close(self) -> None:
        self.env.close()


def _describe(x: Any) -> str:
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    return f"{type(x).__name__} of shape {shape} and dtype {dtype}" if shape is not None else type(x).__name__


def rendered(make: Callable[[], Any], env: Any) -> Tuple[Callable[[], Any], Any]:
    """``(make, env)`` with render() frames added when the env renders RGB arrays.
    The first env is reset once to learn the frame's size (its first episode resets
    it again, with its seed)."""
    if getattr(env, "render_mode", None) != "rgb_array":
        return make, env
    env.reset()
    first = Rendered(env, env.render())
    shape = first.observation_space[RENDER_KEY].shape

    def make_rendered() -> Any:
        import numpy as np

        # Later envs need no probe: their frames must have the first one's size anyway.
        return Rendered(make(), np.zeros(shape, np.uint8))

    return make_rendered, first


def prepare(setup_json: str, pickled: bytes) -> Tuple[Any, ...]:
    """``(make, first_env, spec_json, pack_obs, unpack_act, dump_info)`` for a setup;
    for ``atari:GAME`` and the MuJoCo tasks rollway steps (``rollway._mujoco``),
    ``(stepper, first_env, spec_json, None, None, dump_info)``, where ``stepper.stepper``
    names the Rust side that steps them."""
    from rollway.batched import KINDS, JaxSim, is_gymnax_env
    from rollway.batched_torch import TorchSim, is_vmas_env
    from rollway.batched_vec import VecSim, is_vector_env
    from rollway.multiagent import rows_of
    from rollway.spaces import dump_info, env_spec, part_packer, unpacker

    setup = json.loads(setup_json)
    kind, _, rest = setup["target"].partition(":")
    if kind in KINDS and not pickled:
        sim = JaxSim(kind, rest, {k: _value(v) for k, v in setup["params"].items()})
        return sim, sim, json.dumps(sim.spec), None, None, dump_info
    if kind == "atari" and not pickled:
        from rollway._atari import Game

        game = Game(rest, {k: _value(v) for k, v in setup["params"].items()})
        env = game.make()
        return game, env, json.dumps(game.spec(env)), None, None, dump_info
    make = resolve(setup["target"], setup["params"], pickled)
    try:
        env = make()
    except TypeError as e:
        if "num_envs" not in str(e):
            raise
        env = make(num_envs=1)  # a vector env's factory that needs its size
    if is_gymnax_env(env):  # a user's own JAX env (or gymnax.make's pair): vmapped and jitted as gymnax's are
        jax_sim = JaxSim.of(env, setup["target"])
        return jax_sim, jax_sim, json.dumps(jax_sim.spec), None, None, dump_info
    if is_vector_env(env):  # a batch of envs in one object: stepped a block a call, as JAX envs are
        vec = VecSim(make, env, setup["target"])
        return vec, vec, json.dumps(vec.spec), None, None, dump_info
    if is_vmas_env(env):  # a torch batch of multi-agent envs: the same, with agents as rows
        torch_sim = TorchSim(make, env, setup["target"])
        return torch_sim, torch_sim, json.dumps(torch_sim.spec), None, None, dump_info
    make, env = rows_of(make, env)  # a PettingZoo ParallelEnv: its agents as rows of one env
    for m in ("reset", "step"):
        if not callable(getattr(env, m, None)):
            raise TypeError(f"{setup['target']} made a {type(env).__name__}, which has no {m}(): not a Gymnasium env")
    make, env = rendered(make, env)
    spec = env_spec(env)
    if kind == "gym" and not pickled:
        from rollway._mujoco import native

        model = native(rest, make, env)
        if model is not None:
            return model, env, json.dumps(spec), None, None, dump_info
    return make, env, json.dumps(spec), part_packer(spec["observation_space"]), unpacker(spec["action_space"]), dump_info


def step_cost(env: Any, seconds: float = 0.05, most: int = 200) -> float:
    """Seconds one step of ``env`` takes in this process: the median over up to ``most`` steps
    of random actions (the space's own sampler, seeded) within about ``seconds``, at least
    three. What ``host="auto"`` weighs against a process's round trip; ``env`` is then thrown
    away (it is ``prepare``'s spec env), so its state does not matter."""
    import time

    space = env.action_space
    space.seed(0)
    env.reset(seed=0)
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < 3 or (len(times) < most and time.perf_counter() - start < seconds):
        action = space.sample()
        t0 = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        times.append(time.perf_counter() - t0)
        if terminated or truncated:
            env.reset()
    return sorted(times)[len(times) // 2]


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
