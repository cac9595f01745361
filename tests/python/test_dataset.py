"""rollway.Dataset: episodes as numpy arrays, the index, selection, arrow, verify, relabel."""

import numpy as np
import pyarrow.parquet as pq
import pytest

import rollway


def test_episodes_are_gymnasium_shaped(cartpole):
    ds = rollway.Dataset(cartpole)
    assert len(ds) == 40
    total = 0
    for ep in ds:
        T = ep.length
        assert ep.observations.shape == (T + 1, 4) and ep.observations.dtype == np.float32
        assert ep.actions.shape == (T,) and ep.actions.dtype == np.int64
        assert ep.rewards.shape == (T,) and ep.rewards.sum() == pytest.approx(ep.return_)
        assert ep.terminations.dtype == np.bool_ and ep.truncations.dtype == np.bool_
        assert ep.terminations[-1] == (ep.status == "terminated")
        # Issue 58: the flags by a fragment's names too.
        assert ep.terminated is ep.terminations and ep.truncated is ep.truncations
        total += T
    assert total == ds.metadata["counts"]["steps"]
    assert ds[-1].id == ds[len(ds) - 1].id
    with pytest.raises(IndexError):
        ds[40]


def test_episode_arrays_own_their_memory(cartpole):
    ep = rollway.Dataset(cartpole)[3]
    obs = ep.observations
    del ep
    import gc

    gc.collect()
    assert np.isfinite(obs).all() and obs.shape[1] == 4  # still valid: the array keeps its buffer


def test_observations_replay_through_gymnasium(cartpole):
    """Seeded resets start where Gymnasium's do, so recorded episodes replay exactly."""
    import gymnasium as gym

    ds = rollway.Dataset(cartpole)
    for ep in list(ds)[:5]:
        env = gym.make("CartPole-v1")
        obs, _ = env.reset(seed=ep.seed)
        np.testing.assert_array_equal(obs, ep.observations[0])
        for t, a in enumerate(ep.actions):
            obs, r, term, trunc, _ = env.step(int(a))
            np.testing.assert_array_equal(obs, ep.observations[t + 1])
            assert (r, term, trunc) == (ep.rewards[t], ep.terminations[t], ep.truncations[t])


def test_index_table_and_select(cartpole):
    ds = rollway.Dataset(cartpole)
    rows = ds.episodes
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    table = ds.episodes_table()
    assert table.num_rows == 40 and table.column("length").to_pylist() == [r["length"] for r in rows]
    long = ds.select(min_length=30)
    assert long and all(ds[i].length >= 30 for i in long)
    assert len(long) == sum(r["length"] >= 30 for r in rows)
    assert ds.select(min_return=30, where=lambda e: e["seed"] % 2 == 0) == [
        i for i, r in enumerate(rows) if r["return"] >= 30 and r["seed"] % 2 == 0
    ]


def test_to_arrow_reads_committed_steps(cartpole):
    ds = rollway.Dataset(cartpole)
    arrow = ds.to_arrow()
    n = ds.metadata["counts"]["steps"]
    # One row per step plus the reset observation of each episode.
    assert arrow.count_rows() == n + len(ds)
    for f in ds._h.parquet_files():
        pq.read_metadata(f)


def test_images_decode_to_uint8_frames(pixels):
    ds = rollway.Dataset(pixels)
    ep = ds[0]
    frames = ep.observations["rgb"]
    assert frames.dtype == np.uint8 and frames.shape == (ep.length + 1, 32, 32, 3)
    assert frames.std() > 0  # decoded pictures, not zeros
    assert ep.observations["inventory"].shape[0] == ep.length + 1


def test_verify_and_relabel(tmp_path):
    out = tmp_path / "ds"
    rollway.run(env="CartPole-v1", agent="random", episodes=30, out=out, progress=False)
    ds = rollway.Dataset(out)
    assert ds.verify()["problems"] == []
    changed = ds.relabel(["kind=length,min=25,label=long"])
    assert changed == sum(e["length"] >= 25 for e in ds.episodes)
    assert ds.select("long") == [i for i, e in enumerate(ds.episodes) if e["length"] >= 25]
    # Damage a committed file: verify reports it, reading the dataset never changes it.
    steps = sorted((out / "steps").iterdir())[0]
    data = bytearray(steps.read_bytes())
    data[len(data) // 2] ^= 0xFF
    steps.write_bytes(bytes(data))
    report = rollway.Dataset(out).verify()
    assert report["problems"], report
    assert steps.read_bytes() == bytes(data)


def test_relabel_with_a_bad_filter_is_input_error(cartpole):
    with pytest.raises(rollway.InputError):
        rollway.Dataset(cartpole).relabel(["kind=nonsense"])


def test_report_writes_one_page_beside_the_dataset_and_changes_nothing(cartpole, tmp_path):
    import hashlib
    import os

    def digest(root):
        out = {}
        for d, _, files in os.walk(root):
            for f in files:
                p = os.path.join(d, f)
                out[p] = hashlib.sha256(open(p, "rb").read()).hexdigest()
        return out

    ds = rollway.Dataset(cartpole)
    before = digest(cartpole)
    page = ds.report(tmp_path / "page.html")
    assert page == str(tmp_path / "page.html")
    html = open(page, encoding="utf-8").read()
    assert html.startswith("<!DOCTYPE html>") and "CartPole-v1" in html and html.count('<svg class="plot"') >= 3
    assert digest(cartpole) == before
    with pytest.raises(ValueError, match="no/such/dir"):  # an unusable output path: input error
        ds.report(tmp_path / "no" / "such" / "dir" / "page.html")
