"""Issue 55: Gymnasium's MuJoCo tasks that rollway steps itself (``rollway._mujoco``): which envs
get rollway's steps, and that those steps are Gymnasium's, value for value, on every host. The
episodes themselves are replayed in Gymnasium by ``test_gym_replay.py``."""

import gymnasium as gym
import numpy as np
import pytest

import rollway
from rollway import _mujoco, _rollway
from test_hosted import importable_test_envs  # noqa: F401  (autouse: no env process outlives its run)

pytest.importorskip("mujoco")


def _native(env_id, **kwargs):
    env = gym.make(env_id, **kwargs)
    try:
        return _mujoco.native(env_id, lambda: gym.make(env_id, **kwargs), env)
    finally:
        env.close()


def test_issue55_only_gymnasiums_own_classes_behind_its_standard_wrappers_get_rollways_steps(monkeypatch):
    assert set(_rollway.MUJOCO_TASKS) == {"HalfCheetah-v5", "Hopper-v5", "Walker2d-v5"}
    model = _native("HalfCheetah-v5", max_episode_steps=77, ctrl_cost_weight=0.3)
    assert model is not None and model.limit == 77
    assert _native("Hopper-v5").limit == 1000
    assert _native("HalfCheetah-v4") is None, "v4 is Gymnasium's to step"
    assert _native("HalfCheetah-v5", render_mode="rgb_array") is None
    env = gym.wrappers.ClipAction(gym.make("HalfCheetah-v5"))
    assert _mujoco.native("HalfCheetah-v5", lambda: env, env) is None, "a wrapper rollway does not reproduce"
    monkeypatch.setenv("ROLLWAY_MUJOCO", "python")
    assert _native("HalfCheetah-v5") is None


def _fragments(monkeypatch, native, env_id, **kwargs):
    monkeypatch.setenv("ROLLWAY_MUJOCO", "" if native else "python")
    with rollway.Rollout(f"gym:{env_id}", "random", num_envs=4, steps_per_fragment=40, seed=7, **kwargs) as r:
        return [r.collect() for _ in range(3)]


@pytest.mark.parametrize("env_id,kwargs", [
    ("HalfCheetah-v5", {"host": "inline", "workers": 2, "env_params": {"ctrl_cost_weight": 0.25, "max_episode_steps": 50}}),
    ("Hopper-v5", {"host": "process", "workers": 2}),
    ("Walker2d-v5", {"host": "inline", "max_episode_steps": 25}),
])
def test_issue55_rollways_mujoco_steps_equal_gymnasiums_on_every_host(monkeypatch, env_id, kwargs):
    ours, theirs = _fragments(monkeypatch, True, env_id, **kwargs), _fragments(monkeypatch, False, env_id, **kwargs)
    ended = 0
    for a, b in zip(ours, theirs):
        for field in ("obs", "actions", "rewards", "terminated", "truncated", "final_obs"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert a.final_info == b.final_info
        ended += len(a.final_info)
    assert ended > 0, "episodes ended, so final observations and infos were compared"
