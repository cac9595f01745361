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
