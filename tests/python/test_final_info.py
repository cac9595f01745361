"""Issue 55: an episode that rollway cuts (``Rollout(max_episode_steps=K)``, ``run(max_episode_steps=K)``)
ends as Gymnasium's ``TimeLimit`` ends it: its ``final_info`` is the info of its last step (not
``{}``, not an earlier episode's), and the cut truncates even a step that also terminates. Checked
against the same env under Gymnasium's own ``TimeLimit``, inline and in env processes."""

import gymnasium as gym
import numpy as np
import pytest

import rollway
from test_hosted import importable_test_envs  # noqa: F401  (autouse: no env process outlives its run)

K = 6


class Ticking(gym.Env):
    """Never ends on its own, except an episode whose seed is a multiple of 3, which terminates at
    step 6: exactly at the cut. Every info says which step of which episode it is."""

    observation_space = gym.spaces.Discrete(100)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.seed_, self.k = int(seed or 0), 0
        return 0, {"seed": self.seed_, "k": 0}

    def step(self, action):
        self.k += 1
        return self.k, 1.0, self.k == 6 and self.seed_ % 3 == 0, False, {"seed": self.seed_, "k": self.k}


def zeros(obs, first, state):
    return np.zeros(len(first), dtype=np.int64)


def _ended(f):
    """Per finished episode: its final info and (terminated, truncated) at its last step."""
    rows = zip(f.finished["step"], f.finished["env"], f.final_info)
    return [(info, bool(f.terminated[t, e]), bool(f.truncated[t, e])) for t, e, info in rows]


@pytest.mark.parametrize("host", ["inline", "process"])
def test_issue55_a_rollout_cut_ends_episodes_as_gymnasiums_time_limit(host):
    with rollway.Rollout(lambda: Ticking(), zeros, num_envs=3, steps_per_fragment=40, max_episode_steps=K, host=host) as r:
        assert r.max_episode_steps == K, "the rollout's cut, not the env's (none)"
        ours = [_ended(r.collect()) for _ in range(2)]
    with rollway.Rollout(lambda: gym.wrappers.TimeLimit(Ticking(), K), zeros, num_envs=3, steps_per_fragment=40, host=host) as r:
        theirs = [_ended(r.collect()) for _ in range(2)]
    assert ours == theirs
    ended = [e for frag in ours for e in frag]
    assert ended and all(info["k"] == K for info, _, _ in ended), "the last step's info"
    assert len({info["seed"] for info, _, _ in ended}) == len(ended), "each episode's own info"
    assert all(tr for _, _, tr in ended), "the cut truncates"
    assert any(te for _, te, _ in ended), "and a step that also terminates is both, as TimeLimit says"


@pytest.mark.parametrize("host", ["inline", "process"])
def test_issue55_a_run_cut_stores_the_last_steps_info_and_truncates(tmp_path, host):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    rollway.run(env=lambda: Ticking(), agent="random", episodes=12, max_episode_steps=K, out=ours, host=host, progress=False,
                workers=1, envs_per_worker=3)
    rollway.run(env=lambda: gym.wrappers.TimeLimit(Ticking(), K), agent="random", episodes=12, out=theirs, host=host,
                progress=False, workers=1, envs_per_worker=3)
    a, b = rollway.Dataset(ours), rollway.Dataset(theirs)
    by_id = lambda ds: {e["id"]: (e["info"], e["status"]) for e in ds.episodes}  # noqa: E731
    assert by_id(a) == by_id(b)
    assert all(info["k"] == K for info, _ in by_id(a).values())
    for k in range(len(a)):
        assert a[k].truncations[-1], "the cut truncates, also where the env terminated at it"
        np.testing.assert_array_equal(a[k].terminations, b[k].terminations)
        np.testing.assert_array_equal(a[k].truncations, b[k].truncations)
