"""Issue 12: Python policies as the run's agent, on Rust and on hosted Python envs."""

import os
import sys

import numpy as np
import pytest
import torch

import rollway

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 2))


def torch_policy(model):
    # The README's two-line adapter.
    @torch.no_grad()
    def policy(obs, first, state):
        return model(torch.from_numpy(obs)).argmax(-1).numpy()

    return policy


def test_a_torch_mlp_acts_on_every_step_and_any_worker_count_gives_the_same_data(tmp_path):
    model = mlp()
    sizes = []

    def policy(obs, first, state):
        sizes.append(len(obs))
        assert obs.dtype == np.float32 and obs.shape[1:] == (4,) and first.dtype == np.bool_ and state.shape == (len(obs), 0)
        return torch_policy(model)(obs, first, state)

    runs = []
    for i, (w, n, mode) in enumerate([(1, 8, "sync"), (2, 5, "async")]):
        out = tmp_path / f"run{i}"
        s = rollway.run(env="CartPole-v1", agent=policy, episodes=30, seed=4, workers=w, envs_per_worker=n, mode=mode, batch=(1, 6), out=out, progress=False)
        assert (s.episodes, s.failed_attempts, s.agent) == (30, 0, "python:test_a_torch_mlp_acts_on_every_step_and_any_worker_count_gives_the_same_data.<locals>.policy")
        runs.append(rollway.Dataset(out))
    assert max(sizes) <= 6, "batch=(1, 6) bounds the policy's batches"
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        # Every recorded action is the model's answer to the recorded observation.
        with torch.no_grad():
            expect = model(torch.from_numpy(np.ascontiguousarray(a.observations[:-1]))).argmax(-1).numpy()
        np.testing.assert_array_equal(a.actions, expect)


def test_issue58_a_sampling_torch_policy_gives_the_same_dataset_at_any_worker_count(tmp_path):
    """rollway.policy.draws: the numbers a sampling policy draws from come from each episode's own
    stream, so batches that differ (workers, envs per worker, mode, batch bounds) record the same
    actions; without them, the policy's own generator would not."""
    model = mlp(1)

    @rollway.policy.draws(1)
    @torch.no_grad()
    def sampling(obs, first, state, uniform):
        assert uniform.shape == (len(obs), 1) and uniform.dtype == np.float64
        assert ((uniform >= 0) & (uniform < 1)).all()
        probs = model(torch.from_numpy(obs)).softmax(-1)
        u = torch.from_numpy(uniform).to(probs.dtype)
        return (probs.cumsum(-1) < u).sum(-1).clamp(max=1).numpy()

    runs = []
    for i, (w, n, mode, batch) in enumerate([(1, 8, "sync", (1, 8)), (2, 5, "async", (1, 3)), (2, 16, "sync", (1, 0))]):
        out = tmp_path / f"run{i}"
        rollway.run(env="CartPole-v1", agent=sampling, episodes=40, seed=7, workers=w, envs_per_worker=n, mode=mode,
                    batch=batch, out=out, progress=False)
        runs.append(rollway.Dataset(out))
    first, *others = runs
    for other in others:
        for a, b in zip(first, other):
            np.testing.assert_array_equal(a.actions, b.actions)
    actions = np.concatenate([ep.actions for ep in first])
    assert 0.2 < actions.mean() < 0.8, "it samples: both actions, not the argmax"
    with pytest.raises(rollway.InputError, match="draws policy is for rollway.run"):
        rollway.Rollout("CartPole-v1", sampling, num_envs=2, steps_per_fragment=4)
    with pytest.raises(ValueError, match="at least 1"):
        rollway.policy.draws(0)


def test_a_recurrent_policy_state_is_recorded_and_fed_back_by_the_loader(tmp_path):
    def counter(obs, first, state):
        n = len(obs)
        prev = state[:, 0] if state.shape[1] else np.zeros(n, np.float32)
        assert np.all(prev[first] == 0), "a new episode starts from a zero state"
        new = np.stack([prev + 1, prev * 2], axis=1).astype(np.float32)
        return (prev.astype(np.int64) % 2), new

    out = tmp_path / "rnn"
    rollway.run(env="CartPole-v1", agent=counter, episodes=12, workers=2, envs_per_worker=3, out=out, progress=False)
    for ep in rollway.Dataset(out):
        t = np.arange(ep.length, dtype=np.float32)
        np.testing.assert_array_equal(ep.agent_state[:, 0], t + 1)
        np.testing.assert_array_equal(ep.actions, t.astype(np.int64) % 2)
    for batch in rollway.Loader(out, clip=4, batch=8, shuffle=False, epochs=1):
        # The state going into each window is the one the policy left the step before.
        np.testing.assert_array_equal(batch["state"][:, 0], np.where(batch["step"] == 0, 0, batch["step"]).astype(np.float32))


def test_a_policy_on_hosted_python_envs(tmp_path, monkeypatch):
    monkeypatch.setenv("ROLLWAY_PYTHON", sys.executable)
    s = rollway.run(env="gym:CartPole-v1", agent=torch_policy(mlp(1)), episodes=10, workers=2, envs_per_worker=2, record=False, progress=False)
    assert (s.episodes, s.failed_attempts) == (10, 0)


def test_policy_errors_fail_attempts_then_the_run_with_their_message(tmp_path):
    calls = {"n": 0}

    def flaky(obs, first, state):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("CUDA out of memory (pretend)")
        return np.zeros(len(obs), np.int64)

    # Sync: the failed call held all 4 envs, so it costs 4 attempts.
    s = rollway.run(env="CartPole-v1", agent=flaky, episodes=8, workers=1, envs_per_worker=4, mode="sync", record=False, progress=False)
    assert s.episodes == 8 and s.failed_attempts == 4 and s.given_up == 0
    assert all("CUDA out of memory" in f["error"] for f in s.faults)

    # A policy that always fails: its episodes are given up after max_attempts, and the run fails as
    # the agent's (issue 58: as a longer run fails once the agent's restarts run out), saying why.
    with pytest.raises(rollway.RollwayError) as e:
        rollway.run(env="CartPole-v1", agent=lambda obs, first, state: np.zeros((len(obs), 3)), episodes=4, workers=1, envs_per_worker=4,
                    mode="sync", record=False, progress=False)
    assert not isinstance(e.value, rollway.IncompleteRunError)
    assert "agent failed 3 times in a row" in str(e.value), str(e.value)
    assert "actions of shape (4, 3); the batch needs (4,)" in str(e.value)


def test_issue58_a_policys_exception_is_the_runs_cause_with_its_traceback():
    """A policy's bug fails a run the same way at any size: whether its episodes run out first (few:
    each is given up) or the agent's restarts do (many), the error is the agent's, raised from the
    policy's own exception, as Rollout.collect raises it."""
    import traceback

    def broken(obs, first, state):
        return {"nope": 1}["actions"]  # a bug: KeyError

    for episodes in (4, 2000):
        with pytest.raises(rollway.RollwayError) as e:
            rollway.run(env="CartPole-v1", agent=broken, episodes=episodes, record=False, progress=False)
        assert type(e.value) is rollway.RollwayError and "agent failed" in str(e.value), (episodes, repr(e.value))
        cause = e.value.__cause__
        assert isinstance(cause, KeyError) and cause.args == ("actions",), (episodes, repr(cause))
        frames = [f.name for f in traceback.extract_tb(cause.__traceback__)]
        assert "broken" in frames, frames
    # A later run that fails of something else is not raised from an old policy's exception.
    with pytest.raises(rollway.RollwayError) as e:
        rollway.run(env="CartPole-v1", agent="random", episodes=2, env_params={"nope": 1}, record=False, progress=False)
    assert e.value.__cause__ is None


def test_dict_and_tuple_actions_pack_like_the_spaces_packer():
    from gymnasium import spaces

    from rollway.policy import Adapter
    from rollway.spaces import packer, to_json

    act = spaces.Dict({"move": spaces.MultiDiscrete([3, 4]), "push": spaces.Box(-1, 1, (2,), np.float32),
                       "t": spaces.Tuple((spaces.Discrete(5), spaces.MultiBinary(3)))})
    act.seed(0)
    samples = [act.sample() for _ in range(5)]
    batched = {"move": np.stack([s["move"] for s in samples]), "push": np.stack([s["push"] for s in samples]),
               "t": (np.array([s["t"][0] for s in samples]), np.stack([s["t"][1] for s in samples]))}
    obs = spaces.Box(-1, 1, (3,), np.float32)
    packed, state = Adapter(lambda o, f, s: batched, to_json(obs), to_json(act))(bytearray(5 * 16), bytearray(5), bytearray(0), 5, 0)
    assert state is None
    assert packed == b"".join(packer(to_json(act))(s) for s in samples)
