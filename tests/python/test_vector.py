"""rollway.make_vec: rollway's Rust envs as a Gymnasium VectorEnv, equal to Gymnasium's own."""

import gymnasium as gym
import numpy as np
import pytest

import rollway

CLASSIC = ["CartPole-v1", "MountainCar-v0", "Acrobot-v1", "Pendulum-v1"]


@pytest.mark.parametrize("env_id", CLASSIC)
@pytest.mark.parametrize("seed", [0, 42, 2**32 + 5])
def test_equals_gymnasium_sync_vector_env_bit_for_bit(env_id, seed):
    ours = rollway.make_vec(env_id, 6)
    theirs = gym.make_vec(env_id, 6, vectorization_mode="sync")
    a, _ = ours.reset(seed=seed)
    b, _ = theirs.reset(seed=seed)
    np.testing.assert_array_equal(a, b)
    assert ours.single_observation_space == theirs.single_observation_space
    assert ours.single_action_space == theirs.single_action_space
    theirs.action_space.seed(seed)
    for t in range(600):  # past time limits and terminations: autoresets included
        act = theirs.action_space.sample()
        for x, y in zip(ours.step(act)[:4], theirs.step(act)[:4]):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y, err_msg=f"{env_id} step {t}")


def test_reset_with_seed_list_and_none():
    ours = rollway.make_vec("CartPole-v1", 3)
    theirs = gym.make_vec("CartPole-v1", 3, vectorization_mode="sync")
    np.testing.assert_array_equal(ours.reset(seed=[5, None, 7])[0][[0, 2]], theirs.reset(seed=[5, None, 7])[0][[0, 2]])


def test_threads_give_the_same_steps():
    one, two = rollway.make_vec("CartPole-v1", 64), rollway.make_vec("CartPole-v1", 64, threads=2)
    np.testing.assert_array_equal(one.reset(seed=1)[0], two.reset(seed=1)[0])
    rng = np.random.default_rng(0)
    for _ in range(300):
        act = rng.integers(0, 2, 64)
        for x, y in zip(one.step(act)[:4], two.step(act)[:4]):
            np.testing.assert_array_equal(x, y)


def test_observations_are_fresh_arrays():
    v = rollway.make_vec("CartPole-v1", 4)
    first, _ = v.reset(seed=0)
    kept = first.copy()
    v.step(np.zeros(4, dtype=np.int64))
    np.testing.assert_array_equal(first, kept)


def test_dict_observations_and_infos():
    v = rollway.make_vec("PixelMine-v0", 2, size=16, max_steps=5)
    obs, info = v.reset(seed=0)
    assert set(obs) == {"rgb", "inventory"} and obs["rgb"].shape == (2, 16, 16, 3)
    for _ in range(5):
        obs, r, term, trunc, info = v.step(np.array([1, 2]))
    assert trunc.all()
    assert isinstance(info, dict)


def test_bad_actions_and_ids():
    v = rollway.make_vec("CartPole-v1", 2)
    v.reset(seed=0)
    with pytest.raises(rollway.InputError, match=r"the action of env 1: 5 is outside Discrete\(2\)"):
        v.step(np.array([0, 5]))
    with pytest.raises(rollway.InputError, match=r"actions of shape \(3,\); the batch needs \(2,\)"):
        v.step(np.array([0, 1, 1]))
    with pytest.raises(rollway.InputError, match="unknown env"):
        rollway.make_vec("Nope-v0", 2)


def test_issue71_out_of_bounds_box_actions_reach_the_env_as_in_gymnasium():
    ours, theirs = rollway.make_vec("Pendulum-v1", 2), gym.make_vec("Pendulum-v1", 2, vectorization_mode="sync")
    np.testing.assert_array_equal(ours.reset(seed=3)[0], theirs.reset(seed=3)[0])
    act = np.array([[5.0], [-7.5]], dtype=np.float32)  # bounds are ±2: Pendulum clips them itself
    for _ in range(3):
        for x, y in zip(ours.step(act)[:4], theirs.step(act)[:4]):
            np.testing.assert_array_equal(x, y)


def test_issue71_a_fractional_discrete_action_is_refused_as_gymnasiums_space_refuses_it():
    theirs = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")
    theirs.reset(seed=0)
    with pytest.raises(AssertionError, match="invalid"):
        theirs.step(np.array([0.6, 0.0]))
    ours = rollway.make_vec("CartPole-v1", 2)
    ours.reset(seed=0)
    with pytest.raises(rollway.InputError, match=r"the action of env 0: 0.6 is not a whole number"):
        ours.step(np.array([0.6, 0.0]))


def test_issue67_make_vec_mistakes_are_input_errors_in_the_users_terms():
    v = rollway.make_vec("CartPole-v1", 2)
    with pytest.raises(rollway.InputError, match=r"step\(\) before reset\(\): call reset\(\) first"):
        v.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(rollway.InputError, match=r"make_vec got an env instance \(TimeLimit\).*\"gym:ID\""):
        rollway.make_vec(gym.make("CartPole-v1"), 2)
    with pytest.raises(rollway.InputError, match="make_vec takes an env id"):
        rollway.make_vec(lambda: gym.make("CartPole-v1"), 2)
    h = rollway.make_vec("gym:CartPole-v1", 2, host="inline")
    h.reset(seed=0)
    for bad, message in [(np.zeros(3, dtype=np.int64), r"shape \(3,\)"), (np.array([0.5, 1]), "not a whole number"),
                         (np.array([0, 2]), r"outside Discrete\(2\)")]:
        with pytest.raises(ValueError, match=message) as e:
            h.step(bad)
        assert isinstance(e.value, rollway.InputError), type(e.value)


def _same_infos(mine, ref, what):
    """Two vector infos equal key for key, in values and dtypes (nested dicts too)."""
    assert sorted(mine) == sorted(ref), f"{what}: info keys"
    for k in ref:
        if isinstance(ref[k], dict):
            _same_infos(mine[k], ref[k], f"{what}: info {k}")
            continue
        assert mine[k].dtype == ref[k].dtype, f"{what}: info {k} is {mine[k].dtype}, Gymnasium's {ref[k].dtype}"
        np.testing.assert_array_equal(mine[k], ref[k], err_msg=f"{what}: info {k}")


def _same_steps(ours, theirs, seed, steps, what):
    """Both vector envs reset with `seed` and given the same random actions give equal arrays and
    infos, in values and dtypes."""
    a, ia = ours.reset(seed=seed)
    b, ib = theirs.reset(seed=seed)
    np.testing.assert_array_equal(a, b)
    _same_infos(ia, ib, f"{what} reset")
    theirs.action_space.seed(seed)
    for t in range(steps):
        act = theirs.action_space.sample()
        mine, ref = ours.step(act), theirs.step(act)
        for x, y in zip(mine[:4], ref[:4]):
            assert x.dtype == y.dtype, f"{what} step {t}"
            np.testing.assert_array_equal(x, y, err_msg=f"{what} step {t}")
        _same_infos(mine[4], ref[4], f"{what} step {t}")


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_issue71_mujoco_ids_equal_gymnasiums_vector_env_infos_and_dtypes_included(env_id):
    """reward_ctrl is float32 in Gymnasium's infos (made from the float32 action): JSON, which
    carries infos, kept no dtype. Hopper ends episodes early, so autoreset infos are compared too."""
    pytest.importorskip("mujoco")
    ours = rollway.make_vec(f"gym:{env_id}", 3)
    theirs = gym.make_vec(env_id, 3, vectorization_mode="sync")
    _same_steps(ours, theirs, 5, 300, f"gym:{env_id}")
    ours.close()


def test_issue71_infos_take_gymnasiums_vector_layout_and_dtypes():
    """Per-env infos as an env returns them, laid out by Gymnasium's own VectorEnv._add_info and
    by make_vec from the JSON they cross as: missing keys, bools, ints, floats, strings, arrays
    and nested dicts give the same arrays, dtypes and masks."""
    import json

    from rollway.spaces import dump_info
    from rollway.vector import _vector_infos

    envs = [
        {"flag": True, "lives": 3, "x": 0.5, "name": "a", "pos": np.array([1.0, 2.0]), "episode": {"r": 1.5, "l": 7}},
        {"x": 2.0, "pos": np.array([3.0, 4.0])},
        {"flag": False, "lives": 1, "name": "c", "grid": np.array([[1, 2], [3, 4]], dtype=np.int64)},
    ]
    ref: dict = {}
    vec = type("V", (), {"num_envs": len(envs), "_add_info": gym.vector.VectorEnv._add_info})()
    for i, info in enumerate(envs):
        ref = vec._add_info(ref, info, i)
    mine = _vector_infos(json.dumps([json.loads(dump_info(i)) for i in envs]), {})
    _same_infos(mine, ref, "synthetic")


@pytest.mark.parametrize("host, workers", [("inline", 1), ("process", 2)])
def test_issue55_gym_ids_equal_gymnasiums_own_vector_env(host, workers):
    ours = rollway.make_vec("gym:CartPole-v1", 5, host=host, workers=workers)
    theirs = gym.make_vec("CartPole-v1", 5, vectorization_mode="sync")
    assert ours.single_observation_space == theirs.single_observation_space
    _same_steps(ours, theirs, 7, 300, f"gym:CartPole-v1 {host}")  # autoresets included
    ours.close()


def test_issue55_atari_ids_equal_gymnasiums_wrappers_in_a_vector_env():
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    from test_atari import gymnasium_atari

    params = {"frame_skip": 4, "noop_max": 10}
    ours = rollway.make_vec("atari:Breakout-v5", 3, workers=2, terminal_on_life_loss=True, **params)
    theirs = gym.vector.SyncVectorEnv([lambda: gymnasium_atari("Breakout-v5", {**params, "terminal_on_life_loss": True})] * 3)
    assert ours.single_observation_space == theirs.single_observation_space
    _same_steps(ours, theirs, 3, 150, "atari:Breakout-v5")  # lost lives end episodes: autoresets
    ours.close()


def test_issue55_hosted_vector_envs_refuse_reset_options_and_name_a_failing_env():
    v = rollway.make_vec("gym:CartPole-v1", 2, host="inline")
    with pytest.raises(rollway.InputError, match="reset options"):
        v.reset(seed=0, options={"low": 0})
    with pytest.raises(rollway.InputError, match='host must be "auto", "inline" or "process"'):
        rollway.make_vec("gym:CartPole-v1", 2, host="thread")


@pytest.mark.parametrize("env_id, kwargs", [("CartPole-v1", {}), ("gym:CartPole-v1", {"host": "inline"}),
                                            ("gym:CartPole-v1", {"host": "process", "workers": 2})])
def test_issue55_a_first_reset_without_a_seed_draws_one_per_env_as_gymnasium_does(env_id, kwargs):
    """Gymnasium's vector envs seed each env from OS entropy at an unseeded first reset: N different
    episodes, and other ones next time. A hosted env (made at its first reset) was refused here, and
    built-in envs all started from seed 0, the same episode N times."""
    firsts = []
    for _ in range(2):
        v = rollway.make_vec(env_id, 4, **kwargs)
        obs, _ = v.reset()
        assert len({row.tobytes() for row in obs}) == 4, "each env its own episode"
        v.step(np.zeros(4, dtype=np.int64))
        again, _ = v.reset()
        assert not np.array_equal(again, obs), "an unseeded reset continues each env's stream"
        firsts.append(obs)
        v.close()
    assert not np.array_equal(firsts[0], firsts[1]), "another vector env, other seeds"
