"""rollway.DataCollector: Minari's DataCollector semantics, crash-safe, readable by minari."""

import os
import signal
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import rollway


def collect(env, episodes, seed=0):
    for i in range(episodes):
        env.reset(seed=seed + i)
        env.action_space.seed(seed + i)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            done = term or trunc


def test_records_exactly_what_the_env_did(tmp_path):
    env = rollway.DataCollector(gym.make("CartPole-v1"), tmp_path / "dc")
    ref = gym.make("CartPole-v1")
    collect(env, 6)
    env.close()
    ds = rollway.Dataset(tmp_path / "dc")
    assert len(ds) == 6
    for i, ep in enumerate(ds):
        assert ep.seed == i
        obs, _ = ref.reset(seed=i)
        np.testing.assert_array_equal(ep.observations[0], obs)
        for t, a in enumerate(ep.actions):
            obs, r, term, trunc, _ = ref.step(int(a))
            np.testing.assert_array_equal(ep.observations[t + 1], obs)
            assert (ep.rewards[t], ep.terminations[t], ep.truncations[t]) == (r, term, trunc)


def test_reset_truncates_an_unfinished_episode_and_spaces_come_from_the_env(tmp_path):
    env = rollway.DataCollector(gym.make("Pendulum-v1"), tmp_path / "dc", record_infos=True)
    env.reset(seed=1)
    for _ in range(10):
        env.step(env.action_space.sample())
    env.reset()  # no seed: one is drawn and recorded
    for _ in range(3):
        env.step(env.action_space.sample())
    env.reset(seed=5)  # reset right after reset records nothing
    env.close()
    ds = rollway.Dataset(tmp_path / "dc")
    assert [e.length for e in ds] == [10, 3]
    assert ds[0].truncations[-1] and not ds[0].terminations.any() and ds[0].status == "truncated"
    assert ds[1].seed != 1 and ds[0].seed == 1
    assert ds[0].actions.shape == (10, 1) and ds[0].actions.dtype == np.float32
    assert len(ds[0].infos) == 11
    assert ds.observation_space == gym.make("Pendulum-v1").observation_space


def test_dict_spaces_and_bad_values(tmp_path):
    from gymnasium import spaces

    class DictEnv(gym.Env):
        observation_space = spaces.Dict({"pos": spaces.Box(-1, 1, (3,), np.float32), "n": spaces.Discrete(4)})
        action_space = spaces.MultiDiscrete([3, 5])

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return {"pos": np.zeros(3, np.float32), "n": 0}, {}

        def step(self, action):
            self.t += 1
            return {"pos": np.full(3, 0.5, np.float32), "n": self.t % 4}, 1.0, self.t == 4, False, {}

    env = rollway.DataCollector(DictEnv(), tmp_path / "dc")
    collect(env, 2)
    with pytest.raises(rollway.InputError, match="not in the space"):
        env.reset(seed=9)
        env.step(np.array([7, 0]))
    env.close()
    ds = rollway.Dataset(tmp_path / "dc")
    assert len(ds) == 2
    ep = ds[0]
    assert set(ep.observations) == {"pos", "n"}
    np.testing.assert_array_equal(ep.observations["n"], [0, 1, 2, 3, 0])
    assert ep.actions.shape == (4, 2)


def test_to_minari_is_loaded_by_minari(tmp_path, monkeypatch):
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    env = rollway.DataCollector(gym.make("CartPole-v1"), tmp_path / "dc")
    collect(env, 5)
    mds = env.to_minari("cartpole/random-v0")
    env.close()
    assert mds.total_episodes == 5
    loaded = minari.load_dataset("cartpole/random-v0")
    ours = rollway.Dataset(tmp_path / "dc")
    for ep, theirs in zip(ours, loaded.iterate_episodes()):
        np.testing.assert_array_equal(theirs.observations, ep.observations)
        np.testing.assert_array_equal(theirs.actions, ep.actions)
    assert loaded.recover_environment().spec.id == "CartPole-v1"


KILLED = r"""
import sys, gymnasium as gym, rollway
env = rollway.DataCollector(gym.make("CartPole-v1"), sys.argv[1], max_buffer_episodes=1)
for i in range(10**9):
    env.reset(seed=i)
    done = False
    while not done:
        _, _, t, tr, _ = env.step(env.action_space.sample())
        done = t or tr
    if i == 30:
        env.save()  # returns once every finished episode is committed
        print("ready", flush=True)
"""


def test_a_killed_python_process_keeps_the_committed_episodes(tmp_path):
    out = tmp_path / "dc"
    p = subprocess.Popen([sys.executable, "-c", KILLED, str(out)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    ds = rollway.Dataset(out)
    # Everything saved before the kill, and what the writer committed after it, intact.
    assert len(ds) >= 31
    assert [e.id for e in ds] == list(range(len(ds)))
    assert ds.verify()["problems"] == []
    for ep in ds:
        assert ep.terminations[-1] or ep.truncations[-1]


def test_unsupported_space_is_input_error(tmp_path):
    from gymnasium import spaces

    class SequenceEnv(gym.Env):
        observation_space = spaces.Sequence(spaces.Discrete(3))
        action_space = spaces.Discrete(2)

    with pytest.raises(rollway.InputError, match="Sequence"):
        rollway.DataCollector(SequenceEnv(), tmp_path / "dc")
    assert not (tmp_path / "dc").exists()


def test_issue58_an_existing_dataset_is_refused_unless_told_to_append(tmp_path):
    import gymnasium as gym

    out = tmp_path / "dc"
    env = rollway.DataCollector(gym.make("CartPole-v1"), out)
    env.reset(seed=0)
    while not any(env.step(env.action_space.sample())[2:4]):
        pass
    env.close()
    before = sorted((p.relative_to(out), p.stat().st_size) for p in out.rglob("*") if p.is_file())
    with pytest.raises(rollway.InputError, match="already holds a dataset.*append=True"):
        rollway.DataCollector(gym.make("CartPole-v1"), out)
    assert sorted((p.relative_to(out), p.stat().st_size) for p in out.rglob("*") if p.is_file()) == before, "nothing written"
    env = rollway.DataCollector(gym.make("CartPole-v1"), out, append=True)
    env.reset(seed=1)
    env.step(env.action_space.sample())
    env.close()
    assert env.episodes == 1, "closed, it still says what it recorded (the unfinished episode, truncated)"
    ds = rollway.Dataset(out)
    assert len(ds.metadata["runs"]) == 2 and len(ds) == len(set(e["id"] for e in ds.episodes))
