"""Export and import from Python, checked by the real minari and pyarrow."""

import numpy as np
import pytest

import rollway


def test_export_minari_and_import_back(cartpole, tmp_path):
    minari = pytest.importorskip("minari")
    ds = rollway.Dataset(cartpole)
    rep = ds.export("minari", tmp_path / "m" / "cp" / "random-v0", dataset_id="cp/random-v0", progress=False)
    assert rep["episodes"] == len(ds)
    m = minari.MinariDataset(rep["path"])
    assert m.total_episodes == len(ds) and m.total_steps == sum(e.length for e in ds)
    back = rollway.import_minari(tmp_path / "m" / "cp" / "random-v0", tmp_path / "back", progress=False)
    assert len(back) == len(ds)
    for a, b in zip(ds, back):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)


def test_export_lerobot_and_import_back(cartpole, tmp_path):
    ds = rollway.Dataset(cartpole)
    rep = ds.export("lerobot", tmp_path / "lr", fps=50, task="balance", progress=False)
    assert rep["episodes"] == len(ds)
    back = rollway.import_lerobot(tmp_path / "lr", tmp_path / "back", progress=False)
    assert [e.length for e in back] == [e.length for e in ds]


def test_export_bad_format_and_existing_out(cartpole, tmp_path):
    ds = rollway.Dataset(cartpole)
    with pytest.raises(rollway.InputError, match="minari, lerobot"):
        ds.export("hdf9", tmp_path / "x")
    (tmp_path / "lr").mkdir()
    (tmp_path / "lr" / "keep.txt").write_text("mine")
    with pytest.raises(rollway.InputError):
        ds.export("lerobot", tmp_path / "lr", progress=False)
    assert (tmp_path / "lr" / "keep.txt").read_text() == "mine"


class Camera(__import__("gymnasium").Env):
    """A small camera env: 48×64 RGB frames (what Minari JPEG-encodes by default) and a
    Discrete action that moves a bright bar."""

    def __init__(self):
        import gymnasium as gym

        self.observation_space = gym.spaces.Box(0, 255, (48, 64, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(3)
        self.x = 0

    def frame(self):
        img = np.zeros((48, 64, 3), np.uint8)
        img[:, :, 2] = np.linspace(0, 200, 64, dtype=np.uint8)
        img[10:30, self.x : self.x + 8] = (250, 220, 30)
        return img

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = int(self.np_random.integers(0, 40)), 0
        return self.frame(), {}

    def step(self, action):
        self.x = int(np.clip(self.x + int(action) * 4 - 4, 0, 56))
        self.t += 1
        return self.frame(), float(self.x), self.x == 56, self.t == 12, {}


def test_minari_jpeg_images_import_as_minari_reads_them(tmp_path, monkeypatch):
    """Issue 15: Minari's DataCollector with its defaults JPEG-encodes image
    observations; the import decodes them to what minari itself reads back."""
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    env = minari.DataCollector(Camera())
    rng = np.random.default_rng(5)
    for i in range(4):
        env.reset(seed=i)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(int(rng.integers(3)))
            done = term or trunc
    ds = env.create_dataset(dataset_id="cam/jpeg-v0", algorithm_name="random")
    assert ds.storage.metadata.get("jpeg_encoding", True)
    back = rollway.import_minari(tmp_path / "minari" / "cam" / "jpeg-v0", tmp_path / "back", progress=False)
    theirs = list(minari.load_dataset("cam/jpeg-v0").iterate_episodes())
    assert [e.length for e in back] == [len(e.actions) for e in theirs]
    for a, b in zip(back, theirs):
        assert a.observations.shape == b.observations.shape and a.observations.dtype == np.uint8
        # Both decode with libjpeg-turbo; allow for a different IDCT or upsampling.
        diff = np.abs(a.observations.astype(int) - b.observations.astype(int))
        assert diff.max() <= 4, diff.max()
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)


class Rich(__import__("gymnasium").Env):
    """Dict, Tuple, Box, Discrete, MultiBinary and Text leaves, an image Minari JPEG-encodes,
    and per-step infos with nested dicts and arrays: every column kind Minari writes."""

    def __init__(self):
        import gymnasium as gym
        from gymnasium import spaces

        self.observation_space = spaces.Dict({
            "pos": spaces.Box(-5, 5, (3,), np.float32),
            "cam": spaces.Box(0, 255, (32, 40, 3), np.uint8),
            "t": spaces.Tuple((spaces.Discrete(7), spaces.MultiBinary(4))),
            "mission": spaces.Text(12, min_length=0, charset="abcdeé go"),
        })
        self.action_space = spaces.Box(-1, 1, (2,), np.float32)
        self.cam = Camera()
        assert isinstance(self.cam, gym.Env)

    def obs(self):
        cam = self.cam.frame()[8:40, 12:52]
        bits = np.array([(self.k >> i) & 1 for i in range(4)], np.int8)
        return {"pos": self.pos.copy(), "cam": np.ascontiguousarray(cam), "t": (self.k % 7, bits),
                "mission": "go " + "é" * (self.k % 4) + "ab"[: self.k % 3]}

    def info(self):
        return {"x": float(self.pos[0]), "flag": bool(self.k % 2), "v": self.pos[:2].astype(np.float64),
                "nested": {"k": int(self.k)}}

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.cam.reset(seed=seed)
        self.pos, self.k = self.np_random.uniform(-1, 1, 3).astype(np.float32), 0
        return self.obs(), self.info()

    def step(self, action):
        self.pos[:2] += np.asarray(action, np.float32)
        self.cam.step(self.k % 3)
        self.k += 1
        return self.obs(), float(self.pos.sum()), bool(abs(self.pos[0]) > 4), self.k == 9, self.info()


def _leaves(x, prefix=""):
    """Minari's nested dicts/tuples of arrays as rollway's leaf-path keys."""
    if isinstance(x, dict):
        return {k: v for key, sub in x.items() for k, v in _leaves(sub, f"{prefix}{key}/").items()}
    if isinstance(x, tuple):
        return {k: v for i, sub in enumerate(x) for k, v in _leaves(sub, f"{prefix}_index_{i}/").items()}
    return {prefix.rstrip("/"): np.asarray(x)}


def _collect(minari, data_format):
    """Five episodes of Rich recorded by minari.DataCollector as `rich/<format>-v0`."""
    env = minari.DataCollector(Rich(), record_infos=True, data_format=data_format)
    rng = np.random.default_rng(11)
    for i in range(5):
        env.reset(seed=40 + i)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
            done = term or trunc
    env.create_dataset(dataset_id=f"rich/{data_format}-v0", algorithm_name="random")


def _minari_infos(infos):
    """Minari's per-episode infos (dict of arrays) as rollway's per-step dicts."""
    nested = infos["nested"]
    ks = nested["k"] if isinstance(nested, dict) else [d["k"] for d in nested]
    return [{"x": float(x), "flag": bool(f), "v": list(map(float, v)), "nested": {"k": int(k)}}
            for x, f, v, k in zip(infos["x"], infos["flag"], infos["v"], ks)]


@pytest.mark.parametrize("data_format", ["arrow", "parquet", "hdf5"])
def test_issue15_minari_formats_import_as_minari_reads_them(tmp_path, monkeypatch, data_format):
    """Issue 15: datasets minari.DataCollector writes in each of its data formats, with
    Dict/Tuple spaces, JPEG images and per-step infos, import to what minari reads back."""
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _collect(minari, data_format)
    back = rollway.import_minari(tmp_path / "minari" / "rich" / f"{data_format}-v0", tmp_path / "back", progress=False)
    m = minari.load_dataset(f"rich/{data_format}-v0")
    theirs, metas = list(m.iterate_episodes()), list(m.storage.get_episode_metadata(range(5)))
    assert len(back) == len(theirs) == 5
    assert [a.seed for a in back] == [int(e["seed"]) for e in metas] == list(range(40, 45))
    for a, b in zip(back, theirs):
        assert a.length == len(b.actions)
        mine, ref = a.observations, _leaves(b.observations)
        assert set(mine) == set(ref)
        for k in ref:
            if k == "cam":  # JPEG: both decode with libjpeg-turbo
                assert np.abs(mine[k].astype(int) - ref[k].astype(int)).max() <= 4
            else:
                np.testing.assert_array_equal(np.asarray(mine[k]), ref[k], err_msg=k)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        np.testing.assert_array_equal(a.terminations, b.terminations)
        np.testing.assert_array_equal(a.truncations, b.truncations)
        assert len(a.infos) == a.length + 1
        # minari 0.5.4's arrow reader gives nested infos back as an array of dicts, hdf5 as a dict of arrays.
        assert a.infos == _minari_infos(b.infos)
    if data_format != "hdf5":
        # A damaged episode file: an InputError naming it, and no half dataset.
        (part,) = (tmp_path / "minari" / "rich" / f"{data_format}-v0" / "data" / "3").glob("part-*")
        part.write_bytes(part.read_bytes()[:300])
        with pytest.raises(rollway.InputError, match=part.name):
            rollway.import_minari(tmp_path / "minari" / "rich" / f"{data_format}-v0", tmp_path / "again", progress=False)
        assert not (tmp_path / "again").exists()


@pytest.mark.parametrize("data_format", ["arrow", "parquet", "hdf5"])
def test_issue15_minari_export_in_each_format_round_trips(tmp_path, monkeypatch, data_format):
    """rollway → Minari (each data format) → rollway: minari.load_dataset reads what the
    dataset holds (images raw, so exactly), and the import gives the same episodes back."""
    minari = pytest.importorskip("minari")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    _collect(minari, "hdf5")
    src = rollway.import_minari(tmp_path / "minari" / "rich" / "hdf5-v0", tmp_path / "src", progress=False)
    rep = src.export("minari", tmp_path / "minari" / "out" / f"{data_format}-v0", data_format=data_format, progress=False)
    assert rep["episodes"] == 5 and rep["skipped_infos"] == []
    m = minari.load_dataset(f"out/{data_format}-v0")
    assert m.storage.metadata["data_format"] == data_format
    back = rollway.import_minari(tmp_path / "minari" / "out" / f"{data_format}-v0", tmp_path / "back", progress=False)
    for a, b, c in zip(src, m.iterate_episodes(), back):
        ref = _leaves(b.observations)
        for k in ref:
            np.testing.assert_array_equal(np.asarray(a.observations[k]), ref[k], err_msg=k)
            np.testing.assert_array_equal(np.asarray(a.observations[k]), np.asarray(c.observations[k]), err_msg=k)
        for x in (b, c):
            np.testing.assert_array_equal(a.actions, x.actions)
            np.testing.assert_array_equal(a.rewards, x.rewards)
            np.testing.assert_array_equal(a.terminations, x.terminations)
            np.testing.assert_array_equal(a.truncations, x.truncations)
        assert _minari_infos(b.infos) == a.infos == c.infos
        assert (a.seed, a.length) == (c.seed, c.length)
    with pytest.raises(rollway.InputError, match="hdf5, arrow, parquet"):
        src.export("minari", tmp_path / "minari" / "x" / "bad-v0", data_format="feather", progress=False)


@pytest.mark.parametrize("env, params, needs", [
    ("gym:HalfCheetah-v5", {"max_episode_steps": 50}, "mujoco"),
    ("atari:Pong-v5", {}, "ale_py"),
])
def test_issue55_standard_envs_round_trip_through_minari(env, params, needs, tmp_path):
    """Issue 55: MuJoCo and Atari episodes (a run's, as Minari's own mujoco/* and atari/* datasets hold
    them: the env's observations and actions, float64 and uint8 frames) export to a dataset minari
    reads, and import back equal."""
    minari = pytest.importorskip("minari")
    pytest.importorskip(needs)
    out = tmp_path / "ds"
    rollway.run(env=env, agent="random", episodes=2, seed=5, out=out, env_params=params, max_episode_steps=40, progress=False,
                frame_media="lz4", workers=1, envs_per_worker=2)
    ds = rollway.Dataset(out)
    rep = ds.export("minari", tmp_path / "m" / "std" / "random-v0", dataset_id="std/random-v0", progress=False)
    m = minari.MinariDataset(rep["path"])
    assert m.total_episodes == len(ds) == 2
    for a, b in zip(ds, m.iterate_episodes()):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)
        assert b.observations.dtype == a.observations.dtype
    back = rollway.import_minari(tmp_path / "m" / "std" / "random-v0", tmp_path / "back", progress=False)
    for a, b in zip(ds, back):
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)


@pytest.mark.parametrize("env, needs, recovered_id", [
    ("gym:HalfCheetah-v5", "mujoco", "HalfCheetah-v5"),
    ("gym:MountainCarContinuous-v0", "gymnasium", "MountainCarContinuous-v0"),
    ("atari:Pong-v5", "ale_py", "ALE/Pong-v5"),
    # Minari's own Atari datasets' layout: ALE's env itself, raw RGB frames (a frame leaf here).
    ("gym:ale_py:ALE/Pong-v5", "ale_py", "ALE/Pong-v5"),
])
def test_issue55_a_gymnasium_envs_minari_export_recovers_its_environment(env, needs, recovered_id, tmp_path):
    """Issue 55: the Minari export of an env Gymnasium made carries Gymnasium's own spec of it
    (recorded with the dataset; for `atari:` ids, the ALE env in `AtariPreprocessing` and
    `FrameStackObservation`, which rollway's preprocessing equals), so `recover_environment()`
    rebuilds the env, kwargs, wrappers and time limit included, and replaying an episode's actions
    from its seed there gives the recorded observations, rewards and flags; an import of that export
    keeps the spec for the next export."""
    minari = pytest.importorskip("minari")
    pytest.importorskip(needs)
    if needs == "ale_py":
        import ale_py  # noqa: F401  (registers ALE/ ids: recover_environment's gym.make needs them, as for Minari's own)
    out = tmp_path / "ds"
    params = {} if env.startswith("atari:") else {"max_episode_steps": 30}
    rollway.run(env=env, agent="random", episodes=2, seed=5, out=out, env_params=params, max_episode_steps=30, progress=False)
    ds = rollway.Dataset(out)
    rep = ds.export("minari", tmp_path / "m" / "std" / "random-v0", dataset_id="std/random-v0", progress=False)
    m = minari.MinariDataset(rep["path"])
    recovered = m.recover_environment()
    assert recovered.spec.id == recovered_id
    assert m.observation_space == recovered.observation_space
    a = ds[0]
    obs, _ = recovered.reset(seed=a.seed)
    np.testing.assert_array_equal(obs, a.observations[0])
    for t in range(len(a.actions)):
        obs, reward, term, trunc, _ = recovered.step(a.actions[t])
        np.testing.assert_array_equal(obs, a.observations[t + 1], err_msg=f"step {t}")
        # rollway's own cut (max_episode_steps=30) is a limit the recovered env does not have, for ALE.
        cut_here = t == len(a.actions) - 1 and recovered.spec.max_episode_steps is None
        assert (reward, term, trunc or cut_here) == (a.rewards[t], a.terminated[t], a.truncated[t]), t
    recovered.close()

    back = rollway.import_minari(rep["path"], tmp_path / "back", progress=False)
    again = back.export("minari", tmp_path / "m2" / "std" / "random-v1", dataset_id="std/random-v1", progress=False)
    assert minari.MinariDataset(again["path"]).recover_environment().spec.id == recovered_id
