"""Issue 36: policies and envs that answer wrong, and runs that end short, from Python:
each gets a clear error (or a warning where Gymnasium only warns), naming what, where and why."""

import os
import warnings

import numpy as np
import pytest

import rollway

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = dict(episodes=4, workers=1, envs_per_worker=2, mode="sync", record=False, progress=False)


@pytest.fixture(autouse=True)
def hosted_path(monkeypatch):
    # The env processes import hosted_envs from here.
    monkeypatch.setenv("PYTHONPATH", HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.syspath_prepend(HERE)


def constant(value, shape=()):
    def policy(obs, first, state):
        return np.full((len(first), *shape), value)

    return policy


@pytest.mark.parametrize("env", ["CartPole-v1", "gym:CartPole-v1"])
def test_an_action_outside_the_space_fails_naming_agent_slot_value_and_space(env):
    policy = constant(7)
    with pytest.raises(rollway.RollwayError) as e:
        rollway.run(env=env, agent=policy, **SMALL)
    assert f"agent {rollway.policy.name_of(policy)}: env slot 0: action 7 is outside Discrete(2)" in str(e.value)
    assert "agent failed 4 times in a row and the run stopped" in str(e.value)


def test_a_float_that_is_not_a_whole_number_is_refused_and_whole_floats_are_taken():
    with pytest.raises(rollway.RollwayError, match=r"env slot 0: action 0\.5 is not a whole number \(Discrete\(2\) takes integers\)"):
        rollway.run(env="CartPole-v1", agent=constant(0.5), **SMALL)
    assert rollway.run(env="CartPole-v1", agent=constant(1.0), **SMALL).episodes == 4


def test_a_nan_action_for_a_box_is_refused_and_out_of_bounds_goes_to_the_env_as_in_gymnasium():
    with pytest.raises(rollway.RollwayError, match=r"action is NaN \(Box\(float32, \[1\]\) takes finite numbers\)"):
        rollway.run(env="gym:Pendulum-v1", agent=constant(np.nan, (1,)), **SMALL)
    # Pendulum clips its torque itself: 5.0 is taken, as gymnasium's Pendulum takes it.
    assert rollway.run(env="gym:Pendulum-v1", agent=constant(5.0, (1,)), **SMALL).episodes == 4


def test_checks_off_lets_out_of_range_actions_through():
    s = rollway.run(env="Faulty-v0", agent=constant(7), check=False, **SMALL)
    assert s.episodes == 4 and s.failed_attempts == 0


@pytest.mark.parametrize("how, says", [
    ("nan_obs", ": observation[1] is NaN (Box(float32, [3]) takes finite numbers)"),
    ("nan_reward", ": reward NaN is not a finite number"),
    ("wrong_shape", "env Wrong: observation does not fit the observation space: has shape (4,); the space's is (3,)"),
    ("float_discrete", "observation does not fit the observation space: 2.5 is not a whole number (the space holds int64 there)"),
    ("bad_info", "env Wrong: info['handle']['sim']: a object cannot be recorded (infos hold numbers, strings, lists, dicts and numpy arrays)"),
])
def test_an_env_that_answers_wrong_costs_attempts_and_the_run_raises_incomplete(how, says):
    import hosted_envs

    def make():
        return hosted_envs.Wrong(how=how)

    with pytest.raises(rollway.IncompleteRunError) as e:
        rollway.run(env=make, agent="random", **SMALL)
    s = e.value.summary
    # Each attempt fails. A wrong value costs the attempt only; a value that does not fit its row
    # is an exception in the env's step, which also rebuilds the env: both slots failing together
    # in every round use up the worker's restarts, and what is left is untried.
    assert (s.episodes, s.given_up + s.untried) == (0, 4)
    assert str(e.value).startswith("run ended short: ") and f"{says})" in str(e.value)
    assert all(says in f["error"] for f in s.faults), s.faults[0]


def test_an_observation_outside_the_space_is_a_warning_and_the_run_completes():
    import hosted_envs

    def make():
        return hosted_envs.Wrong(how="out_of_bounds")

    with pytest.warns(rollway.RollwayWarning, match=r"observation\[2\] = 7 is above its bound 1 in Box\(float32, \[3\]\)"):
        s = rollway.run(env=make, agent="random", **SMALL)
    assert s.complete and len(s.warnings) == 1


def test_a_run_whose_workers_are_all_retired_raises_with_the_summary_and_resume_runs_the_rest(tmp_path):
    out = tmp_path / "d"
    kw = dict(env="Faulty-v0", env_params={"error_every": 25}, agent="random", workers=1, envs_per_worker=1,
              max_restarts=0, episodes=6, progress=False)
    with pytest.raises(rollway.IncompleteRunError) as e:
        rollway.run(out=out, **kw)
    s = e.value.summary
    assert (s.episodes, s.untried, s.out) == (1, 5, os.fspath(out))
    assert "5 episode(s) untried: every worker used up its max_restarts" in str(e.value)
    assert f"rollway.run(resume={os.fspath(out)!r}) runs the untried ones" in str(e.value)
    assert len(rollway.Dataset(out)) == 1, "what finished is committed"


def test_resume_takes_the_same_call_and_names_each_setting_that_differs(tmp_path):
    out = tmp_path / "cp"
    kw = dict(env="CartPole-v1", agent="random", workers=1, seed=5, max_wait=0.002, progress=False)
    rollway.run(out=out, episodes=4, **kw)
    s = rollway.run(resume=out, out=out, episodes=6, **kw)
    assert s.episodes == 2 and len(rollway.Dataset(out)) == 6
    with pytest.raises(rollway.InputError) as e:
        rollway.run(resume=out, **{**kw, "seed": 6, "workers": 2})
    # In run()'s words (issue 58): its keywords, not the command line's flags.
    assert "seed: stored 5, given 6" in str(e.value) and "workers: stored 1, given 2" in str(e.value)
    assert "--" not in str(e.value), str(e.value)
    assert len(rollway.Dataset(out)) == 6


def test_a_rollout_policy_choosing_outside_the_space_ends_it_naming_the_slot():
    """An InputError (a ValueError), as the same actions given to ``make_vec`` and a wrong shape are (issue 67)."""
    with rollway.Rollout("CartPole-v1", constant(7), num_envs=3, steps_per_fragment=4) as r:
        with pytest.raises(rollway.InputError, match=r"policy: env slot 0: action 7 is outside Discrete\(2\)"):
            r.collect()
    with rollway.Rollout("CartPole-v1", constant(0.5), num_envs=3, steps_per_fragment=4) as r:
        with pytest.raises(rollway.InputError, match=r"env slot 0: action 0\.5 is not a whole number"):
            r.collect()
    with rollway.Rollout("gym:Pendulum-v1", constant(np.nan, (1,)), num_envs=2, steps_per_fragment=4) as r:
        with pytest.raises(ValueError, match=r"env slot 0: action is NaN"):
            r.collect()


def test_a_rollout_warns_once_about_observations_outside_the_space():
    import hosted_envs

    def make():
        return hosted_envs.Wrong(how="out_of_bounds")

    with rollway.Rollout(make, "random", num_envs=2, steps_per_fragment=10) as r:
        with pytest.warns(rollway.RollwayWarning, match="is above its bound 1"):
            r.collect()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            r.collect()


def test_a_flaky_env_finishes_a_long_run_with_the_default_restart_budget():
    # One failure in about 1000 episodes: restarts count in a row, so no worker is retired.
    s = rollway.run(env="Faulty-v0", env_params={"length": 5, "panic_rate": 0.0002}, agent="random", episodes=100_000,
                    workers=2, envs_per_worker=8, record=False, progress=False)
    assert s.complete and s.episodes == 100_000 and s.restarts > 50 and s.restarts == s.failed_attempts


def test_packing_refuses_what_would_lose_information_and_names_row_and_element():
    from rollway.spaces import RowError, exact

    assert exact(np.array([[1.0, 0.0]]), np.dtype(np.int8), None, batch=True).dtype == np.int8
    with pytest.raises(RowError) as e:
        exact(np.array([[0, 1], [1, 256]]), np.dtype(np.int8), None, batch=True)
    assert (e.value.row, e.value.index, e.value.kind, str(e.value)) == (1, 1, "range", "[1] = 256 does not fit int8 (the space holds int8 there)")
    with pytest.raises(RowError) as e:
        exact(np.array([[0.0, np.nan]]), np.dtype(np.int64), None, "arm", batch=True)
    assert (e.value.row, e.value.leaf, e.value.kind) == (0, "arm", "fraction")


def test_a_dataset_another_writer_holds_is_a_typed_error(tmp_path):
    import gymnasium as gym

    out = tmp_path / "dc"
    env = rollway.DataCollector(gym.make("CartPole-v1"), out)
    env.reset(seed=0)
    try:
        with pytest.raises(rollway.DatasetLockedError, match="is being written by another process") as e:
            rollway.run(env="CartPole-v1", agent="random", episodes=2, out=out, append=True, progress=False)
        assert isinstance(e.value, rollway.InputError), "still an InputError, as before it had a class of its own"
    finally:
        env.close()
