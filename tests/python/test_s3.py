"""Issue 45: the Python package on ``s3://`` datasets, against a real S3 server on
loopback (moto's, started by ``s3_server.py``; the ``s3_store`` fixture of conftest.py): ``rollway.run(out=…)`` records to the
store, ``Dataset`` and ``Loader`` read it back exactly as the local run's, and the entry
points that need a local dataset say so."""

import numpy as np
import pytest

import rollway

pytest.importorskip("moto")

BUCKET = "rollway-test"


@pytest.fixture
def store(s3_store):
    return s3_store


def job(**kw):
    return dict(env="CartPole-v1", agent="random", episodes=300, seed=45, progress=False, **kw)


def test_issue45_run_to_s3_reads_back_as_the_local_run(store, tmp_path):
    url = f"s3://{BUCKET}/py/cartpole"
    summary = rollway.run(**job(out=url))
    assert summary.episodes == 300
    rollway.run(**job(out=tmp_path / "local"))
    remote, local = rollway.Dataset(url), rollway.Dataset(tmp_path / "local")
    assert len(remote) == len(local) == 300
    for i in (0, 150, 299):
        a, b = remote[i], local[i]
        np.testing.assert_array_equal(a.observations, b.observations)
        np.testing.assert_array_equal(a.actions, b.actions)
        assert (a.id, a.seed, a.return_) == (b.id, b.seed, b.return_)
    windows = lambda d: sum(len(b["actions"]) for b in rollway.Loader(d, clip=4, batch=64, shuffle=False))  # noqa: E731
    assert windows(url) == windows(tmp_path / "local") > 0
    assert remote.verify()["problems"] == []
    assert remote.export("minari", tmp_path / "exported" / "cartpole-v0", progress=False)["episodes"] == 300
    for needs_local in (remote.repair, lambda: remote.relabel(["key=x,val=1,label=y"])):
        with pytest.raises(rollway.InputError, match="local dataset"):
            needs_local()


def test_issue45_refresh_pulls_what_a_later_run_appended(store):
    url = f"s3://{BUCKET}/py/appended"
    rollway.run(**job(out=url))
    ds = rollway.Dataset(url)
    assert len(ds) == 300
    rollway.run(**job(out=url, append=True))
    ds.refresh()
    assert len(ds) == 600


def test_issue45_a_missing_bucket_is_an_input_error(store):
    with pytest.raises(rollway.InputError, match="no-such-bucket"):
        rollway.Dataset("s3://no-such-bucket/x")
    with pytest.raises(rollway.InputError, match="no-such-bucket"):
        rollway.run(**job(out="s3://no-such-bucket/x"))


@pytest.mark.parametrize("call", [
    lambda url: rollway.Loader(url, clip=4, follow=True),
    lambda url: rollway.DataCollector(__import__("gymnasium").make("CartPole-v1"), url),
    lambda url: rollway.Rollout("CartPole-v1", "random", num_envs=2, steps=4, out=url),
    lambda url: rollway.import_minari("data", url, progress=False),
], ids=["Loader-follow", "DataCollector", "Rollout", "import_minari"])
def test_issue45_entry_points_that_need_a_local_dataset_say_so(store, call):
    with pytest.raises(rollway.InputError, match="local dataset"):
        call(f"s3://{BUCKET}/py/local-only")
