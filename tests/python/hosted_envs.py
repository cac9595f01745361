"""Gymnasium envs written in Python for the hosted-env tests (test_hosted.py).

The env processes import this module (the tests put its folder on PYTHONPATH), so
faults are keyed on what a process can know: the episode's seed, and a marker file
per seed that makes a fault happen on the first attempt only.
"""

import os
import signal
import time

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class AllSpaces(gym.Env):
    """Every space rollway hosts, nested: Dict/Tuple observations, a Dict action.
    The observation is a function of the seed and the actions so far, so a test can
    replay recorded actions and check every recorded observation."""

    metadata = {"render_fps": 15}

    def __init__(self, length=12):
        self.length = int(length)
        self.observation_space = spaces.Dict({
            "pos": spaces.Box(-1e6, 1e6, (2,), np.float32),
            "img": spaces.Box(0, 255, (4, 4, 3), np.uint8),
            "t": spaces.Tuple((spaces.Discrete(100), spaces.MultiBinary(3))),
            "hist": spaces.Box(-1e6, 1e6, (3,), np.float64),
        })
        self.action_space = spaces.Dict({
            "move": spaces.MultiDiscrete([3, 4]),
            "push": spaces.Box(-1.0, 1.0, (2,), np.float32),
            "flag": spaces.Discrete(2),
        })

    def _obs(self):
        img = ((np.arange(48, dtype=np.int64).reshape(4, 4, 3) * (self.k + 1) + self.base) % 256).astype(np.uint8)
        bits = np.array([(self.k >> i) & 1 for i in range(3)], dtype=np.int8)
        return {"pos": self.pos.copy(), "img": img, "t": (self.k, bits), "hist": np.array([self.acc, self.k, self.base], dtype=np.float64)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.base = int(self.np_random.integers(0, 256))
        self.pos = self.np_random.uniform(-1, 1, 2).astype(np.float32)
        self.k, self.acc = 0, 0.0
        return self._obs(), {"base": self.base}

    def step(self, action):
        m = np.asarray(action["move"])
        self.pos = (self.pos + np.array([m[0] - 1, m[1] - 1.5], dtype=np.float32) * 0.1 + np.asarray(action["push"], np.float32)).astype(np.float32)
        self.acc += float(action["flag"]) + float(m.sum())
        self.k += 1
        return self._obs(), float(self.pos.sum()), False, self.k >= self.length, {"k": self.k, "pos": self.pos}


def _first_time(marks, seed):
    """True the first time any process asks about `seed` (a marker file per seed)."""
    try:
        os.close(os.open(os.path.join(marks, str(seed)), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


class Faulty(gym.Wrapper):
    """CartPole that misbehaves at step `at` of episodes whose seed is divisible by
    `every`, on their first attempt: raises, kills its own process, or hangs."""

    def __init__(self, marks="", how="raise", every=7, at=3):
        super().__init__(gym.make("CartPole-v1"))
        self.marks, self.how, self.every, self.at = marks, how, int(every), int(at)

    def reset(self, *, seed=None, options=None):
        self.seed_, self.t = seed, 0
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self.t += 1
        if self.marks and self.t == self.at and self.seed_ % self.every == 0 and _first_time(self.marks, self.seed_):
            if self.how == "raise":
                raise RuntimeError(f"simulator fault at seed {self.seed_}")
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "exit":
                os._exit(3)
            if self.how == "hang":
                time.sleep(60)
        return self.env.step(action)


class TextObs(gym.Env):
    """A Text observation: the actions so far, spelled out ("ab…"), and a Text action."""

    observation_space = spaces.Text(8, min_length=0, charset="abé")
    action_space = spaces.Text(2, charset="xy")

    def reset(self, *, seed=None, options=None):
        self.said = ""
        return self.said, {}

    def step(self, action):
        assert isinstance(action, str) and 1 <= len(action) <= 2 and set(action) <= set("xy"), action
        self.said += "é" if action[0] == "x" else "ab"[len(self.said) % 2]
        return self.said, float(len(action)), len(self.said) >= 6, False, {}


class SequenceObs(TextObs):
    """An observation space rollway cannot record."""

    observation_space = spaces.Sequence(spaces.Discrete(3))


class NoFrames(TextObs):
    """Says it renders RGB arrays, but render() gives nothing."""

    observation_space = spaces.Discrete(3)
    render_mode = "rgb_array"

    def reset(self, *, seed=None, options=None):
        return 0, {}

    def render(self):
        return None


def make_cartpole(**kwargs):
    """A `module:callable` factory taking keyword arguments."""
    return gym.make("CartPole-v1", **kwargs)


def make_cartpole_with_stats(**kwargs):
    """CartPole whose final info is Gymnasium's episode statistics (``info["episode"]``)."""
    return gym.wrappers.RecordEpisodeStatistics(gym.make("CartPole-v1", **kwargs))


class Costly(gym.Wrapper):
    """CartPole whose step first burns `micros` µs of CPU in Python, as a costly user env does
    (a simulator, pixel preprocessing): its steps hold the GIL for that long."""

    def __init__(self, micros=2000):
        super().__init__(gym.make("CartPole-v1"))
        self.seconds = float(micros) / 1e6

    def step(self, action):
        end = time.perf_counter() + self.seconds
        while time.perf_counter() < end:
            pass
        return self.env.step(action)


class ActionTypes(gym.Env):
    """Discrete(3) actions in, their type out: each observation is the index in `TYPES` of
    the type of the action its step was given, so a test sees exactly what each env got."""

    TYPES = ("int", "int64", "other")

    def __init__(self):
        self.action_space = spaces.Discrete(3)
        self.observation_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        name = type(action).__name__
        return self.TYPES.index(name) if name in self.TYPES else 2, 0.0, False, False, {}


class Wrong(gym.Env):
    """A Box(-1, 1, (3,)) env that answers wrong in one way (`how`) on step `at`:
    a NaN observation, a NaN reward, an observation out of bounds, of the wrong shape,
    (with a Discrete observation space) a float that is not a whole number, or an info
    that cannot be recorded."""

    def __init__(self, how="nan_obs", at=2):
        self.how, self.at = how, int(at)
        self.observation_space = spaces.Discrete(4) if how == "float_discrete" else spaces.Box(-1, 1, (3,), np.float32)
        self.action_space = spaces.Discrete(2)

    def _obs(self, wrong):
        if self.how == "float_discrete":
            return 2.5 if wrong else 1
        obs = np.zeros(3, np.float32)
        if wrong and self.how == "nan_obs":
            obs[1] = np.nan
        if wrong and self.how == "out_of_bounds":
            obs[2] = 7.0
        if wrong and self.how == "wrong_shape":
            obs = np.zeros(4, np.float32)
        return obs

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(False), {}

    def step(self, action):
        self.t += 1
        wrong = self.t == self.at
        reward = float("nan") if wrong and self.how == "nan_reward" else 1.0
        # At the episode's end: the final info is recorded even when the others are not.
        info = {"pos": [1, 2], "handle": {"sim": object()}} if self.t >= 5 and self.how == "bad_info" else {}
        return self._obs(wrong), reward, self.t >= 5, False, info


class Gated(gym.Wrapper):
    """CartPole whose resets after the first ``free`` wait until the file ``gate`` exists: a
    run that has finished episodes and then gets no more until the test says so."""

    def __init__(self, gate, free=8):
        super().__init__(gym.make("CartPole-v1"))
        self.gate, self.free, self.resets = gate, int(free), 0

    def reset(self, **kwargs):
        self.resets += 1
        while self.resets > self.free and not os.path.exists(self.gate):
            time.sleep(0.01)
        return self.env.reset(**kwargs)


class SlowStart(gym.Wrapper):
    """CartPole that takes `seconds` to make (a simulator loading its assets), noting in `log_dir`
    when its making began and ended, by process."""

    def __init__(self, seconds=1.2, log_dir=""):
        began = time.time()
        time.sleep(float(seconds))
        super().__init__(gym.make("CartPole-v1"))
        if log_dir:
            with open(os.path.join(log_dir, f"{os.getpid()}-{began}"), "w") as f:
                f.write(f"{began} {time.time()}")
