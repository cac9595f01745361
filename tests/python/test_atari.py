"""Issue 55: ``atari:GAME`` is Gymnasium's Atari preprocessing, done by rollway. Each episode a run
or a rollout records is played again through Gymnasium's own wrappers,
``FrameStackObservation(AtariPreprocessing(gym.make("ALE/GAME", frameskip=1)), stack_size)``,
reset with the episode's seed and given its actions: every stacked frame (OpenCV's INTER_AREA
shrink, the max-pool, the no-ops), reward, flag, info and final observation must be equal, bit
for bit."""

import json

import numpy as np
import pytest

import rollway
from test_gym_replay import replay
from test_hosted import importable_test_envs  # noqa: F401  (autouse: no env process outlives its run)

gym = pytest.importorskip("gymnasium")
ale_py = pytest.importorskip("ale_py")
pytest.importorskip("cv2")  # Gymnasium's AtariPreprocessing resizes with OpenCV

PREPROCESSING = ("noop_max", "frame_skip", "screen_size", "terminal_on_life_loss")


def gymnasium_atari(game, params, max_steps=None):
    """Gymnasium's wrappers around ale-py's env, as ``atari:GAME`` with ``params`` promises (and a
    ``TimeLimit`` where rollway cuts episodes at ``max_steps``)."""
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TimeLimit

    gym.register_envs(ale_py)
    wrap = {k: params[k] for k in PREPROCESSING if k in params}
    make = {k: v for k, v in params.items() if k not in PREPROCESSING + ("stack_size", "reward_clip", "fire_reset")}
    env = gym.make(f"ALE/{game}", frameskip=1, **make)
    env = AtariPreprocessing(env, **wrap)
    if params.get("fire_reset"):
        env = fire_reset(env)
    env = FrameStackObservation(env, params.get("stack_size", 4))
    return TimeLimit(env, max_steps) if max_steps else env


def fire_reset(env):
    """Stable-Baselines3's ``FireResetEnv`` (CleanRL's), between the preprocessing and the stack.
    Its reset says ``{}``; rollway's says the env's reset info with the lives and frame numbers
    after the presses, which this reads from the emulator the same way."""
    from stable_baselines3.common.atari_wrappers import FireResetEnv

    class Remember(gym.Wrapper):
        def reset(self, **kwargs):
            obs, self.info = self.env.reset(**kwargs)
            return obs, self.info

    class Fire(FireResetEnv):
        def reset(self, **kwargs):
            obs, _ = super().reset(**kwargs)
            ale = self.unwrapped.ale
            return obs, {**self.env.info, "lives": ale.lives(), "episode_frame_number": ale.getEpisodeFrameNumber(),
                         "frame_number": ale.getFrameNumber()}

    return Fire(Remember(env))


# game: (env_params, run keyword arguments): Pong as benchmarks use it, to its end; Breakout with
# a life loss ending each episode, other sizes, skip and stack, and clipped rewards; both with
# rollway's own cut too.
CASES = {
    "Pong-v5": ({}, {"episodes": 1}),
    "Breakout-v5": ({"terminal_on_life_loss": True, "noop_max": 8, "frame_skip": 3, "screen_size": 64, "stack_size": 2,
                     "reward_clip": True}, {"episodes": 3}),
    "Pong-v5-cut": ({"repeat_action_probability": 0.0}, {"episodes": 2, "max_episode_steps": 150}),
    # CleanRL's Atari settings: FIRE at each reset, a life loss ends the episode, clipped rewards.
    "Breakout-v5-fire": ({"fire_reset": True, "terminal_on_life_loss": True, "reward_clip": True}, {"episodes": 3}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_issue55_atari_runs_replay_through_gymnasiums_wrappers(case, tmp_path):
    params, run_kwargs = CASES[case]
    game = case.removesuffix("-cut").removesuffix("-fire")
    out = tmp_path / "ds"
    rollway.run(env=f"atari:{game}", agent="random", seed=55, out=out, env_params=params, record_infos=True,
                frame_media="lz4", workers=1, envs_per_worker=2, progress=False, **run_kwargs)
    ds = rollway.Dataset(out)
    clip = np.sign if params.get("reward_clip") else (lambda r: r)
    replay(lambda: gymnasium_atari(game, params, run_kwargs.get("max_episode_steps")), ds, with_infos=True, reward=clip)
    if "max_episode_steps" in run_kwargs:
        assert all(ds[k].length == run_kwargs["max_episode_steps"] for k in range(len(ds)))


def test_issue55_atari_rollouts_deliver_gymnasiums_frames_inline_and_in_processes(tmp_path):
    seen = {}
    for host in ("inline", "process"):
        out = tmp_path / host
        with rollway.Rollout("atari:Pong-v5", "random", num_envs=2, steps_per_fragment=64, seed=5, out=out, host=host,
                             max_episode_steps=100) as r:
            frags = [r.collect() for _ in range(2)]
        f = frags[1]
        assert f.obs.shape == (65, 2, 4, 84, 84) and f.obs.dtype == np.uint8
        ds = rollway.Dataset(out)
        replay(lambda: gymnasium_atari("Pong-v5", {}, 100), ds, with_infos=False)
        for row, episode in enumerate(f.finished["episode"]):
            ep = next(ds[k] for k in range(len(ds)) if ds[k].id == episode)
            np.testing.assert_array_equal(f.final_obs[row], ep.observations[-1])
        seen[host] = np.concatenate([x.obs for x in frags])
    np.testing.assert_array_equal(seen["inline"], seen["process"])


@pytest.mark.parametrize("params, says", [
    ({"grayscale_obs": False}, "grayscale_obs is not offered"),
    ({"frameskip": 4}, "set frame_skip"),
    ({"stack_size": 0}, "stack_size must be a whole number of 1 or more"),
    ({"noop_max": -1}, "noop_max must be a whole number of 0 or more"),
    ({"fire_reset": 1}, "fire_reset must be true or false"),
])
def test_issue55_atari_settings_rollway_cannot_honour_are_refused(params, says):
    with pytest.raises(rollway.InputError, match=says):
        rollway.Rollout("atari:Pong-v5", "random", num_envs=1, env_params=params)


def _example(name):
    from test_rollout import example

    return example(name)


@pytest.mark.heavy
def test_issue55_ppo_atari_example_trains_on_rollway_frames_and_records_its_replay(tmp_path):
    """rollway.examples.ppo_atari (CleanRL's ppo_atari network and update) for a few updates, its
    episodes cut at 60 steps (bootstrapped) and recorded into the run's replay."""
    m = _example("ppo_atari")
    r = m.train_atari(total_steps=1024, envs=4, steps=64, threads=1, log=False, max_episode_steps=60,
                      run_dir=str(tmp_path / "run"))
    assert r["steps"] == 1024 and r["steps_per_s"] > 0
    ds = rollway.Dataset(tmp_path / "run" / "replay")
    assert len(ds) >= 12 and all(ds[k].length == 60 for k in range(len(ds)))
    ep = ds[0]
    assert ep.observations.shape == (61, 4, 84, 84) and ep.status == "truncated"
    replay(lambda: gymnasium_atari("Pong-v5", {}, 60), ds, with_infos=False, reward=np.sign)


def test_issue55_ppo_continuous_example_runs_on_pendulum_and_halfcheetah():
    """rollway.examples.ppo_continuous (CleanRL's ppo_continuous_action) for two updates on rollway's own
    Pendulum-v1 and on MuJoCo's HalfCheetah-v5 hosted in Python: clipped actions reach the env, the
    update reads the policy's raw samples and normalised observations."""
    m = _example("ppo_continuous")
    r = m.train_continuous(total_steps=4096, steps=2048, log=False)
    assert r["steps"] == 4096 and np.isfinite(r["mean_return"])
    pytest.importorskip("mujoco")
    r = m.train_continuous(total_steps=2048, env="gym:HalfCheetah-v5", steps=1024, envs=2, log=False)
    assert r["steps"] == 2048


def test_issue55_atari_records_the_rgb_screen_with_the_stack_lossless_and_as_h264(tmp_path):
    """``render_mode="rgb_array"``: each observation carries ``env.render()``'s RGB frame, read from
    the emulator after each step. Stored losslessly, stack and screen equal Gymnasium's step by step;
    as H.264 the screens are a video PyAV decodes, and the stacks stay exact."""
    av = pytest.importorskip("av")
    params = {"render_mode": "rgb_array", "terminal_on_life_loss": True}
    for media in ("lz4", "h264"):
        rollway.run(env="atari:Breakout-v5", agent="random", seed=9, out=tmp_path / media, episodes=1, env_params=params,
                    image_media=media, workers=1, envs_per_worker=1, progress=False)
    ep = rollway.Dataset(tmp_path / "lz4")[0]
    o = ep.observations
    assert o["render"].shape == (ep.length + 1, 210, 160, 3) and o["render"].dtype == np.uint8
    env = gymnasium_atari("Breakout-v5", params)
    obs, _ = env.reset(seed=ep.seed)
    np.testing.assert_array_equal(o["observation"][0], obs)
    np.testing.assert_array_equal(o["render"][0], env.render())
    for t in range(ep.length):
        obs, *_ = env.step(int(ep.actions[t]))
        np.testing.assert_array_equal(o["observation"][t + 1], obs, err_msg=f"step {t}")
        np.testing.assert_array_equal(o["render"][t + 1], env.render(), err_msg=f"step {t}")
    env.close()

    # pyarrow reads the stack as FORMAT.md says: one binary cell a step, the leaf again by its metadata.
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(next((tmp_path / "lz4" / "steps").glob("*.parquet")))
    field = table.schema.field("observations/observation")
    assert str(field.type) == "fixed_size_binary[28224]" and json.loads(field.metadata[b"rollway:shape"]) == [4, 84, 84]
    cells = table.column("observations/observation").to_pylist()
    np.testing.assert_array_equal(np.stack([np.frombuffer(c, np.uint8).reshape(4, 84, 84) for c in cells]), o["observation"])

    video = rollway.Dataset(tmp_path / "h264")[0]
    assert video.seed == ep.seed
    np.testing.assert_array_equal(video.observations["observation"], o["observation"])
    err = video.observations["render"].astype(np.float64) - o["render"]
    assert 10 * np.log10(255**2 / np.mean(err**2)) > 30, "H.264 keeps the screen (PSNR over 30 dB)"
    (mp4,) = (tmp_path / "h264").rglob("*.mp4")
    with av.open(str(mp4)) as container:
        assert sum(1 for _ in container.decode(video=0)) == ep.length + 1


def cleanrl_breakout(seed):
    """CleanRL's Atari stack as SB3's wrappers build it, over Gymnasium's preprocessing: the game's
    statistics (``RecordEpisodeStatistics``) under ``EpisodicLifeEnv``, then ``FireResetEnv`` and
    ``ClipRewardEnv``, then the stack."""
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, RecordEpisodeStatistics
    from stable_baselines3.common.atari_wrappers import ClipRewardEnv, EpisodicLifeEnv, FireResetEnv

    gym.register_envs(ale_py)
    env = AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1), noop_max=30, terminal_on_life_loss=False)
    env = FrameStackObservation(ClipRewardEnv(FireResetEnv(EpisodicLifeEnv(RecordEpisodeStatistics(env)))), 4)
    obs, _ = env.reset(seed=seed)
    return env, obs


def test_issue71_episodic_life_plays_on_after_a_lost_life_as_sb3s_wrappers_do_step_by_step():
    """``episodic_life``: a lost life ends the episode and the game goes on (one NOOP step, then FIRE),
    a real reset only at game over; every frame, reward and flag equals SB3's ``EpisodicLifeEnv`` stack's,
    and at each game's end ``info["episode"]`` is its raw, whole-game return and length, as
    ``RecordEpisodeStatistics`` under the life wrapper says them."""
    pytest.importorskip("stable_baselines3")
    ours = rollway.make_vec("atari:Breakout-v5", 1, host="inline", episodic_life=True, fire_reset=True, reward_clip=True)
    obs, _ = ours.reset(seed=71)
    ref, ref_obs = cleanrl_breakout(71)
    np.testing.assert_array_equal(obs[0], ref_obs)
    rng, ended, lives_lost, games = np.random.default_rng(71), False, 0, []
    for t in range(3000):
        action = int(rng.integers(4))
        obs, reward, term, trunc, info = ours.step(np.array([action]))
        if ended:  # next-step autoreset: the reset's frames, no reward
            ref_obs, _ = ref.reset()
            ref_step = (ref_obs, 0.0, False, False, {})
        else:
            ref_step = ref.step(action)
        ref_obs, ref_reward, ref_term, ref_trunc, ref_info = ref_step
        np.testing.assert_array_equal(obs[0], ref_obs, err_msg=f"step {t}")
        assert (reward[0], term[0], trunc[0]) == (ref_reward, ref_term, ref_trunc), f"step {t}"
        if "episode" in ref_info:
            games.append((ref_info["episode"]["r"], ref_info["episode"]["l"]))
            assert info["_episode"][0] and (info["episode"]["r"][0], info["episode"]["l"][0]) == games[-1], f"step {t}"
        else:
            assert not info.get("_episode", [False])[0], f"step {t}: a game's statistics where none ended"
            lives_lost += bool(ref_term)
        ended = bool(ref_term or ref_trunc)
    assert len(games) >= 2 and lives_lost >= 4 * len(games), (games, lives_lost)
