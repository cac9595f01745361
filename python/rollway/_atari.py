"""Atari with the standard preprocessing done by rollway: ``atari:Pong-v5``.

``atari:GAME`` is ``gymnasium.make("ALE/GAME", frameskip=1)`` (ale-py's own env, its
ROMs inside the ale-py wheel; sticky actions as the id sets them: 0.25 for v5) seen
through Gymnasium's ``AtariPreprocessing`` and ``FrameStackObservation``, with the
same observations, rewards, flags and infos for the same seeds. Only the reset runs
Gymnasium's Python (the env's seeding and the no-ops, which draw from its numpy
generator); every step after it is rollway's (``rollway_envs::atari``, driving the
env's ``ALEInterface`` directly): the frame skip, the max-pool of the last two
frames, the 84×84 ``INTER_AREA`` shrink and the stack. This module only makes the
envs and resets them.

Settings (``env_params``), Gymnasium's names and defaults:

- ``noop_max=30``: a reset plays 1..noop_max no-ops, drawn from the env's generator.
- ``frame_skip=4``: frames per action; the last two are max-pooled.
- ``screen_size=84``: the side of the square grayscale frame.
- ``stack_size=4``: frames per observation, oldest first: ``uint8 (stack_size, 84, 84)``.
- ``terminal_on_life_loss=False``: a lost life ends the episode, and the next reset starts a new
  game (Gymnasium's ``AtariPreprocessing``: checked after each frame).
- ``episodic_life=False``: a lost life ends the episode but not the game (Stable-Baselines3's
  ``EpisodicLifeEnv``, as CleanRL's and SB3's Atari scripts use it, and EnvPool's ``episodic_life``):
  checked after each agent step; the next reset plays one NOOP step on from where the life was
  lost (FIRE and action 2 after it, with ``fire_reset``), and a real reset comes only at game over.
  At that step the info holds ``episode``: the whole game's raw return ``r`` and length ``l`` in
  agent steps, as ``RecordEpisodeStatistics`` under ``EpisodicLifeEnv`` says them. Not with
  ``terminal_on_life_loss``. An episode that follows a lost life starts where that one ended, not
  from a seeded reset: a recorded one replays from the game's start, not from its own seed.
- ``reward_clip=False``: each step's reward becomes its sign (a training option, as
  CleanRL's ``ClipRewardEnv``; the recorded reward is then the clipped one).
- ``fire_reset=False``: on games with FIRE (action 1), a reset then plays FIRE and action 2,
  each a whole skipped step whose reward is dropped, and the stack starts from the last
  one's frame: Stable-Baselines3's ``FireResetEnv`` between the preprocessing and the stack,
  as CleanRL's Atari scripts use it (EnvPool's ``use_fire_reset`` presses FIRE once).
  Games without FIRE ignore it, as both do.

Anything else is the ALE env's own (``repeat_action_probability``, ``full_action_space``,
``mode``, ``difficulty``, ``max_num_frames_per_episode``) and goes to ``gymnasium.make``.
With ``render_mode="rgb_array"`` each observation is ``{"observation": stack, "render":
screen}``, the screen being ``env.render()``'s RGB frame (``uint8 (210, 160, 3)``, read
from the emulator after each step), which a recording stores as video with the run's
image media, as it does any env's ``render()`` frames.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import numpy as np

# The preprocessing's settings and their defaults (Gymnasium's), in the order
# rollway_python's atari.rs reads them.
DEFAULTS: Dict[str, Any] = {
    "noop_max": 30,
    "frame_skip": 4,
    "screen_size": 84,
    "stack_size": 4,
    "terminal_on_life_loss": False,
    "episodic_life": False,
    "reward_clip": False,
    "fire_reset": False,
}

# AtariPreprocessing's settings rollway does not offer, and why.
NOT_OFFERED = {
    "grayscale_obs": "frames are grayscale (84×84, as every Atari benchmark uses)",
    "scale_obs": "frames stay uint8; divide by 255 in the policy, as CleanRL does",
    "grayscale_newaxis": "the stack is the channel axis: (stack_size, 84, 84)",
}

# The info values ALE makes in a type JSON does not keep: a reset's ``seeds`` is a tuple of numpy
# uint32s (an object array in a vector env's infos); lives and frame numbers are Python ints.
INFO_TYPES: Dict[str, Callable[[Any], Any]] = {"seeds": lambda v: tuple(np.uint32(x) for x in v)}


class Game:
    """One ``atari:`` target: makes its envs, resets them, and says its spec."""

    # Which of rollway's steppers drives these envs (rollway_python's `slot_envs`).
    stepper = "atari"

    def __init__(self, name: str, kwargs: Dict[str, Any]) -> None:
        import ale_py
        import gymnasium

        gymnasium.register_envs(ale_py)
        # ALE's banner, once per emulator, would fill the run's stderr.
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
        self.id = name if "/" in name or name.endswith("-v4") else f"ALE/{name}"
        kwargs = dict(kwargs)
        for key, why in NOT_OFFERED.items():
            if key in kwargs:
                raise ValueError(f"atari:{name}: {key} is not offered: {why}")
        if kwargs.pop("frameskip", 1) != 1:
            raise ValueError(f"atari:{name}: frameskip is the emulator's; rollway skips frames itself: set frame_skip")
        self.options = {k: kwargs.pop(k, v) for k, v in DEFAULTS.items()}
        for k in ("frame_skip", "screen_size", "stack_size"):
            if not isinstance(self.options[k], int) or isinstance(self.options[k], bool) or self.options[k] < 1:
                raise ValueError(f"atari:{name}: {k} must be a whole number of 1 or more, got {self.options[k]!r}")
        for k in ("terminal_on_life_loss", "episodic_life", "reward_clip", "fire_reset"):
            if not isinstance(self.options[k], bool):
                raise ValueError(f"atari:{name}: {k} must be true or false, got {self.options[k]!r}")
        if self.options["terminal_on_life_loss"] and self.options["episodic_life"]:
            raise ValueError(f"atari:{name}: terminal_on_life_loss (a lost life ends the game: Gymnasium's) and "
                             "episodic_life (the game goes on: SB3's, CleanRL's, EnvPool's) are two answers to one "
                             "question: set one")
        noop = self.options["noop_max"]
        if not isinstance(noop, int) or isinstance(noop, bool) or noop < 0:
            raise ValueError(f"atari:{name}: noop_max must be a whole number of 0 or more, got {noop!r}")
        self.kwargs = {**kwargs, "frameskip": 1}
        self.name = name
        # Whether observations carry the RGB screen (rollway_python's atari.rs reads it).
        self.renders = kwargs.get("render_mode") == "rgb_array"

    def make(self) -> Any:
        """A new env: ``gymnasium.make(ALE/GAME, frameskip=1, ...)``."""
        import gymnasium

        env = gymnasium.make(self.id, **self.kwargs)
        ale_env: Any = env.unwrapped
        if self.options["noop_max"] > 0 and ale_env.get_action_meanings()[0] != "NOOP":
            raise ValueError(f"atari:{self.name}: action 0 is not NOOP, so no-op resets cannot be played: set noop_max=0")
        return env

    def fires(self, env: Any) -> bool:
        """Whether this game's resets press FIRE: ``fire_reset`` set and the game has FIRE as
        action 1 (``FireResetEnv``'s own condition), with an action 2 after it."""
        meanings = env.unwrapped.get_action_meanings()
        return bool(self.options["fire_reset"]) and len(meanings) >= 3 and meanings[1] == "FIRE"

    def parts(self, env: Any) -> Tuple[Any, List[Any], Tuple[int, int]]:
        """What the steps drive: the env's ``ALEInterface``, its action set and screen size."""
        u = env.unwrapped
        height, width = u.ale.getScreenDims()
        return u.ale, [int(a.value) for a in u._action_set], (int(width), int(height))

    def spec(self, env: Any) -> Dict[str, Any]:
        """The env's spec as rollway records it: frames ``uint8 (stack_size, size, size)``."""
        from gymnasium import spaces

        from rollway.spaces import RENDER_KEY, to_json

        size, stack = self.options["screen_size"], self.options["stack_size"]
        fps = env.metadata.get("render_fps")
        frames = spaces.Box(0, 255, (stack, size, size), np.uint8)
        obs: spaces.Space[Any] = frames
        if self.renders:
            height, width = env.unwrapped.ale.getScreenDims()
            screen = spaces.Box(0, 255, (int(height), int(width), 3), np.uint8)
            obs = spaces.Dict({"observation": frames, RENDER_KEY: screen})
        return {
            "id": f"atari:{self.name}",
            "observation_space": to_json(obs),
            "action_space": to_json(env.action_space),
            "max_episode_steps": None,
            "render_fps": int(fps) if fps is not None else None,
            "reward_threshold": None,
            "gymnasium": self.gymnasium_spec(env),
        }

    def gymnasium_spec(self, env: Any) -> Any:
        """``to_json()`` of the Gymnasium env rollway's preprocessing equals: the ALE env in
        ``AtariPreprocessing`` and ``FrameStackObservation`` with these settings, what Minari's
        ``recover_environment`` rebuilds (after ``import ale_py``). ``None`` with
        ``reward_clip`` (a sign is no wrapper Gymnasium can write down), with ``episodic_life``
        (SB3's wrapper, not Gymnasium's), on a game that
        presses FIRE at its resets (SB3's wrapper, not Gymnasium's), with the screen added to
        the observations (no wrapper of Gymnasium's does that), or without OpenCV, which
        ``AtariPreprocessing`` needs. Wrapping the env only reads it."""
        if self.options["reward_clip"] or self.options["episodic_life"] or self.fires(env) or self.renders:
            return None
        try:
            from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

            o = self.options
            pre = AtariPreprocessing(env, noop_max=o["noop_max"], frame_skip=o["frame_skip"], screen_size=o["screen_size"],
                                     terminal_on_life_loss=o["terminal_on_life_loss"])
            spec = FrameStackObservation(pre, o["stack_size"]).spec
            return spec.to_json() if spec is not None else None
        except (ImportError, ValueError, TypeError, AssertionError):  # no OpenCV; kwargs JSON cannot hold
            return None

    def reset(self, env: Any, seed: Any) -> Dict[str, Any]:
        """``AtariPreprocessing.reset`` up to its first frame: the env's reset (seeded or
        not) and the no-ops; the info it returns. The steps read the screen after it."""
        _, info = env.reset() if seed is None else env.reset(seed=seed)
        noop_max = self.options["noop_max"]
        noops = env.unwrapped.np_random.integers(1, noop_max + 1) if noop_max > 0 else 0
        for _ in range(noops):
            _, _, terminated, truncated, step_info = env.step(0)
            info.update(step_info)
            if terminated or truncated:
                _, info = env.reset() if seed is None else env.reset(seed=seed)
        return info
