"""Issue 45: a dataset named by a URL of a scheme this build does not support
(``gs://bucket/x``; ``s3://`` is, see test_s3.py) is an :class:`rollway.InputError` naming the supported schemes at
every entry point, and never the relative directory ``./s3:/bucket/x``; a ``file://``
URL names a local directory."""

import os
import pathlib

import gymnasium as gym
import pytest

import rollway

URL = "gs://bucket/prefix/ds"
REFUSED = r"`gs://` are not supported by this build.*file://, s3://"


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    assert os.listdir(tmp_path) == [], "nothing was created"


@pytest.mark.parametrize("call", [
    lambda: rollway.Dataset(URL),
    lambda: rollway.Loader(URL, clip=4),
    lambda: rollway.DataCollector(gym.make("CartPole-v1"), URL),
    lambda: rollway.run(env="CartPole-v1", agent="random", episodes=2, out=URL, progress=False),
    lambda: rollway.run(resume=URL, progress=False),
    lambda: rollway.Rollout("CartPole-v1", "random", num_envs=2, steps_per_fragment=4, out=URL),
    lambda: rollway.import_minari("data", URL, progress=False),
    lambda: rollway.import_lerobot(URL, "data", progress=False),
], ids=["Dataset", "Loader", "DataCollector", "run-out", "run-resume", "Rollout", "import_minari", "import_lerobot"])
def test_issue45_unsupported_schemes_are_input_errors_and_create_nothing(cwd, call):
    with pytest.raises(rollway.InputError, match=REFUSED):
        call()


SECRET_URL = "s3://AKIAEXAMPLE:hunter2secret@bucket/ds"


@pytest.mark.parametrize("call", [
    lambda: rollway.Dataset(SECRET_URL),
    lambda: rollway.Loader(SECRET_URL, clip=4),
    lambda: rollway.DataCollector(gym.make("CartPole-v1"), SECRET_URL),
    lambda: rollway.run(env="CartPole-v1", agent="random", episodes=2, out=SECRET_URL, progress=False),
    lambda: rollway.Rollout("CartPole-v1", "random", num_envs=2, steps_per_fragment=4, out=SECRET_URL),
], ids=["Dataset", "Loader", "DataCollector", "run-out", "Rollout"])
def test_issue54_credentials_in_a_url_are_an_input_error_that_never_repeats_them(cwd, call):
    with pytest.raises(rollway.InputError, match="AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") as e:
        call()
    text = "".join(str(x) for x in (e.value, e.value.__cause__, e.value.__context__) if x is not None)
    assert "hunter2secret" not in text and "AKIAEXAMPLE" not in text, text


def test_issue45_a_url_that_pathlib_collapsed_is_refused_saying_why(cwd):
    with pytest.raises(rollway.InputError, match="pass the URL as a string"):
        rollway.Dataset(pathlib.Path(URL))


def test_issue45_a_file_url_names_a_local_dataset(tmp_path):
    url = (tmp_path / "ds").as_uri()
    rollway.run(env="CartPole-v1", agent="random", episodes=3, out=url, progress=False)
    assert len(rollway.Dataset(url)) == len(rollway.Dataset(tmp_path / "ds")) == 3
    assert len(list(rollway.Loader(url, clip=1, batch=8, shuffle=False))) > 0
    with pytest.raises(rollway.InputError, match=r"`gs://` are not supported"):
        rollway.Dataset(url).export("minari", "gs://bucket/cartpole/random-v0", progress=False)


KEY, SECRET = "AKIAEXAMPLE", "hunter2secret"
# The userinfo's `@` as it is written in the URL: plain, percent-encoded (once, twice) and full-width.
AT_SIGNS = ["@", "%40", "%2540", "\uff20"]


def _cli(argv):
    from rollway._cli import main

    with pytest.raises(SystemExit) as e:
        main(argv)
    if e.value.code != 2:
        raise AssertionError(f"exit {e.value.code}")
    raise rollway.InputError("exit 2")  # the CLI's message went to stderr, which the test reads


def _ray_run(u):
    import rollway.ray

    return rollway.ray.run(env="CartPole-v1", agent="random", episodes=2, out=u, num_actors=1)


ENTRY_POINTS = {
    "Dataset": lambda u, ds: rollway.Dataset(u),
    "Loader": lambda u, ds: rollway.Loader(u, clip=4),
    "Loader-follow": lambda u, ds: rollway.Loader(u, clip=4, follow=True),
    "DataCollector": lambda u, ds: rollway.DataCollector(gym.make("CartPole-v1"), u),
    "run-out": lambda u, ds: rollway.run(env="CartPole-v1", agent="random", episodes=2, out=u, progress=False),
    "run-resume": lambda u, ds: rollway.run(resume=u, progress=False),
    "Rollout": lambda u, ds: rollway.Rollout("CartPole-v1", "random", num_envs=2, steps_per_fragment=4, out=u),
    "import_minari-out": lambda u, ds: rollway.import_minari(ds, u, progress=False),
    "import_lerobot-src": lambda u, ds: rollway.import_lerobot(u, "data", progress=False),
    "export": lambda u, ds: rollway.Dataset(ds).export("minari", u, progress=False),
    "report-out": lambda u, ds: rollway.Dataset(ds).report(out=u),
    "cli-run-report": lambda u, ds: _cli(["run", "--env", "CartPole-v1", "--episodes", "2", "--out", u, "--report"]),
    "cli-relabel": lambda u, ds: _cli(["relabel", u]),
    "ray.run": lambda u, ds: _ray_run(u),
}


@pytest.mark.parametrize("at", AT_SIGNS, ids=["at", "pct40", "pct2540", "fullwidth"])
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_issue72_no_entry_point_prints_raises_or_stores_a_secret(tmp_path, monkeypatch, capfd, entry, at):
    """Every Python entry point, given a URL with credentials (its `@` written in any form),
    raises an InputError; the secret is in neither the exception, the output, nor a file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing leaves the machine
    ds = str(tmp_path / "ds")
    rollway.run(env="CartPole-v1", agent="random", episodes=2, out=ds, progress=False)
    url = f"s3://{KEY}:{SECRET}{at}bucket/ds"
    with pytest.raises(rollway.InputError) as e:
        ENTRY_POINTS[entry](url, ds)
    chain, x = [], e.value
    while x is not None and len(chain) < 8:
        chain.append(f"{x!r} {x}")
        x = x.__cause__ or x.__context__
    out = capfd.readouterr()
    text = "\n".join([*chain, out.out, out.err])
    assert "AWS_SECRET_ACCESS_KEY" in text, text
    for secret in (KEY, SECRET):
        assert secret not in text, text
        for f in tmp_path.rglob("*"):
            assert secret not in f.name and (f.is_dir() or secret.encode() not in f.read_bytes()), f
