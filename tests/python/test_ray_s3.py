"""Issue 45: rollway on Ray writing an ``s3://`` dataset from nodes that share no
directory. A local Ray cluster of two worker nodes (loopback), each node's processes
with a cache directory of their own (``ROLLWAY_CACHE_DIR``, where a writer's work
directory lives), writes to a real S3 server (moto's, the ``s3_store`` fixture). The
dataset must equal a local run's, with an actor SIGKILLed mid-run too, and leave nothing
staged or claimed on the store; a Ray rollout's actors record one replay there."""

import os
import subprocess
import sys
import time

import pytest

import rollway

ray = pytest.importorskip("ray")
# A Ray cluster of three nodes starts and stops: a long test whose workers mostly wait (issue 66).
pytestmark = pytest.mark.heavy
pytest.importorskip("moto")
import rollway.ray  # noqa: E402

from test_ray import JOB, all_member_pids, fingerprints, kill_one_member, member_pids, when_committed  # noqa: E402

BUCKET = "rollway-test"


@pytest.fixture(scope="module")
def nodes(s3_store, tmp_path_factory):
    """Two one-CPU worker nodes (and a head that runs no actor), each with its own cache
    directory; the store's address and keys reach their processes as on a real cluster,
    through the nodes' environment. Yields the two cache directories."""
    from ray.cluster_utils import Cluster

    aws = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    caches = [tmp_path_factory.mktemp(f"node{i}-cache") for i in range(2)]
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    for cache in caches:
        c.add_node(num_cpus=1, env_vars={**aws, "ROLLWAY_CACHE_DIR": str(cache)})
    c.wait_for_nodes()
    ray.init(address=c.address, logging_level="ERROR", log_to_driver=False)
    os.environ["ROLLWAY_TEST_RAY_ADDRESS"] = c.address  # for a driver in another process
    yield caches
    os.environ.pop("ROLLWAY_TEST_RAY_ADDRESS", None)
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "ds"
    rollway.run(**JOB, out=out, progress=False)
    return fingerprints(out)


def store_keys(prefix):
    import boto3

    c = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    pages = c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/")
    return [o["Key"][len(prefix) + 1:] for p in pages for o in p.get("Contents", [])]


def test_issue45_ray_run_on_two_nodes_that_share_no_directory_writes_one_s3_dataset(nodes, local):
    url = f"s3://{BUCKET}/ray/two-nodes"
    s = rollway.ray.run(**JOB, out=url, num_actors=2, part_episodes=6, progress=False)
    assert s.complete and s.episodes == 48 and s.out == url and s.actor_failures == 0
    assert len(s.nodes) == 2, f"one actor per one-CPU node: {s.nodes}"
    assert fingerprints(url) == local, "episode for episode the local run"
    ds = rollway.Dataset(url)
    assert ds.metadata["runs"][0]["summary"]["episodes"] == 48, "the driver records the summary"
    assert ds.verify()["problems"] == []
    keys = store_keys("ray/two-nodes")
    assert not [k for k in keys if k.startswith(".tmp/")], f"nothing staged, claimed or leased is left: {keys}"
    shards = sorted(k for k in keys if k.startswith("index/"))
    assert len(shards) >= 8, f"every part's shards, renumbered into one sequence: {shards}"
    steps = rollway.ray.read_dataset(url)  # read by tasks on the two nodes, from the store
    assert steps.count() == sum(e["length"] + 1 for e in ds.episodes)
    for cache in nodes:
        assert (cache / "work").is_dir(), "each node wrote through a work directory of its own"
        assert not list((cache / "work").iterdir()), "and removed it once its shards were on the store"


def test_issue45_ray_actor_sigkilled_mid_run_on_s3_loses_nothing_and_duplicates_nothing(nodes, local):
    url = f"s3://{BUCKET}/ray/killed"
    killed = []
    watcher = when_committed(url, 6, kill_one_member(killed))
    s = rollway.ray.run(**JOB, out=url, num_actors=2, max_restarts=2, part_episodes=12, progress=False)
    watcher.join()
    assert killed, "the kill landed"
    assert s.complete and s.actor_failures >= 1
    assert fingerprints(url) == local, "what the killed actor had committed is kept, the rest run again, once"
    assert rollway.Dataset(url).verify()["problems"] == []
    keys = store_keys("ray/killed")
    assert not [k for k in keys if k.startswith(".tmp/")], f"the driver settled what the killed actor left: {keys}"


def test_issue45_a_ray_rollouts_actors_record_one_replay_on_s3(nodes):
    url = f"s3://{BUCKET}/ray/replay"
    with rollway.ray.Rollout("CartPole-v1", "random", num_actors=2, num_envs=3, steps_per_fragment=50, out=url,
                             commit_every=0.05) as r:
        replay = rollway.Loader(url, clip=4, batch=8, follow=True)
        # A shard reaches the store a push round (50 ms) after its commit, and the loader pulls at most
        # every 250 ms: give it seconds, not a number of fragments.
        batch, frags, deadline = None, [], time.monotonic() + 60
        while time.monotonic() < deadline:
            frags.append(r.collect())
            r.publish()
            batch = batch if batch is not None else replay.next_batch()
            if batch is not None and len(frags) >= 6:
                break
        assert batch is not None, "the learner's following loader saw the actors' commits on the store"
        with pytest.raises(rollway.InputError, match="is being written by"):
            rollway.run(env="CartPole-v1", episodes=2, out=url, append=True, progress=False)
    finished = {int(e) for f in frags for e in f.finished["episode"]}
    ds = rollway.Dataset(url)
    ids = [e["run_index"] for e in ds.episodes]
    assert len(ids) == len(set(ids)), "no episode recorded twice"
    assert finished <= set(ids), "every episode the learner saw end was recorded"
    assert {i % 6 // 3 for i in ids} == {0, 1}, "both actors recorded (actor a's slots are a*3 .. a*3+2 of 6)"
    stored = ds.metadata["runs"][0]["summary"]
    assert set(stored["actors"]) == {"0", "1"} and stored["fragments"] >= len(frags)
    assert not [k for k in store_keys("ray/replay") if k.startswith(".tmp/")]


def test_issue45_a_sigkilled_driver_is_resumed_on_s3_from_what_the_store_holds(nodes, local):
    """The driver process killed (-9) mid-run: Ray ends its actors, the store keeps every committed
    episode (and whatever a member staged), and a new driver's resume takes the lease over (its
    holder, a process of this host, is gone), settles, and finishes the same episodes, each once."""
    url = f"s3://{BUCKET}/ray/driver-killed"
    before = set(all_member_pids())
    code = ("import sys, rollway.ray\n"
            f"job = {JOB!r}\n"
            "rollway.ray.run(**job, out=sys.argv[1], address=sys.argv[2], num_actors=2, part_episodes=6, progress=False)\n")
    p = subprocess.Popen([sys.executable, "-c", code, url, os.environ["ROLLWAY_TEST_RAY_ADDRESS"]],
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        try:
            if len(rollway.Dataset(url).episodes) >= 6:
                break
        except rollway.RollwayError:
            pass  # not on the store yet
        time.sleep(0.05)
    p.kill()
    p.communicate(timeout=60)
    deadline = time.monotonic() + 60
    while member_pids(before, running=b"ray::_Member") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not member_pids(before, running=b"ray::_Member"), "the driver's actors outlived it"
    have = fingerprints(url)
    assert 6 <= len(have) < 48 and set(have.items()) <= set(local.items()), "killed mid-run, nothing wrong committed"
    s = rollway.ray.run(resume=url, num_actors=2, progress=False)
    assert s.complete and fingerprints(url) == local
    assert rollway.Dataset(url).verify()["problems"] == []
    assert not [k for k in store_keys("ray/driver-killed") if k.startswith(".tmp/")]
