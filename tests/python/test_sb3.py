"""Issue 55: ``rollway.sb3.VecEnv``, rollway's envs as a Stable-Baselines3 ``VecEnv``: equal to SB3's
own ``DummyVecEnv`` over Gymnasium step by step (same-step resets, terminal observations, time-limit
flags, Monitor's episode returns), and trained on by SB3's PPO, on CartPole and on an Atari game."""

import gymnasium as gym
import numpy as np
import pytest

sb3 = pytest.importorskip("stable_baselines3")
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor  # noqa: E402

from rollway.sb3 import VecEnv  # noqa: E402


@pytest.mark.parametrize("env_id, host", [("CartPole-v1", "auto"), ("gym:CartPole-v1", "inline"), ("gym:CartPole-v1", "process")])
def test_issue55_equals_sb3s_dummy_vec_env_step_by_step(env_id, host):
    kwargs = {} if host == "auto" else {"host": host, "workers": 1 if host == "inline" else 2}
    ours = VecEnv(env_id, 4, **kwargs)
    theirs = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1"))] * 4)
    ours.seed(11)
    theirs.seed(11)
    np.testing.assert_array_equal(ours.reset(), theirs.reset())
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(400):
        act = rng.integers(0, 2, 4)
        o1, r1, d1, i1 = ours.step(act)
        o2, r2, d2, i2 = theirs.step(act)
        np.testing.assert_array_equal(o1, o2, err_msg=f"step {t}")
        np.testing.assert_array_equal(r1, r2)
        assert r1.dtype == np.float32
        np.testing.assert_array_equal(d1, d2)
        for i in np.flatnonzero(d2):
            ends += 1
            np.testing.assert_array_equal(i1[i]["terminal_observation"], i2[i]["terminal_observation"])
            assert i1[i]["TimeLimit.truncated"] == i2[i]["TimeLimit.truncated"]
            assert (i1[i]["episode"]["r"], i1[i]["episode"]["l"]) == (i2[i]["episode"]["r"], i2[i]["episode"]["l"])
        assert not any("episode" in i1[i] for i in np.flatnonzero(~d2)), "only an ended episode is reported"
    assert ends > 10
    ours.close()


@pytest.mark.heavy
def test_issue55_sb3_ppo_learns_cartpole_on_rollway():
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy

    env = VecMonitor(VecEnv("CartPole-v1", 8))
    model = PPO("MlpPolicy", env, n_steps=256, batch_size=256, seed=0, device="cpu")
    model.learn(40_960)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=16)
    # A random policy averages ~22; seed 0 reaches ~200 here.
    assert mean > 100, mean
    env.close()


def test_issue55_sb3_ppo_trains_on_atari_frames():
    pytest.importorskip("ale_py")
    from stable_baselines3 import PPO

    env = VecEnv("atari:Breakout-v5", 2, reward_clip=True, terminal_on_life_loss=True)
    assert env.observation_space.shape == (4, 84, 84) and env.observation_space.dtype == np.uint8
    model = PPO("CnnPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(512)
    assert model.num_timesteps == 512
    env.close()


def test_issue71_the_same_seed_gives_the_same_episodes():
    """``VecEnv(..., seed=s)`` seeds env i with s + i at its first reset (CleanRL's ``args.seed + i``):
    two runs with the same seed and actions see the same frames; another seed, other frames."""
    pytest.importorskip("ale_py")

    def frames(seed):
        env = VecEnv("atari:Breakout-v5", 2, seed=seed, host="inline", fire_reset=True, terminal_on_life_loss=True)
        seen = [env.reset()]
        rng = np.random.default_rng(0)
        for _ in range(60):
            env.step_async(rng.integers(0, 4, 2))
            seen.append(env.step_wait()[0])
        env.close()
        return np.stack(seen)

    first = frames(1)
    np.testing.assert_array_equal(first, frames(1))
    assert not np.array_equal(first, frames(2))
    assert not np.array_equal(first[:, 0], first[:, 1]), "env i is seeded with seed + i"
