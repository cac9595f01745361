"""Issue 45: the Python package on ``s3://`` datasets, against a real S3 server on
loopback (moto's, started by ``s3_server.py``; the ``s3_store`` fixture of conftest.py): ``rollway.run(out=…)`` records to the
store, ``Dataset`` and ``Loader`` read it back exactly as the local run's, a
``DataCollector`` and an import write there, and a member without its run's driver is
refused (Ray runs on the store: test_ray_s3.py)."""

import os
import time

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
    # relabel rewrites index objects, which the store's protocol never changes: refused (repair works: below).
    with pytest.raises(rollway.InputError, match="local dataset"):
        remote.relabel(["key=x,val=1,label=y"])


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


def test_issue45_a_replay_on_s3_is_sampled_by_a_following_loader_while_it_grows(store):
    """A learner's replay buffer on the store: ``Rollout(out="s3://…")`` commits and pushes as
    it goes, and a ``Loader(follow=True)`` on the URL (another node's, in a real cluster)
    samples it before the rollout ends; after ``close`` the store holds every finished episode."""
    url = f"s3://{BUCKET}/py/replay"
    finished, loader, batch = set(), None, None
    deadline = time.monotonic() + 60
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=32, seed=3, out=url, commit_every=0.05) as r:
        while batch is None and time.monotonic() < deadline:
            finished |= set(r.collect().finished["episode"].tolist())
            if loader is None:
                try:
                    loader = rollway.Loader(url, clip=2, stride=2, batch=8, follow=True)
                except rollway.InputError:
                    continue  # nothing pushed yet
            batch = loader.next_batch()
        assert batch is not None, "the following loader sampled the replay while the rollout ran"
        for _ in range(3):
            finished |= set(r.collect().finished["episode"].tolist())
    assert {e.run_index for e in rollway.Dataset(url)} == finished
    assert rollway.Dataset(url).metadata["runs"][0]["summary"]["kind"] == "rollout"
    with pytest.raises(rollway.InputError, match="already holds a dataset"):
        rollway.Rollout("CartPole-v1", "random", num_envs=2, steps_per_fragment=4, out=url)


def test_issue47_a_replay_on_s3_is_resumed_in_a_new_run_on_the_store(store, tmp_path):
    """A learner that lost its node resumes its replay from the store (a new node, a new cache)."""
    url = f"s3://{BUCKET}/py/resumed"
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=32, seed=3, out=url, commit_every=0.05) as r:
        for _ in range(3):
            r.collect()
    before = {e["id"]: e for e in rollway.Dataset(url).episodes}
    with rollway.Rollout("CartPole-v1", "random", num_envs=4, steps_per_fragment=32, seed=3, out=url, resume=True, version=7) as r:
        assert r.resumed["episodes"] == len(before)
        assert (r.collect().version == 7).all()
        r.collect()
    ds = rollway.Dataset(url)
    assert [run["summary"]["versions"] for run in ds.metadata["runs"]] == [[0, 0], [7, 7]]
    ids = [e["id"] for e in ds.episodes]
    assert len(ids) == len(set(ids)) > len(before) and set(before) <= set(ids)


def _collect(env, seeds):
    """Random episodes of ``env`` (a ``DataCollector``), one per seed, then closed."""
    for seed in seeds:
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(env.action_space.sample())
            done = term or trunc
    env.close()


def test_issue45_a_data_collector_and_an_import_write_to_s3(store, tmp_path):
    gym = pytest.importorskip("gymnasium")
    url = f"s3://{BUCKET}/py/collected"
    _collect(rollway.DataCollector(gym.make("CartPole-v1"), url, max_buffer_episodes=2), range(6))
    collected = rollway.Dataset(url)
    assert [e["seed"] for e in collected.episodes] == list(range(6)), "every episode, pushed at close"
    # Round trip through Minari's format: exported from the store's replica, imported back onto the store.
    collected.export("minari", tmp_path / "minari", dataset_id="cartpole/collected-v0", progress=False)
    back = rollway.import_minari(tmp_path / "minari", f"s3://{BUCKET}/py/imported", progress=False)
    assert [e["length"] for e in back.episodes] == [e["length"] for e in collected.episodes]
    assert np.array_equal(back[3].observations, collected[3].observations)
    with pytest.raises(rollway.InputError, match="already holds a dataset"):
        rollway.import_minari(tmp_path / "minari", f"s3://{BUCKET}/py/imported", progress=False)
    # Issue 58: the store's dataset is opened as a local one is: refused unless told to append, then appended.
    with pytest.raises(rollway.InputError, match="already holds a dataset.*append=True"):
        rollway.DataCollector(gym.make("CartPole-v1"), url)
    _collect(rollway.DataCollector(gym.make("CartPole-v1"), url, append=True), [40])
    again = rollway.Dataset(url)
    assert [e["seed"] for e in again.episodes] == [*range(6), 40] and len(again.metadata["runs"]) == 2


def test_issue45_a_member_without_its_driver_is_refused(store):
    url = f"s3://{BUCKET}/py/memberless"
    rollway.run(env="CartPole-v1", agent="random", episodes=4, out=url, progress=False)
    from rollway import _rollway

    with pytest.raises(rollway.InputError, match="no run's driver holds the dataset's lease"):
        _rollway.run(None, join=(url, "0:0:4:stray"), progress=False)
    with pytest.raises(rollway.InputError, match="prepared by its driver"):
        _rollway.run('{"env": "CartPole-v1", "episodes": 4}', out=f"s3://{BUCKET}/py/prep", prepare=True, progress=False)

def test_issue45_a_loader_of_the_newest_episodes_fetches_only_their_shards(store, tmp_path):
    url = f"s3://{BUCKET}/py/long-replay"
    settings = dict(env="CartPole-v1", agent="random", episodes=1200, seed=7, max_buffer_episodes=40, progress=False)
    rollway.run(**settings, out=url)
    rollway.run(**settings, out=tmp_path / "local")
    select = dict(clip=4, batch=16, seed=3, last_episodes=50)
    remote = rollway.Loader(url, **select)
    replica = os.path.join(os.environ["ROLLWAY_CACHE_DIR"], "replicas", "s3", BUCKET, "py", "long-replay")
    fetched = os.listdir(os.path.join(replica, "steps"))
    total = len(os.listdir(tmp_path / "local" / "index"))
    assert total >= 30 and 2 <= len(fetched) <= 3, f"only the shards of the newest 50 episodes: {len(fetched)} of {total}"
    local = rollway.Loader(tmp_path / "local", **select)
    for a, b in zip(remote, local):
        np.testing.assert_array_equal(a["observations"], b["observations"])
        np.testing.assert_array_equal(a["actions"], b["actions"])
    assert len(rollway.Dataset(url)) == 1200, "a reader of everything fetches the rest"
    assert len(os.listdir(os.path.join(replica, "steps"))) == total


def test_issue45_repair_on_s3_publishes_committed_staged_files_and_deletes_the_rest(store):
    import boto3

    url, prefix = f"s3://{BUCKET}/py/repair", "py/repair"
    rollway.run(env="CartPole-v1", agent="random", episodes=50, seed=2, max_buffer_episodes=10, out=url, progress=False)
    c = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    key = lambda rel: f"{prefix}/{rel}"  # noqa: E731
    # What a killed writer leaves: a committed shard not yet published (its file only staged), an
    # upload that never committed, and a member's claim.
    c.copy_object(Bucket=BUCKET, Key=key(".tmp/publish/steps/shard-000001.parquet"),
                  CopySource={"Bucket": BUCKET, "Key": key("steps/shard-000001.parquet")})
    c.delete_object(Bucket=BUCKET, Key=key("steps/shard-000001.parquet"))
    c.put_object(Bucket=BUCKET, Key=key(".tmp/publish/steps/shard-000099.parquet"), Body=b"half an upload")
    c.put_object(Bucket=BUCKET, Key=key(".tmp/claims/shard-000099.claim"), Body=b"a-dead-member")
    ds = rollway.Dataset(url)
    assert len(ds) == 50, "readers read the committed shard from its staged copy meanwhile"
    report = ds.repair()
    assert report["published"] == 1
    keys = {o["Key"][len(prefix) + 1:] for o in c.list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/")["Contents"]}
    assert "steps/shard-000001.parquet" in keys and not [k for k in keys if k.startswith(".tmp/")], keys
    assert ds.verify()["problems"] == []


# A run on the store whose envs sleep a little each step (a paced run, light on disk), recording until
# the test interrupts it: the test decides when it ends, after it has seen what it waits for.
PACED_RUN = r"""
import sys, time, gymnasium as gym, rollway
class Paced(gym.Wrapper):
    def step(self, action):
        time.sleep(0.001)
        return self.env.step(action)
try:
    rollway.run(env=lambda: Paced(gym.make("CartPole-v1")), agent="random", episodes=10**9, out=sys.argv[1],
                host="inline", workers=1, envs_per_worker=4, max_buffer_episodes=4)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.fixture
def proxy(store):
    """The fault proxy (fault_proxy.py) in front of the store: ``(its endpoint URL, send(command))``."""
    from fault_proxy import Client

    p = Client(store)
    yield p.endpoint, p.send
    p.close()


@pytest.mark.heavy
def test_issue54_a_store_that_stays_down_is_told_while_the_run_goes_on(store, proxy, tmp_path):
    import queue
    import signal
    import subprocess
    import sys
    import threading

    from conftest import committed

    endpoint, send = proxy
    url = f"s3://{BUCKET}/py/outage"
    run = subprocess.Popen([sys.executable, "-c", PACED_RUN, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, AWS_ENDPOINT_URL=endpoint))
    lines: "queue.Queue[str]" = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in run.stderr], daemon=True).start()

    def wait_for(text, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if text in line:
                return line
        return None

    try:
        deadline = time.monotonic() + 60
        while committed(url) == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert committed(url) > 0, "the run pushes before the outage"
        assert send("down 20") == "ok"
        warning = wait_for("rollway: warning:", 90)
        assert warning is not None and url in warning and "retrying" in warning, "said while it happens"
        assert run.poll() is None, "the run goes on meanwhile"
        assert wait_for("the store answers again", 120) is not None
        run.send_signal(signal.SIGINT)
        out, _ = run.communicate(timeout=120)
        assert "interrupted" in out
    finally:
        if run.poll() is None:
            run.kill()
    ds = rollway.Dataset(url)
    assert len(ds) > 0 and ds.verify()["problems"] == []


@pytest.mark.heavy
def test_issue54_a_rollout_says_when_its_store_stops_answering(store, proxy, monkeypatch):
    import threading

    endpoint, send = proxy
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    url = f"s3://{BUCKET}/py/rollout-outage"

    def paced(obs, first, state):
        time.sleep(0.002)
        return np.zeros(len(first), dtype=np.int64)

    with rollway.Rollout("CartPole-v1", paced, num_envs=2, steps_per_fragment=16, out=url, commit_every=0.05) as r:
        r.collect()
        threading.Thread(target=send, args=("down 20",), daemon=True).start()  # answers once the outage is over
        deadline = time.monotonic() + 120
        with pytest.warns(rollway.RollwayWarning, match="retrying, the run keeps recording locally"):
            while r.store_trouble is None and time.monotonic() < deadline:
                r.collect()
        assert url in r.store_trouble
        while r.store_trouble is not None and time.monotonic() < deadline:
            r.collect()
        assert r.store_trouble is None, "and it says so no longer once the store answers"
    assert len(rollway.Dataset(url)) > 0


READER = """
import sys, rollway
ds = rollway.Dataset(sys.argv[1])
print(len(ds), flush=True)
sys.stdin.read()  # holds the dataset open until the test closes this pipe
"""


def test_issue54_a_bounded_cache_keeps_a_followers_newest_shards_and_spares_an_open_reader(store, tmp_path, monkeypatch):
    """ROLLWAY_CACHE_MAX: a learner following a growing replay on the store keeps only the shards it
    samples, its older ones evicted once two rounds have passed them by; a reader that has the whole
    dataset open (another process) keeps the replica whole until it is gone."""
    import subprocess
    import sys

    cache = tmp_path / "cache"
    monkeypatch.setenv("ROLLWAY_CACHE_DIR", str(cache))
    url = f"s3://{BUCKET}/py/bounded"
    settings = dict(env="CartPole-v1", agent="random", seed=7, max_buffer_episodes=40, progress=False)
    rollway.run(**settings, episodes=600, out=url)
    rollway.run(**settings, episodes=1200, out=tmp_path / "local")
    local = tmp_path / "local" / "steps"
    shard = max(f.stat().st_size for f in local.iterdir())
    monkeypatch.setenv("ROLLWAY_CACHE_MAX", str(int(2.5 * shard)))  # room for the newest 50 episodes' 2 shards
    replica = cache / "replicas" / "s3" / BUCKET / "py" / "bounded"

    def steps():
        return sorted(p.name for p in (replica / "steps").iterdir())

    # Small rounds (2 batches), so that rounds, and with them pulls, come often.
    loader = rollway.Loader(url, clip=4, batch=16, last_episodes=50, round_windows=32, follow=True)
    first = steps()
    assert loader.next_batch() is not None and len(first) == 2, first
    rollway.run(**settings, episodes=1200, resume=url)  # the replay grows past what the follower holds

    def follow_until(pred, what):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            b = loader.next_batch()
            if b is not None and pred(b):
                return
            time.sleep(0.15)  # a follower pulls at most every 250 ms
        pytest.fail(f"{what}: {steps()}")

    follow_until(lambda b: b["episode_id"].min() >= 1150 and not set(first) & set(steps()), "the old shards stayed")
    assert len(steps()) == 2, steps()

    # A whole-dataset reader in another process pins the replica: nothing of it goes while it lives.
    reader = subprocess.Popen([sys.executable, "-c", READER, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert reader.stdout.readline().strip() == "1200"
    everything = len(list(local.iterdir()))
    for _ in range(8):
        time.sleep(0.15)
        assert loader.next_batch() is not None
        assert len(steps()) == everything, "an open reader's shards were evicted"
    reader.stdin.close()
    reader.wait(timeout=60)
    follow_until(lambda b: len(steps()) == 2, "the cache stayed over its bound once the reader was gone")
    monkeypatch.setenv("ROLLWAY_CACHE_MAX", "lots")
    with pytest.raises(rollway.InputError, match="ROLLWAY_CACHE_MAX"):
        rollway.Dataset(url)
