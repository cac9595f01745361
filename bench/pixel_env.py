"""A pixel env written in Python for bench/hosted_envs.py: 128×128×3 uint8 frames
from a bank of moving gradients (cheap to make, not trivially compressible), fixed
episode length, Discrete(4) actions shifting the gradient."""

import gymnasium as gym
import numpy as np
from gymnasium import spaces

SIZE = 128


class GradientFrames(gym.Env):
    metadata = {"render_fps": 20}

    def __init__(self, length=100):
        self.length = int(length)
        self.observation_space = spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)
        self.action_space = spaces.Discrete(4)
        y, x = np.mgrid[0:SIZE, 0:SIZE]
        self.bank = np.stack([(x + y) % 256, (2 * x) % 256, (3 * y) % 256], axis=-1).astype(np.uint8)

    def _frame(self):
        return np.roll(self.bank, (self.dy, self.dx), axis=(0, 1))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.dx, self.dy = 0, int(self.np_random.integers(SIZE)), int(self.np_random.integers(SIZE))
        return self._frame(), {}

    def step(self, action):
        self.t += 1
        self.dx += (1, -1, 0, 0)[int(action)]
        self.dy += (0, 0, 1, -1)[int(action)]
        return self._frame(), 0.0, False, self.t >= self.length, {}


def make(length=100):
    return GradientFrames(length)
