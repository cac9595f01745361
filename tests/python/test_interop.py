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
