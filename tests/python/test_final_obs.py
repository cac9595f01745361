"""Issue 48: a fragment gives each finished episode's final observation (the one its
reset replaced), bit for bit the last observation a recording rollout stores, for every
way a rollout's envs run: built-in, hosted in processes, inline, nested Dict spaces;
and its final info, the info the recorded episode stores."""

import numpy as np
import pytest

import rollway
from test_rollout import importable_test_envs  # noqa: F401  (autouse: hosted_envs importable, no env process left)


def leaf(obs, k):
    """Row ``k`` of an observation (an array, or a dict of arrays by leaf path)."""
    return {p: a[k] for p, a in obs.items()} if isinstance(obs, dict) else obs[k]


def last_recorded(e):
    o = e.observations
    if isinstance(o, dict):
        flat = {}

        def walk(v, path):
            if isinstance(v, dict):
                for key, sub in v.items():
                    walk(sub, f"{path}/{key}" if path else key)
            elif isinstance(v, (tuple, list)):
                for i, sub in enumerate(v):
                    walk(sub, f"{path}/_index_{i}" if path else f"_index_{i}")
            else:
                flat[path] = v[-1]
        walk(o, "")
        return flat
    return o[-1]


def assert_same(a, b):
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(b[k]), err_msg=k)
            assert np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes(), k
    else:
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize("env,kw", [
    ("CartPole-v1", dict(max_episode_steps=20)),
    ("gym:CartPole-v1", dict(max_episode_steps=20, host="inline")),
    ("gym:CartPole-v1", dict(max_episode_steps=20, host="process", workers=2)),
    ("hosted_envs:AllSpaces", dict(env_params={"length": 7}, host="process")),
])
def test_issue48_final_obs_is_the_recorded_last_observation(tmp_path, env, kw):
    out = tmp_path / "replay"
    finals = {}
    with rollway.Rollout(env, "random", num_envs=4, steps_per_fragment=16, seed=3, out=out, **kw) as r:
        for _ in range(3):
            f = r.collect()
            fin = f.finished
            k_all = len(fin["env"])
            for k in range(k_all):
                t, i = int(fin["step"][k]), int(fin["env"][k])
                assert f.terminated[t, i] or f.truncated[t, i]
                assert int(f.episode[t, i]) == int(fin["episode"][k]) and f.first[t + 1, i]
                finals[int(fin["episode"][k])] = (leaf(f.final_obs, k), bool(fin["terminated"][k]))
    assert any(not term for _, term in finals.values()), "some episodes were truncated"
    ds = rollway.Dataset(out)
    assert len(ds) == len(finals) > 3
    for e in ds:
        final, _ = finals[e.run_index]
        assert_same(final, last_recorded(e))


def test_issue48_a_fragment_where_no_episode_ended_has_empty_final_obs_by_leaf():
    with rollway.Rollout("hosted_envs:AllSpaces", "random", num_envs=2, steps_per_fragment=3, env_params={"length": 50}) as r:
        f = r.collect()
    assert len(f.finished["env"]) == 0
    assert set(f.final_obs) == set(f.obs) and all(a.shape[0] == 0 for a in f.final_obs.values())
    assert f.final_obs["img"].shape == (0, 4, 4, 3) and f.final_obs["img"].dtype == np.uint8


@pytest.mark.parametrize("host", ["inline", "process"])
def test_issue48_final_info_is_the_envs_last_info_and_the_recorded_episodes_info(tmp_path, host):
    out = tmp_path / "replay"
    infos = {}
    with rollway.Rollout("hosted_envs:make_cartpole_with_stats", "random", num_envs=3, steps_per_fragment=20, seed=5, out=out,
                         env_params={"max_episode_steps": 12}, host=host) as r:
        for _ in range(3):
            f = r.collect()
            fin = f.finished
            assert len(f.final_info) == len(fin["env"])
            for k, info in enumerate(f.final_info):
                # RecordEpisodeStatistics' own count of the episode the fragment says ended.
                assert info["episode"]["l"] == fin["length"][k] and info["episode"]["r"] == pytest.approx(fin["return"][k])
                infos[int(fin["episode"][k])] = info
    ds = rollway.Dataset(out)
    assert len(ds) == len(infos) > 3
    for e in ds:
        assert e.info == infos[e.run_index]


def test_issue48_an_env_without_infos_gives_empty_final_info():
    with rollway.Rollout("CartPole-v1", "random", num_envs=2, steps_per_fragment=40, max_episode_steps=10) as r:
        f = r.collect()
    assert len(f.final_info) == len(f.finished["env"]) > 0 and all(i == {} for i in f.final_info)
