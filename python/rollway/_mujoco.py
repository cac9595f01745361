"""Gymnasium's MuJoCo locomotion tasks, stepped by rollway: ``gym:HalfCheetah-v5``.

A ``gym:`` id rollway knows (``rollway._rollway.MUJOCO_TASKS``: HalfCheetah-v5,
Hopper-v5, Walker2d-v5) is made by ``gymnasium.make`` as any other, and if the env
is exactly Gymnasium's class behind Gymnasium's standard wrappers (``TimeLimit``,
``OrderEnforcing``, ``PassiveEnvChecker``), its steps are rollway's: MuJoCo's own
``mj_step`` on the env's own model and data, called from Rust without the GIL, and
the reward, flags, observation and info computed as Gymnasium computes them (value
for value; ``rollway_envs::mujoco``). Resets stay Gymnasium's (``env.reset(seed=)``,
whose noise draws from the env's numpy generator), so a seed gives the same episode
either way. Anything else (a subclass, another wrapper, ``render_mode``) is stepped by
Gymnasium as before. ``ROLLWAY_MUJOCO=python`` in the environment turns this off
(to compare, or should a difference ever be found).

Why: ~80% of a HalfCheetah step is ``mj_step``, but Gymnasium's Python around it
holds the GIL, so Python envs use one core however many threads step them.
"""

from __future__ import annotations

import glob
import os
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

# Wrappers whose behaviour the Rust step reproduces (TimeLimit by counting steps).
STANDARD_WRAPPERS = ("TimeLimit", "OrderEnforcing", "PassiveEnvChecker")

# The settings each task reads from its env (Gymnasium's attribute names).
SETTINGS = {
    "forward_reward_weight": "_forward_reward_weight",
    "ctrl_cost_weight": "_ctrl_cost_weight",
    "exclude_x": "_exclude_current_positions_from_observation",
    "healthy_reward": "_healthy_reward",
    "terminate_when_unhealthy": "_terminate_when_unhealthy",
    "healthy_state_range": "_healthy_state_range",
    "healthy_z_range": "_healthy_z_range",
    "healthy_angle_range": "_healthy_angle_range",
}

# The info values Gymnasium's tasks make in a type JSON does not keep: ``reward_ctrl`` is computed
# from the float32 action, so a numpy float32 (NEP 50); the others are Python floats or float64.
INFO_TYPES: Dict[str, Callable[[Any], Any]] = {"reward_ctrl": np.float32}


def info_types(env_id: str) -> Dict[str, Callable[[Any], Any]]:
    """:data:`INFO_TYPES` for a ``gym:`` id of the MuJoCo tasks rollway knows (stepped by
    rollway or by Gymnasium: their infos cross as JSON either way), else none."""
    from rollway import _rollway

    kind, _, rest = env_id.partition(":")
    return INFO_TYPES if kind == "gym" and rest in _rollway.MUJOCO_TASKS else {}


def native(env_id: str, make: Callable[[], Any], env: Any) -> Optional["Model"]:
    """A :class:`Model` when rollway steps ``env`` (made by ``gymnasium.make(env_id)``)
    itself, else ``None``."""
    from rollway import _rollway

    task = _rollway.MUJOCO_TASKS.get(env_id)
    if task is None or os.environ.get("ROLLWAY_MUJOCO") == "python":
        return None
    limit = None
    outer = env
    while type(outer).__module__.startswith("gymnasium.wrappers") and type(outer).__name__ in STANDARD_WRAPPERS:
        if type(outer).__name__ == "TimeLimit":
            limit = outer._max_episode_steps
        outer = outer.env
    u = env.unwrapped
    if outer is not u or (type(u).__module__, type(u).__name__) != task or getattr(u, "render_mode", None) is not None:
        return None
    if not (hasattr(u.model, "_address") and hasattr(u.data, "_address")):
        return None  # a mujoco too old to say where its structs are: Gymnasium steps it
    return Model(make, limit)


class Model:
    """One MuJoCo target rollway steps: makes its envs, resets them, and hands Rust
    what its steps drive."""

    # Which of rollway's steppers drives these envs (rollway_python's `slot_envs`).
    stepper = "mujoco"

    def __init__(self, make: Callable[[], Any], limit: Optional[int]) -> None:
        self._make, self.limit = make, limit

    def make(self) -> Any:
        """A new env, as ``gymnasium.make`` makes it."""
        return self._make()

    @staticmethod
    def library() -> str:
        """The MuJoCo library the ``mujoco`` package loaded (Rust opens the same one)."""
        import mujoco

        found = sorted(glob.glob(os.path.join(os.path.dirname(mujoco.__file__), "libmujoco.so*")))
        if not found:
            raise RuntimeError(f"no libmujoco.so beside {mujoco.__file__}: set ROLLWAY_MUJOCO=python")
        return found[-1]

    def parts(self, env: Any) -> Tuple[Any, ...]:
        """``(model, data, qpos, qvel, ctrl, frame_skip, settings)``: the addresses of the
        env's ``MjModel`` and ``MjData``, its ``qpos``/``qvel``/``ctrl`` arrays (views of
        the data, which Rust reads and writes in place), and the task's settings."""
        u = env.unwrapped
        settings: Dict[str, Any] = {k: getattr(u, attr) for k, attr in SETTINGS.items() if hasattr(u, attr)}
        settings["dt"] = float(u.dt)
        settings["init_z"] = float(u.init_qpos[1])
        return u.model._address, u.data._address, u.data.qpos, u.data.qvel, u.data.ctrl, int(u.frame_skip), settings

    def reset(self, env: Any, seed: Any) -> Tuple[Any, Any]:
        """Gymnasium's reset, seeded or not: ``(obs, info)``."""
        return env.reset() if seed is None else env.reset(seed=seed)
