"""Batched simulators (issue 69): Gymnasium vector envs, a block of envs stepped in one call.

The golden data is the vector env's own loop: each recorded episode (or each slot's run of episodes)
is played again in a vector env of one env, made the same way and in the same autoreset mode, with
the recorded seed and actions, going through the env's own autoreset; every observation, reward and
end must equal what rollway recorded.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict

import gymnasium
import numpy as np
import pytest

import rollway

LIMIT = 15  # CartPole cut at 15 steps: random episodes both fall (terminated) and are cut (truncated)


def cartpole(mode: str = "sync", autoreset: str = "NextStep", **more: Any) -> Any:
    """A factory rollway calls with num_envs (functools.partial pickles to the env processes)."""
    return functools.partial(gymnasium.make_vec, "CartPole-v1", vectorization_mode=mode, max_episode_steps=LIMIT,
                             vector_kwargs={"autoreset_mode": autoreset}, **more)


def one_env(autoreset: str) -> Any:
    return gymnasium.make_vec("CartPole-v1", num_envs=1, vectorization_mode="sync", max_episode_steps=LIMIT,
                              vector_kwargs={"autoreset_mode": autoreset})


@pytest.mark.parametrize("autoreset,host", [("NextStep", "process"), ("SameStep", "inline"), ("Disabled", "process")])
def test_issue69_recorded_vector_env_episodes_equal_the_envs_own_loop(tmp_path, autoreset, host):
    """rollway.run seeds every episode: each one, replayed from its seed in the vector env's own loop
    with the recorded actions, is the same step for step; both kinds of end are seen."""
    out = tmp_path / "ds"
    s = rollway.run(env=cartpole(autoreset=autoreset), agent="random", episodes=12, seed=5, out=out,
                    envs_per_worker=4, host=host, progress=False)
    assert s.episodes == 12
    ds = rollway.Dataset(out)
    assert ds.verify()["problems"] == []
    ends = set()
    for e in ds:
        vec = one_env(autoreset)
        obs, _ = vec.reset(seed=[int(e.seed)])
        seen, rewards = [obs[0]], []
        for a in e.actions:
            obs, r, term, trunc, info = vec.step(np.array([a]))
            seen.append(info["final_obs"][0] if autoreset == "SameStep" and (term[0] or trunc[0]) else obs[0])
            rewards.append(float(r[0]))
        np.testing.assert_array_equal(e.observations, np.stack(seen), err_msg=f"seed {e.seed}")
        np.testing.assert_array_equal(e.rewards, rewards)
        assert not e.terminated[:-1].any() and not e.truncated[:-1].any()
        assert (bool(e.terminated[-1]), bool(e.truncated[-1])) == (bool(term[0]), bool(trunc[0]))
        ends.add((bool(term[0]), bool(trunc[0])))
    assert {(True, False), (False, True)} <= ends, ends


def first_seeds(tmp_path, n: int, seed: int) -> Dict[int, int]:
    """The seed a rollout seeded with ``seed`` gives each slot's first episode (episode i, as
    rollway.run seeds its episode i), read off such a run."""
    out = tmp_path / "seeds"
    rollway.run(env=cartpole(), agent="random", episodes=n, seed=seed, out=out, envs_per_worker=n, host="inline",
                progress=False)
    return {e["run_index"]: int(e["seed"]) for e in rollway.Dataset(out).episodes}


@pytest.mark.parametrize("autoreset", ["NextStep", "SameStep"])
def test_issue69_a_rollout_of_a_vector_env_runs_through_its_own_autoreset(tmp_path, autoreset):
    """A Rollout that seeds only each env's first episode lets each env go on as the env's own
    autoreset does: slot by slot, its fragments equal one env of the vector env's own loop, with the
    same actions, going through that mode's autoreset (NextStep's extra step that starts the next
    episode; SameStep's final_obs)."""
    n, seed = 4, 9
    with rollway.Rollout(cartpole(autoreset=autoreset), "random", num_envs=n, steps_per_fragment=32, seed=seed,
                         seed_each_episode=False) as r:
        frags = [r.collect() for _ in range(3)]
    assert sum(int(f.dones.sum()) for f in frags) >= 2 * n
    seeds = first_seeds(tmp_path, n, seed)
    for slot in range(n):
        vec = one_env(autoreset)
        obs, _ = vec.reset(seed=[seeds[slot]])
        for f in frags:
            finals = iter(f.final_obs[f.finished["env"] == slot])
            np.testing.assert_array_equal(f.obs[0, slot], obs[0], err_msg=f"slot {slot}")
            for t in range(f.steps):
                obs, reward, term, trunc, info = vec.step(np.array([f.actions[t, slot]]))
                assert (reward[0], term[0], trunc[0]) == (f.rewards[t, slot], f.terminated[t, slot], f.truncated[t, slot])
                if term[0] or trunc[0]:
                    final = info["final_obs"][0] if autoreset == "SameStep" else obs[0]
                    np.testing.assert_array_equal(next(finals), final, err_msg=f"slot {slot} step {t}")
                    assert (np.abs(final) > 0.05).any()  # the ending step's own, not a reset's
                    if autoreset == "NextStep":  # the env's own next step starts the next episode
                        obs, reward, _, _, _ = vec.step(np.array([0]))
                        assert reward[0] == 0
                np.testing.assert_array_equal(f.obs[t + 1, slot], obs[0], err_msg=f"slot {slot} step {t}")


def test_issue69_an_idle_env_of_a_disabled_autoreset_vector_env_restarts_when_it_ends():
    """A vector env steps all its envs, idle slots' too (a run winding down idles the slots whose
    episodes are done): an idle env that reaches its end in Disabled mode must restart before the
    vector's next step, which would otherwise refuse to step past an end (seen as a flaky run)."""
    from rollway.batched import IDLE, RESET, STEP
    from rollway.batched_vec import VecSim

    make = cartpole(autoreset="Disabled")
    block = VecSim(make, make(num_envs=1), "vec:test").block(2)
    seeds, act = np.array([1, 2], np.uint64).tobytes(), np.zeros(2, np.int64).tobytes()
    block.round(bytes([RESET, RESET]), seeds, act)
    ends = 0
    for _ in range(4 * LIMIT):  # slot 1 idles through its time limit several times
        _, _, _, flags = block.round(bytes([STEP, IDLE]), seeds, act)
        assert flags[1] == 0, "an idle slot reports no end"
        if flags[0]:
            ends += 1
            block.round(bytes([RESET, IDLE]), seeds, act)
    assert ends >= 2


def test_issue69_vec_ids_record_a_spec_gymnasium_rebuilds(tmp_path):
    """``vec:ID`` is make_vec(ID, vectorization_mode="sync"); the dataset's spec is one env's, so
    Gymnasium (and Minari's recover_environment) makes that env from it, time limit included."""
    out = tmp_path / "ds"
    rollway.run(env="vec:CartPole-v1", env_params={"max_episode_steps": 20}, agent="random", episodes=6, seed=1,
                out=out, envs_per_worker=3, progress=False)
    ds = rollway.Dataset(out)
    assert ds.verify()["problems"] == [] and len(ds) == 6
    assert max(len(e.actions) for e in ds) <= 20
    meta = json.loads((out / "rollway.json").read_text())
    spec = gymnasium.envs.registration.EnvSpec.from_json(meta["env"]["gymnasium_spec"])
    env = gymnasium.make(spec)
    assert env.spec.max_episode_steps == 20 and env.observation_space == ds.observation_space


class Differing(gymnasium.vector.SyncVectorEnv):
    """A vector env whose batch space is not its single space's: the envs' spaces differ."""

    def __init__(self, num_envs: int = 2) -> None:
        super().__init__([lambda: gymnasium.make("CartPole-v1")] * num_envs)
        self.observation_space = gymnasium.spaces.Box(-1, 1, (num_envs, 5), np.float32)


@pytest.mark.parametrize("factory,message", [
    (functools.partial(gymnasium.make_vec, "CartPole-v1"),
     r"CartPoleVectorEnv, which resets its envs in NextStep mode and does not reset some of them alone.*"
     r"vectorization_mode='sync'"),
    (lambda num_envs: gymnasium.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync"),
     r"was asked for \d+ envs and made 3"),
    (lambda: gymnasium.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync"),
     r"rollway calls its factory with num_envs="),
    (Differing, r"observation_space is not \d+ copies of its single_observation_space"),
], ids=["reset_mask", "batch_size", "num_envs", "spaces"])
def test_issue69_vector_envs_rollway_cannot_step_are_input_errors_naming_the_fix(factory, message):
    with pytest.raises(rollway.InputError, match=message):
        with rollway.Rollout(factory, "random", num_envs=4, host="inline") as r:
            r.collect()


def envpool_cartpole(num_envs: int = 1) -> Any:
    """EnvPool's CartPole as a Gymnasium vector env, its seeds fixed here (env i: 7 + i)."""
    import envpool

    return envpool.make("CartPole-v1", env_type="gymnasium", num_envs=num_envs, seed=7)


class EnvPoolLike(gymnasium.vector.SyncVectorEnv):
    """A stand-in with EnvPool's ways where rollway meets them, for CI (whose venv has no EnvPool): one
    env's spaces given as the batch's, seeds fixed when made (env i: 7 + i) and a reset's seed refused,
    a masked reset answered for the reset envs only, named by ``env_id`` (here in reverse order)."""

    __module__ = "envpool.stand_in"  # what rollway's is_envpool reads

    def __init__(self, num_envs: int = 1) -> None:
        super().__init__([lambda: gymnasium.make("CartPole-v1", max_episode_steps=LIMIT)] * num_envs)
        super().reset(seed=[7 + i for i in range(num_envs)])
        self.batch_action_space = self.action_space  # what SyncVectorEnv's own step iterates over
        self.observation_space, self.action_space = self.single_observation_space, self.single_action_space

    def step(self, actions: Any) -> Any:
        self.action_space = self.batch_action_space
        try:
            return super().step(actions)
        finally:
            self.action_space = self.single_action_space

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        assert seed is None, "EnvPool's seeds are fixed when it is made"
        mask = (options or {}).get("reset_mask")
        if mask is None:
            return super().reset(options={"reset_mask": np.ones(self.num_envs, bool)})
        obs, _ = super().reset(options={"reset_mask": mask})
        at = np.flatnonzero(mask)[::-1]
        return obs[at], {"env_id": at.astype(np.int32)}


def assert_fragment_is_own_loop(frag: Any, own: Any, steps: int) -> None:
    """A Rollout's fragment against the vector env's own NEXT_STEP loop over the same actions, env by env:
    the own loop spends a step on each reset that rollway made with a masked reset instead."""
    n = own.num_envs
    final = {(int(t), int(i)): k for k, (t, i) in enumerate(zip(frag.finished["step"], frag.finished["env"]))}
    obs, _ = own.reset()
    np.testing.assert_array_equal(obs, frag.obs[0])
    t, resetting = np.zeros(n, int), np.zeros(n, bool)
    while (t < steps).any():
        act = np.array([0 if resetting[i] or t[i] >= steps else frag.actions[t[i], i] for i in range(n)])
        obs, reward, term, trunc, _ = own.step(act)
        for i in np.flatnonzero(t < steps):
            if resetting[i]:  # the env's own autoreset: the next episode's first observation
                np.testing.assert_array_equal(obs[i], frag.obs[t[i], i])
                resetting[i] = False
                continue
            done = bool(term[i] or trunc[i])
            assert (done, float(reward[i])) == (bool(frag.dones[t[i], i]), float(frag.rewards[t[i], i]))
            np.testing.assert_array_equal(obs[i], frag.final_obs[final[t[i], i]] if done else frag.obs[t[i] + 1, i])
            t[i], resetting[i] = t[i] + 1, done


def test_issue69_envpools_ways_are_met_masked_resets_by_env_id_and_no_reset_seeds():
    """Against the stand-in: a Rollout (resets in rounds of their own, masked, answered in reverse order)
    gives the env's own loop, env by env; rollway never hands it a reset seed (the stand-in refuses one)."""
    n, steps = 4, 60
    with rollway.Rollout(EnvPoolLike, "random", num_envs=n, steps_per_fragment=steps, seed=3, workers=1,
                         host="inline") as r:
        frag = r.collect()
    assert frag.dones.sum() >= n
    assert_fragment_is_own_loop(frag, EnvPoolLike(n), steps)


def test_issue69_envpools_vector_envs_give_the_fragments_of_envpools_own_loop(tmp_path):
    """EnvPool's Gymnasium vector envs run as any VectorEnv (masked resets, NEXT_STEP): a Rollout's
    fragment equals EnvPool's own loop over the same actions, env by env, and a run records them. Not
    in CI: EnvPool's import needs ~700 MB of its assets; bench/requirements.txt installs it."""
    pytest.importorskip("envpool")
    import warnings

    n, steps = 4, 60
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with rollway.Rollout(envpool_cartpole, "random", num_envs=n, steps_per_fragment=steps, seed=3, workers=1,
                             host="inline") as r:
            frag = r.collect()
        s = rollway.run(env=envpool_cartpole, agent="random", episodes=10, seed=1, out=tmp_path / "ds", envs_per_worker=4,
                        host="inline", progress=False)
    # rollway gives EnvPool no reset seeds, which it would ignore, warning on every reset.
    assert not [w for w in warned if "seed" in str(w.message)], [str(w.message) for w in warned]
    assert frag.dones.sum() >= n and s.episodes == 10
    assert_fragment_is_own_loop(frag, envpool_cartpole(n), steps)
    ds = rollway.Dataset(tmp_path / "ds")
    assert ds.verify()["problems"] == [] and ds.metadata["env"]["id"] == "CartPoleGymnasiumEnvPool"


class Square(gymnasium.Env):
    """A 48×64 RGB frame (a smooth gradient) with a bright square that the action moves left or right; its
    start drawn from the reset's seed, the episode cut after 12 steps. Frames that video keeps well."""

    observation_space = gymnasium.spaces.Box(0, 255, (48, 64, 3), np.uint8)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        self.x, self.t = int(self.np_random.integers(8, 48)), 0
        return self._frame(), {}

    def step(self, action: Any) -> Any:
        self.x, self.t = int(np.clip(self.x + (4 if action else -4), 0, 52)), self.t + 1
        return self._frame(), float(self.x), False, self.t >= 12, {}

    def _frame(self) -> np.ndarray:
        f = np.zeros((48, 64, 3), np.uint8)
        f[..., 0] = np.linspace(0, 200, 64, dtype=np.uint8)[None, :]
        f[..., 2] = np.linspace(0, 120, 48, dtype=np.uint8)[:, None]
        f[18:30, self.x:self.x + 12] = 255
        return f


def test_issue69_a_vector_envs_frames_are_recorded_as_video_and_read_back_as_its_own(tmp_path):
    """A vector env of image observations, recorded with frame_media='h264': the frames go to MP4 files,
    and each recorded episode's frames, decoded, stay within the codec's loss of the env's own frames
    replayed from the episode's seed and actions (a wrong frame scores far lower)."""
    out = tmp_path / "ds"
    rollway.run(env=lambda num_envs=1: gymnasium.vector.SyncVectorEnv([Square] * num_envs), agent="random",
                episodes=4, seed=2, out=out, envs_per_worker=2, host="inline", frame_media="h264", progress=False)
    ds = rollway.Dataset(out)
    assert len(ds) == 4 and ds.verify()["problems"] == []
    assert ds.observation_space == Square.observation_space
    assert any(p.suffix == ".mp4" for p in out.rglob("*")), "the frames went to video files"
    for e in ds:
        env = Square()
        frames = [env.reset(seed=e.seed)[0]] + [env.step(int(a))[0] for a in e.actions]
        expected = np.stack(frames).astype(float)
        assert e.observations.shape == expected.shape
        mse = ((e.observations.astype(float) - expected) ** 2).reshape(len(expected), -1).mean(1)
        psnr = 10 * np.log10(255.0 ** 2 / np.maximum(mse, 1e-9))
        # 32-38 dB here; the frames of another seed's episode (the square elsewhere) score 12-17.
        assert psnr.min() > 30, psnr
