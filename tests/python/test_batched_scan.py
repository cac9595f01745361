"""A JAX env with a JAX policy, a whole fragment in one jitted scan (issue 69: ``rollway.JaxPolicy``).

The reference is rollway's own round-at-a-time rollout of the same env, acting alike (the same
deterministic policy, in numpy there): every fragment must be equal, array by array, ids, seeds,
final observations and infos included. Recorded episodes are also played again in the env's own
functions (``test_batched.replay``), as the round-at-a-time rollout's are.
"""

from __future__ import annotations

import numpy as np
import pytest

import rollway
from conftest import peer

jax = peer("jax")
peer("gymnax")

from test_batched import replay, walk_env  # noqa: E402

ENV, NA = "gymnax:Breakout-MinAtar", 3
# Integer weights over Breakout's 0/1 cells: the action is exact in JAX and in numpy alike.
W = (np.arange(400) * 7919 % 13).astype(np.int32)


def jax_act(params, obs, key):
    score = (obs.reshape(obs.shape[0], -1).astype(np.int32) * params["w"]).sum(1)
    return {"actions": (score + params["shift"]) % NA, "score": score.astype(np.float32)}


def numpy_act(obs, first, state):
    score = (obs.reshape(obs.shape[0], -1).astype(np.int32) * W).sum(1)
    return {"actions": score % NA, "score": score.astype(np.float32)}


FIELDS = ("obs", "actions", "rewards", "terminated", "truncated", "first", "episode", "version", "final_obs")


# The scan resets every slot together (0) or the ended ones one at a time (a limit never reached):
# what it measures at its start picks one, and both must make the same fragments.
@pytest.mark.parametrize("one_limit", [0, 10**9], ids=["all-together", "one-at-a-time"])
@pytest.mark.parametrize("seed_each_episode", [True, False])
def test_issue69_a_jax_policy_makes_the_fragments_a_round_at_a_time_rollout_makes(seed_each_episode, one_limit, monkeypatch):
    monkeypatch.setattr("rollway.batched_scan.JaxScan.one_limit", one_limit)
    kw = dict(num_envs=6, steps_per_fragment=24, seed=5, seed_each_episode=seed_each_episode)
    params = {"w": W, "shift": np.int32(0)}
    with rollway.Rollout(ENV, rollway.JaxPolicy(jax_act, params), **kw) as scanned, \
            rollway.Rollout(ENV, numpy_act, host="inline", **kw) as rounds:
        ended = 0
        for _ in range(3):
            a, b = scanned.collect(), rounds.collect()
            for field in FIELDS:
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
            for k in b.finished:
                np.testing.assert_array_equal(a.finished[k], b.finished[k], err_msg=f"finished[{k}]")
            np.testing.assert_array_equal(a.extras["score"], b.extras["score"])
            assert a.final_info == b.final_info
            ended += len(a.finished["env"])
    assert ended > 10  # Breakout's episodes under this policy end within a fragment


def test_issue69_a_jax_policys_recorded_episodes_equal_the_envs_own_steps(tmp_path):
    out = tmp_path / "ds"
    with rollway.Rollout(ENV, rollway.JaxPolicy.uniform(), num_envs=8, steps_per_fragment=32, seed=3, out=out) as r:
        frags = [r.collect() for _ in range(2)]
    assert all(f.actions.min() >= 0 and f.actions.max() < NA for f in frags)
    assert len(np.unique(frags[0].actions)) == NA  # random, not one action
    ds = rollway.Dataset(out)
    assert ds.verify()["problems"] == []
    assert len(ds) == sum(len(f.finished["env"]) for f in frags) > 8
    for e in ds:
        obs, rewards, (term, trunc), info = replay("gymnax", "Breakout-MinAtar", {}, e.seed, e.actions)
        np.testing.assert_array_equal(e.observations, obs, err_msg=f"seed {e.seed}")
        np.testing.assert_array_equal(e.rewards, rewards)
        assert (bool(e.terminated[-1]), bool(e.truncated[-1])) == (term, trunc)
        assert e.info == info


def test_issue69_publish_hands_a_jax_policy_its_next_params_and_versions_the_steps():
    params = {"w": np.zeros(400, np.int32), "shift": np.int32(1)}
    with rollway.Rollout(ENV, rollway.JaxPolicy(jax_act, params), num_envs=4, steps_per_fragment=8) as r:
        a = r.collect()
        assert (a.actions == 1).all() and (a.version == 0).all()
        r.publish({"w": np.zeros(400, np.int32), "shift": np.int32(2)})
        b = r.collect()
    assert (b.actions == 2).all() and (b.version == 1).all()


def test_issue69_a_uniform_jax_policy_acts_on_an_env_whose_pixels_rollway_makes_uint8():
    # pixels="uint8" wraps the env (Craftax's images as frames); the uniform policy's space is the
    # hosted env's, not the wrapper's (which has none).
    with rollway.Rollout(ENV, rollway.JaxPolicy.uniform(), num_envs=4, steps_per_fragment=8, seed=2,
                         env_params={"pixels": "uint8"}) as r:
        f = r.collect()
    assert f.obs.dtype == np.uint8 and set(np.unique(f.obs)) == {0, 255}
    assert f.actions.min() >= 0 and f.actions.max() < NA


def test_issue69_a_jax_policys_fragment_where_no_episode_ends_has_no_final_rows():
    # CartPole's pole cannot fall within two steps of a reset: the first fragment ends nothing.
    with rollway.Rollout("gymnax:CartPole-v1", rollway.JaxPolicy.uniform(), num_envs=2, steps_per_fragment=2) as r:
        a = r.collect()
        assert len(a.finished["env"]) == 0 and a.final_info == [] and not (a.terminated | a.truncated).any()
        assert a.final_obs.shape == (0, 4)
        frags = [r.collect() for _ in range(40)]
    assert sum(len(f.finished["env"]) for f in frags) > 0  # and later ones end some, alike


def test_issue69_a_jax_scan_writes_every_call_into_the_same_buffers():
    # A fresh [T, N, ...] output a call is memory mapped anew, its pages faulted in as the scan
    # writes them: at N = 1024 more than the steps cost (bench/RESULTS.md). The buffers are
    # given up to each call and written in place.
    from rollway.batched import JaxSim
    from rollway.batched_scan import JaxScan

    n, t = 4, 8
    scan = JaxScan(JaxSim("gymnax", "Breakout-MinAtar", {}), rollway.JaxPolicy.uniform(), n)
    scan.begin(np.arange(n, dtype=np.uint64).tobytes())
    seeds = np.arange(t * n, dtype=np.uint64).tobytes()
    seen = []
    for _ in range(3):
        obs = scan.steps(t, seeds, True)[0]
        assert obs.shape == (t * n, 1600)
        seen.append((scan._seen.unsafe_buffer_pointer(), scan._final.unsafe_buffer_pointer(), obs.ctypes.data))
        del obs  # read (rollway copies it) before the next call writes there again
    assert len(set(seen)) == 1, seen


def walk_with_infos(nan_at_end: bool = False):
    """test_batched's walk, whose step's info holds a leaf of each kind: ints of two
    dimensions, a bool, a float (NaN where an episode ends, with ``nan_at_end``)."""
    import jax.numpy as jnp

    class Walk(type(walk_env())):
        def step_env(self, key, state, action, params):
            obs, state, reward, done, _ = super().step_env(key, state, action, params)
            info = {"at": jnp.stack([state["x"], state["t"]]).astype(jnp.int32), "far": jnp.abs(state["x"]) >= 2,
                    "half": jnp.where(done & nan_at_end, jnp.nan, state["x"] / 2.0).astype(jnp.float32)}
            return obs, state, reward, done, info

    return Walk()


def test_issue69_a_jax_scan_that_changes_how_it_resets_between_calls_makes_the_same_steps():
    # A call's ends can make the scan compile the other way for the next (JaxScan._choose): the
    # steps must not change with it.
    from rollway.batched import JaxSim
    from rollway.batched_scan import JaxScan

    n, t = 6, 12

    def run(ways):
        scan = JaxScan(JaxSim("gymnax", "Breakout-MinAtar", {}), rollway.JaxPolicy(jax_act, {"w": W, "shift": np.int32(0)}), n)
        scan.one_limit = 0
        scan.begin(np.arange(n, dtype=np.uint64).tobytes())
        seeds = np.arange(t * n, dtype=np.uint64).tobytes()
        out = []
        for one in ways:
            scan.one_at_a_time = one
            out.append([np.array(x) for x in scan.steps(t, seeds, True)[:5]])  # copied: the next call reuses the buffers
        return {k[2] for k in scan._scans}, out

    ways, switched = run([True, False, True])
    assert ways == {True, False}
    ways, kept = run([False, False, False])
    assert ways == {False}
    for a, b in zip(switched, kept):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert (kept[0][4] != 0).sum() > 3  # episodes ended, so resets happened each way


def test_issue69_a_jax_scan_changes_how_it_resets_only_past_a_quarters_margin():
    from rollway.batched import JaxSim
    from rollway.batched_scan import JaxScan

    scan = JaxScan(JaxSim("gymnax", "Breakout-MinAtar", {}), rollway.JaxPolicy.uniform(), 4)
    scan.one_limit, scan.one_at_a_time = 8, True
    for ends_per_step, one in [(9.0, True), (10.5, False), (7.0, False), (5.5, True)]:
        scan._choose(ends_per_step)
        assert scan.one_at_a_time is one, ends_per_step


def test_issue69_a_jax_envs_infos_reach_the_fragment_as_its_own_values():
    # Both ways a JAX env's infos come (a scan's, a block's round) give each leaf's values: ints,
    # bools, floats, and a leaf of more dimensions as a list.
    kw = dict(num_envs=4, steps_per_fragment=16, seed=2)
    with rollway.Rollout(walk_with_infos, rollway.JaxPolicy(lambda p, obs, key: (obs[:, 1] % 2).astype(np.int32)), **kw) as a, \
            rollway.Rollout(walk_with_infos, lambda obs, first, state: (obs[:, 1] % 2).astype(np.int64), host="inline", **kw) as b:
        fa, fb = a.collect(), b.collect()
    assert fa.final_info == fb.final_info and len(fa.final_info) > 0
    for info, obs in zip(fa.final_info, fa.final_obs):
        x, t = int(obs[0]), int(obs[1])
        assert info == {"at": [x, t], "far": abs(x) >= 2, "half": x / 2.0}


def test_issue69_info_columns_keep_each_leafs_values_and_refuse_what_has_no_json_form():
    import ml_dtypes
    from rollway.batched import info_columns

    at = [2, 0]
    cols = info_columns({"u8": np.arange(3, dtype=np.uint8), "i4": np.arange(3).astype(ml_dtypes.int4),
                         "bf": np.array([0.5, 1.5, 2.5], ml_dtypes.bfloat16), "b": np.array([1, 0, 1], bool),
                         "u64": np.arange(3, dtype=np.uint64)}, at)
    assert {k: (v.dtype.name, v.tolist()) for k, v in cols.items()} == {
        "u8": ("int64", [2, 0]), "i4": ("int64", [2, 0]), "bf": ("float64", [2.5, 0.5]), "b": ("bool", [True, True]),
        "u64": ("int64", [2, 0])}
    for bad in (np.full(3, 2**64 - 1, np.uint64), np.array([1 + 2j] * 3)):
        with pytest.raises(TypeError, match=f"info\\['x'\\]: an array of {bad.dtype} cannot be recorded"):
            info_columns({"x": bad}, at)


def test_issue69_a_nan_in_a_jax_envs_info_is_an_input_error_naming_its_key():
    with rollway.Rollout(lambda: walk_with_infos(nan_at_end=True), rollway.JaxPolicy.uniform(), num_envs=4,
                         steps_per_fragment=16) as r:
        with pytest.raises(rollway.InputError, match=r'info\["half"\]: NaN cannot be recorded'):
            r.collect()


@pytest.mark.parametrize("env,kw,says", [
    ("CartPole-v1", {}, "acts on a JAX env"),
    (ENV, {"workers": 2}, "workers=2"),
    (ENV, {"max_episode_steps": 10}, "max_episode_steps"),
])
def test_issue69_a_jax_policy_where_it_cannot_act_is_an_input_error_naming_the_fix(env, kw, says):
    with pytest.raises(rollway.InputError, match=says):
        rollway.Rollout(env, rollway.JaxPolicy.uniform(), num_envs=2, **kw)


def test_issue69_a_jax_policy_that_raises_ends_the_rollout_with_its_own_exception():
    def bad(params, obs, key):
        raise ZeroDivisionError("the policy's own")

    with rollway.Rollout(ENV, rollway.JaxPolicy(bad), num_envs=2, steps_per_fragment=4) as r:
        with pytest.raises(ZeroDivisionError, match="the policy's own"):
            r.collect()
