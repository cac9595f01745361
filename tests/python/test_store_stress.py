"""Issue 54: many writers recording one ``s3://`` dataset under faults, with a checker.

Eight member processes at a time write one run through the fault proxy (fault_proxy.py's
``chaos``: 503 SlowDown bursts, reset connections, added latency) in front of a real S3
server (moto's), over three lives of the run's driver:

- in each of the first two lives, members chosen by a seeded draw are SIGKILLed mid-push (held
  by a failpoint between their lease check and their commit, after a chosen number of pushes,
  so each kill lands mid-run however fast the machine), others are left stalled there as
  zombies, and the driver is SIGKILLed; the next driver resumes, and the zombies are let go
  only after it has read what is committed (the window the fence closes);
- the last life runs what the ledger still lacks and closes the run, while a follower (a
  ``Loader(follow=True)``) samples the replay through a proxy of its own.

Throughout, a glob of ``steps/`` (pyarrow over S3, knowing nothing of rollway's index) checks
that it never reads a row of an uncommitted episode, or one twice. At the end every episode is
on the store exactly once, equal to a local run's, and nothing staged, claimed or leased is
left. The requests each writer and the follower made are counted (bench/RESULTS.md prices
them); ``ROLLWAY_STRESS_FIGURES=FILE`` writes the figures as JSON."""

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import rollway
from fault_proxy import Client
from store_roles import DRIVER, MEMBER, fingerprints

pytest.importorskip("moto")
pytest.importorskip("gymnasium")

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = "rollway-test"
WRITERS = 8
EPISODES = 240
JOB = {"env": "paced_env:make", "agent": "random", "episodes": EPISODES, "seed": 54, "max_buffer_episodes": 3,
       "workers": 1, "envs_per_worker": 2}

# A learner's follower on the replay: samples it until told to stop; prints its batches.
FOLLOWER = r"""
import sys, threading, rollway
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
loader = rollway.Loader(sys.argv[1], clip=2, batch=16, follow=True, seed=1)
batches = 0
while not stop.is_set():
    if loader.next_batch() is not None:
        batches += 1
print(batches, flush=True)
"""


def _ranges(indices, parts):
    """Sorted run indices cut into at most ``parts`` contiguous ranges of about equal size."""
    size = max(1, -(-len(indices) // parts))
    out = []
    for i in indices:
        if out and out[-1][1] == i and out[-1][1] - out[-1][0] < size:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return out


def _wait(cond, what, seconds=180):
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _store(prefix):
    """The keys under ``prefix`` on the store, and its index objects (parsed)."""
    import boto3

    c = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
    pages = c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/")
    keys = [o["Key"][len(prefix) + 1:] for p in pages for o in p.get("Contents", [])]
    get = lambda k: json.loads(c.get_object(Bucket=BUCKET, Key=f"{prefix}/{k}")["Body"].read())  # noqa: E731
    return keys, [get(k) for k in keys if k.startswith("index/")]


class Life:
    """One life of the run's driver and the members it starts."""

    def __init__(self, n, url, env, tmp_path, rng, reap):
        self.n, self.url, self.env, self.rng, self.reap = n, url, env, rng, reap
        self.dir = tmp_path / f"life{n}"
        self.dir.mkdir()
        want = "new" if n == 0 else "resume"
        self.driver = subprocess.Popen([sys.executable, "-c", DRIVER, url, want, json.dumps(JOB)], env=env, cwd=HERE,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reap(self.driver)
        assert self.driver.stdout.readline().strip() == "ready", self.driver.communicate(timeout=60)
        self.members = []

    def start_members(self, missing, last):
        """A member per range of ``missing``: in the last life each runs to its end; before it, each
        is drawn to run, to be killed mid-push, or to stall there as a zombie."""
        for i, (a, b) in enumerate(_ranges(missing, WRITERS)):
            role = "run" if last else self.rng.choice(["run", "kill", "kill", "zombie"])
            pause = self.dir / f"m{i}"
            pause.mkdir()
            env = dict(self.env)
            if role != "run":
                env["ROLLWAY_PAUSE"] = f"member-commit@{self.rng.randint(2, 4)}:{pause}"
            p = subprocess.Popen([sys.executable, "-c", MEMBER, self.url, f"0:{a}:{b}:l{self.n}m{i}", "inline"], env=env, cwd=HERE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.reap(p)
            self.members.append((role, pause, p))

    def settle_members(self):
        """Waits until every member ran to its end or is held at its failpoint; kills those drawn
        to die. How many kills landed mid-push. Members that finished before their pause point
        ran to their end: they are checked like the others."""
        _wait(lambda: all(p.poll() is not None or (d / "member-commit.paused").exists() for _, d, p in self.members),
              "every member finished or paused")
        kills = 0
        for role, _, p in self.members:
            if p.poll() is None and role == "kill":
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
            elif role == "run" or p.poll() is not None:
                _, err = p.communicate(timeout=180)
                assert p.returncode == 0, err
        return kills

    def zombies(self):
        return [(d, p) for role, d, p in self.members if role == "zombie" and p.poll() is None]


def _committed_indices(url):
    return {e["run_index"] for e in rollway.Dataset(url).episodes}


@pytest.mark.heavy
def test_issue54_eight_writers_under_faults_kills_and_resumes_record_each_episode_once(s3_store, tmp_path, reap):
    """Up to a minute or more beside other tests: eight writer processes on one loopback S3 server
    (moto, in Python) through a proxy that drops and delays requests, over several killed lives; the
    faults and kills need enough of a run to land in, and every request is a Python server's work."""
    rng, url = random.Random(54), f"s3://{BUCKET}/stress/run"
    writers, follower_proxy = Client(s3_store), Client(s3_store)
    assert writers.send("chaos 54 40") == "ok"
    env = dict(os.environ, AWS_ENDPOINT_URL=writers.endpoint, PYTHONPATH=HERE)
    watched = subprocess.Popen(["sleep", "3600"])
    reap(watched)
    reader = None
    kills, zombies, figures = 0, [], {}
    try:
        for n in range(3):
            life = Life(n, url, env, tmp_path, rng, reap)
            if reader is None:
                reader = subprocess.Popen([sys.executable, os.path.join(HERE, "glob_reader.py"), url, "--watch", str(watched.pid)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                reap(reader)
            # The new driver has read what is committed: the last life's zombies commit only now.
            ledger = _committed_indices(url)
            for d, p in zombies:
                (d / "member-commit.go").touch()
                _, err = p.communicate(timeout=180)
                # Refused: its commit fenced, or (had it more to push) its next lease check.
                assert p.returncode != 0 and ("fenced" in err or "no longer holds the dataset's lease" in err), err
            missing = sorted(set(range(EPISODES)) - ledger)
            assert missing, f"life {n}: something is left to run"
            last = n == 2
            follower = None
            if last:
                follower = subprocess.Popen([sys.executable, "-c", FOLLOWER, url], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=HERE,
                                            env=dict(env, AWS_ENDPOINT_URL=follower_proxy.endpoint))
                reap(follower)
                t_follow = time.monotonic()
            life.start_members(missing, last)
            kills += life.settle_members()
            zombies = life.zombies()
            if not last:
                life.driver.send_signal(signal.SIGKILL)
                life.driver.wait()
                continue
            life.driver.stdin.write("finish\n")
            life.driver.stdin.flush()
            out, err = life.driver.communicate(timeout=180)
            assert life.driver.returncode == 0 and "finished" in out, err
            follower.stdin.write("stop\n")
            follower.stdin.flush()
            out, err = follower.communicate(timeout=120)
            assert follower.returncode == 0 and int(out.strip()) > 0, err
            figures["follower_s"] = time.monotonic() - t_follow
        assert kills >= 2, f"members killed mid-push: {kills}"
    finally:
        watched.kill()
        watched.wait()
        if reader is not None:
            out, err = reader.communicate(timeout=300)
        writer_counts = writers.counts()
        follower_counts = follower_proxy.counts()
        writers.close()
        follower_proxy.close()
    assert reader.returncode == 0, err
    glob = json.loads(out)
    assert glob["nonempty"] > 0, glob

    ds = rollway.Dataset(url)
    rollway.run(**JOB, out=tmp_path / "local", progress=False, host="inline")
    assert fingerprints(ds) == fingerprints(rollway.Dataset(tmp_path / "local")), "every episode once, as a local run's"
    assert ds.verify()["problems"] == []
    keys, indexes = _store("stress/run")
    assert not [k for k in keys if k.startswith(".tmp/")], "nothing staged, claimed or leased is left"

    shards = len([i for i in indexes if i["episodes"]])
    requests = sum(v for k, v in writer_counts.items() if not k.startswith("fault "))
    faults = sum(v for k, v in writer_counts.items() if k.startswith("fault "))
    figures.update(shards=shards, fenced=len(indexes) - shards, kills=kills,
                   writer_requests=writer_counts, follower_requests=follower_counts, faults=faults,
                   requests_per_shard=requests / shards, glob_samples=glob["samples"])
    assert faults > 0, "the proxy injected faults"
    print(json.dumps(figures))
    if os.environ.get("ROLLWAY_STRESS_FIGURES"):
        with open(os.environ["ROLLWAY_STRESS_FIGURES"], "w") as f:
            json.dump(figures, f, indent=1)
