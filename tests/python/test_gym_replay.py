"""Issue 55: rollway's episodes of standard envs are Gymnasium's own. Every episode a run records
(and every episode a training rollout records, which is what its fragments delivered) is played
again in Gymnasium itself: ``gym.make(id).reset(seed=<the episode's seed>)``, then its actions, step
by step. Observations, rewards, flags, infos and the final observation and info must be equal, bit
for bit (frames stored losslessly)."""

import json

import gymnasium as gym
import numpy as np
import pytest

import rollway
from rollway.spaces import dump_info
from test_hosted import importable_test_envs  # noqa: F401  (autouse: no env process outlives its run)

# id: (gym.make keyword arguments, episodes). ALE and MuJoCo come from their PyPI packages (ale-py
# ships its ROMs); `ale_py:` makes an env process import the package that registers the ALE namespace.
ENVS = {
    "CartPole-v1": ({}, 6),
    "Pendulum-v1": ({"max_episode_steps": 60}, 4),
    "MountainCarContinuous-v0": ({"max_episode_steps": 80}, 4),
    "Acrobot-v1": ({"max_episode_steps": 80}, 4),
    "FrozenLake-v1": ({}, 8),
    "Taxi-v4": ({"max_episode_steps": 60}, 4),
    "ale_py:ALE/Pong-v5": ({"max_episode_steps": 120}, 2),
    "HalfCheetah-v5": ({"max_episode_steps": 60}, 2),
    # Random Hoppers and Walkers fall (terminated) within ~10-40 steps; the limit truncates the rest.
    "Hopper-v5": ({"max_episode_steps": 30}, 6),
    "Walker2d-v5": ({"max_episode_steps": 30}, 6),
    # Stepped by Gymnasium's own Python (rollway steps only the three above itself).
    "Ant-v5": ({"max_episode_steps": 30}, 3),
}
NEEDS = {"ale_py:ALE/Pong-v5": "ale_py", "HalfCheetah-v5": "mujoco", "Hopper-v5": "mujoco", "Walker2d-v5": "mujoco",
         "Ant-v5": "mujoco"}


def _infos(infos):
    """Infos as a dataset stores them (rollway's own JSON form of Gymnasium's values)."""
    return [json.loads(dump_info(i)) for i in infos]


def _action(actions, t, space):
    a = actions[t]
    return int(a) if isinstance(space, gym.spaces.Discrete) else np.array(a, dtype=space.dtype)


def replay(make, ds, with_infos, reward=lambda r: r):
    """Plays each episode of `ds` again in the Gymnasium env `make()` returns and checks it step
    by step (each reward as `reward` maps Gymnasium's)."""
    assert len(ds) > 0
    for k in range(len(ds)):
        ep = ds[k]
        env = make()
        obs, info = env.reset(seed=ep.seed)
        np.testing.assert_array_equal(ep.observations[0], obs, err_msg=f"episode {ep.id}: the first observation")
        infos = [info]
        for t in range(ep.length):
            obs, r, terminated, truncated, info = env.step(_action(ep.actions, t, env.action_space))
            where = f"episode {ep.id} (seed {ep.seed}), step {t}"
            np.testing.assert_array_equal(ep.observations[t + 1], obs, err_msg=where)
            assert ep.rewards[t] == reward(r), where
            assert (bool(ep.terminations[t]), bool(ep.truncations[t])) == (terminated, truncated), where
            infos.append(info)
        assert terminated or truncated, f"episode {ep.id} ends where Gymnasium's does"
        assert ep.status == ("terminated" if terminated else "truncated")
        assert ep.info == _infos([info])[0], f"episode {ep.id}: the final info"
        if with_infos:
            assert ep.infos == _infos(infos), f"episode {ep.id}: every info"
        env.close()


@pytest.mark.parametrize("env_id", list(ENVS))
def test_issue55_a_runs_episodes_replay_in_gymnasium_step_by_step(env_id, tmp_path):
    if env_id in NEEDS:
        pytest.importorskip(NEEDS[env_id])
    make_kwargs, episodes = ENVS[env_id]
    out = tmp_path / "ds"
    rollway.run(env=f"gym:{env_id}", agent="random", episodes=episodes, seed=55, out=out, env_params=make_kwargs,
                record_infos=True, frame_media="lz4", workers=1, envs_per_worker=2, progress=False)
    replay(lambda: gym.make(env_id, **make_kwargs), rollway.Dataset(out), with_infos=True)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "FrozenLake-v1", "HalfCheetah-v5", "Hopper-v5"])
def test_issue55_a_rollouts_delivered_episodes_replay_in_gymnasium(env_id, tmp_path):
    if env_id in NEEDS:
        pytest.importorskip(NEEDS[env_id])
    make_kwargs, _ = ENVS[env_id]
    out = tmp_path / "replay"
    finished = {}
    with rollway.Rollout(f"gym:{env_id}", "random", num_envs=2, steps_per_fragment=100, seed=55, out=out, env_params=make_kwargs) as r:
        for _ in range(2):
            f = r.collect()
            for row, (t, e, i) in enumerate(zip(f.finished["step"], f.finished["env"], f.finished["episode"])):
                finished[int(i)] = (np.array(f.final_obs[row]), f.final_info[row], bool(f.terminated[t, e]),
                                    bool(f.truncated[t, e]))
    ds = rollway.Dataset(out)
    replay(lambda: gym.make(env_id, **make_kwargs), ds, with_infos=False)
    # What the fragments delivered is what was recorded, and so what Gymnasium plays.
    assert finished and set(finished) <= {ds[k].id for k in range(len(ds))}
    for k in range(len(ds)):
        ep = ds[k]
        if ep.id in finished:
            final_obs, final_info, terminated, truncated = finished[ep.id]
            np.testing.assert_array_equal(final_obs, ep.observations[-1])
            assert final_info == ep.info
            assert (terminated, truncated) == (bool(ep.terminations[-1]), bool(ep.truncations[-1]))
