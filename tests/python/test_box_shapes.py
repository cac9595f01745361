"""Issue 55: an observation of one Box comes back as an array of the space's shape and dtype,
whatever the packing pads its row to (a ``Box(3,)`` of float32 is 12 bytes in a 16-byte row),
in fragments, final observations, a rollout policy's input and a run's policy input; the
values are the env's, checked against the env itself (Gymnasium) step by step."""

import gymnasium as gym
import numpy as np
import pytest

import rollway

SHAPES = [
    ((3,), np.float32),  # Pendulum's: 12 bytes, a padded row
    ((5,), np.float64),
    ((3, 2), np.float16),  # half precision: numpy's float16, Arrow's and HDF5's
    ((2, 3), np.float64),
    ((7,), np.int8),
    ((3,), np.bool_),
    ((), np.float32),  # a scalar Box
    ((4,), np.float32),  # unpadded: the contiguous path
]


class Counting(gym.Env):
    """Observations that say which step of which episode they are: step k of an episode
    seeded s is ``(s + k) % 7`` in every cell, cast to the space's dtype; 5 steps an episode."""

    def __init__(self, shape=(3,), dtype="float32"):
        self.dtype = np.dtype(dtype)
        low, high = (0, 1) if self.dtype == np.bool_ else (-10, 10)
        self.observation_space = gym.spaces.Box(low, high, shape=tuple(shape), dtype=self.dtype)
        self.action_space = gym.spaces.Discrete(2)
        self.base, self.k = 0, 0

    def _obs(self):
        return np.full(self.observation_space.shape, (self.base + self.k) % 7, dtype=self.dtype)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.base, self.k = (seed or 0) % 7, 0
        return self._obs(), {}

    def step(self, action):
        self.k += 1
        return self._obs(), 1.0, self.k >= 5, False, {}


def _env(shape, dtype):
    return lambda: Counting(shape, np.dtype(dtype).name)


def _check(a, shape, dtype, lead, what):
    assert isinstance(a, np.ndarray), f"{what}: {type(a).__name__}, not an array"
    assert a.shape == (*lead, *shape) and a.dtype == np.dtype(dtype), f"{what}: {a.shape} {a.dtype}"


@pytest.mark.parametrize("shape,dtype", SHAPES, ids=[f"{s}-{np.dtype(d).name}" for s, d in SHAPES])
def test_issue55_a_box_of_any_shape_and_dtype_is_an_array_in_fragments_and_policies(shape, dtype):
    seen = []

    def policy(obs, first, state):
        seen.append(np.array(obs))
        _check(obs, shape, dtype, (len(first),), "a rollout policy's obs")
        return np.zeros(len(first), dtype=np.int64)

    with rollway.Rollout(_env(shape, dtype), policy, num_envs=3, steps_per_fragment=12, host="inline") as r:
        f = r.collect()
    _check(f.obs, shape, dtype, (13, 3), "frag.obs")
    n = len(f.finished["episode"])
    assert n > 0
    _check(f.final_obs, shape, dtype, (n,), "frag.final_obs")
    # The values are the env's, not the padding's nor a neighbour's: every cell of a row holds
    # one value, and within an episode it goes up by one (mod 7) a step.
    flat = np.asarray(f.obs, dtype=np.float64).reshape(13, 3, -1)
    finals = np.asarray(f.final_obs, dtype=np.float64).reshape(n, -1)
    assert (flat == flat[..., :1]).all() and (finals == finals[:, :1]).all(), "one value in every cell of a row"
    if np.dtype(dtype) != np.bool_:
        v = flat[..., 0]
        follows = ~f.first[1:]
        assert np.array_equal(v[1:][follows], ((v[:-1] + 1) % 7)[follows]), "step k of an episode is (seed + k) % 7"
        for row, (t, e) in enumerate(zip(f.finished["step"], f.finished["env"])):
            assert finals[row, 0] == (v[t, e] + 1) % 7, "a final observation is one step past the last one acted on"
    assert seen and all(o.shape == (3, *shape) for o in seen)

    got = []

    def run_policy(obs, first, state):
        _check(obs, shape, dtype, (len(first),), "a run policy's obs")
        got.append(len(first))
        return np.zeros(len(first), dtype=np.int64)

    s = rollway.run(env=_env(shape, dtype), agent=run_policy, episodes=4, workers=1, envs_per_worker=2, record=False,
                    progress=False, host="inline")
    assert s.episodes == 4 and got


def test_issue55_float16_observations_round_trip_through_a_dataset_minari_and_back(tmp_path, monkeypatch):
    """float16 is stored as Parquet's half float and exported as HDF5's, which Minari reads as numpy's
    float16, value for value; the import gives the same episode back."""
    minari = pytest.importorskip("minari")

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    rollway.run(env=_env((3, 2), "float16"), agent="random", episodes=3, seed=1, out=tmp_path / "ds", workers=1,
                envs_per_worker=1, progress=False, host="inline")
    ds = rollway.Dataset(tmp_path / "ds")
    ep = ds[0]
    _check(ep.observations, (3, 2), np.float16, (ep.length + 1,), "a dataset's observations")
    out = tmp_path / "minari" / "box" / "half-v0"
    ds.export("minari", out, progress=False)
    theirs = next(minari.load_dataset("box/half-v0").iterate_episodes())
    assert theirs.observations.dtype == np.float16
    np.testing.assert_array_equal(theirs.observations, ep.observations)
    back = rollway.import_minari(out, tmp_path / "back", progress=False)
    np.testing.assert_array_equal(back[0].observations, ep.observations)
