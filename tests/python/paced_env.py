"""A CartPole that takes a little time per step (``module:callable`` env for tests whose writers
must still be running when a test acts on them: test_store_stress.py)."""

import time

import gymnasium as gym


class Paced(gym.Wrapper):
    def __init__(self, env: gym.Env, step_s: float):
        super().__init__(env)
        self.step_s = step_s

    def step(self, action):
        time.sleep(self.step_s)
        return self.env.step(action)


def make(step_s: float = 0.002) -> gym.Env:
    return Paced(gym.make("CartPole-v1"), step_s)
