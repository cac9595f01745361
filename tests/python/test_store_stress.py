"""Issue 54: many writers recording one ``s3://`` dataset under faults, with a checker.

Eight member processes at a time (never more: a member runs every range it is given, one after
the other) write one run through the fault proxy (fault_proxy.py's ``chaos``: 503 SlowDown
bursts, reset connections, added latency) in front of a real S3 server (moto's), over several
lives of the run's driver:

- in each life but the last, each member is drawn a role: run to its end; be SIGKILLed mid-upload
  (its K-th staged PUT cut short by a proxy of its own: half the body sent, no answer), between
  its lease check and its commit, or between its commit and its publish (held at a failpoint
  after K pushes, so each kill lands mid-run however fast the machine); or stall between its lease
  check and its commit as a zombie. Then the driver is SIGKILLed; the next driver resumes, and
  the zombies are let go only after it has read what is committed (the window the fence closes);
- the test proves its own coverage (issue 72): every kind of kill, and a zombie whose commit was
  fenced, happened at least once; a life whose timing missed one (a member that finished before
  its point) is followed by another killed life, up to ``MAX_LIVES``;
- the last life runs what the ledger still lacks and closes the run, while a follower (a
  ``Loader(follow=True)``) samples the replay through a proxy of its own.

Throughout, a glob of ``steps/`` (pyarrow over S3, knowing nothing of rollway's index; the index
read just before and just after each listing) checks that it never reads a row of an uncommitted
episode, or one twice. At the end every episode is on the store exactly once, equal to a local
run's, and nothing staged, claimed or leased is left. The requests each writer and the follower
made are counted (bench/RESULTS.md prices them); ``ROLLWAY_STRESS_FIGURES=FILE`` writes the
figures as JSON."""

import collections
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
# What each life before the last must make happen, all of it at least once in the run (issue 72).
KILLS = ("upload", "commit", "publish")
COVERAGE = (*KILLS, "fenced")
MAX_LIVES = 6
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


def _parts(indices, members, tag):
    """Sorted run indices cut into ``min(members, len(indices))`` groups of about equal size, each
    group its contiguous ranges as a member's parts argument (``RUN:START:END:ID,…``)."""
    k = min(members, len(indices))
    groups = [indices[len(indices) * i // k:len(indices) * (i + 1) // k] for i in range(k)]
    out = []
    for i, group in enumerate(groups):
        ranges = []
        for x in group:
            if ranges and ranges[-1][1] == x:
                ranges[-1][1] = x + 1
            else:
                ranges.append([x, x + 1])
        out.append(",".join(f"0:{a}:{b}:{tag}m{i}r{j}" for j, (a, b) in enumerate(ranges)))
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


class Member:
    """One writer process of a life, and the role it was drawn (see the module docs)."""

    def __init__(self, life, i, parts, role):
        self.role, self.pause, self.stall = role, life.dir / f"m{i}", None
        self.pause.mkdir()
        env = dict(life.env)
        k = life.rng.randint(2, 4)
        if role == "upload":
            self.stall = Client(life.env["AWS_ENDPOINT_URL"])  # in front of the chaos proxy
            life.reap(self.stall.p)  # gone with the test even if it fails before close()
            assert self.stall.send(f"stall PUT staged {k}") == "ok"
            env["AWS_ENDPOINT_URL"] = self.stall.endpoint
        elif role != "run":
            env["ROLLWAY_PAUSE"] = f"member-{'publish' if role == 'publish' else 'commit'}@{k}:{self.pause}"
        self.p = subprocess.Popen([sys.executable, "-c", MEMBER, life.url, parts, "inline"], env=env, cwd=HERE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        life.reap(self.p)

    def at_point(self):
        """Whether it is held where its role stops it (mid-upload, or at its failpoint)."""
        if self.stall is not None:
            return int(self.stall.send("stalled")) > 0
        return self.role != "run" and any(self.pause.glob("*.paused"))

    def settled(self):
        return self.p.poll() is not None or self.at_point()

    def close(self):
        if self.stall is not None:
            self.stall.close()


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
        """Exactly ``min(WRITERS, len(missing))`` members over ``missing``: in the last life each
        runs to its end; before it, each role is drawn at least once and the rest at random."""
        parts = _parts(missing, WRITERS, f"l{self.n}")
        roles = ["run"] * len(parts) if last else [*KILLS, "zombie"]
        roles += [self.rng.choice(["run", *KILLS, "zombie"]) for _ in range(len(parts) - len(roles))]
        self.rng.shuffle(roles)
        self.members = [Member(self, i, p, role) for i, (p, role) in enumerate(zip(parts, roles))]
        assert len(self.members) == min(WRITERS, len(missing)), "the writer count the test names"

    def settle_members(self, landed):
        """Waits until every member ran to its end or is held where its role stops it; kills those
        drawn to die there, counting each kill in ``landed`` by where it landed. Members that
        finished before their point ran to their end: they are checked like the others."""
        _wait(lambda: all(m.settled() for m in self.members), "every member finished or held")
        for m in self.members:
            if m.p.poll() is None and m.role in KILLS:
                m.p.send_signal(signal.SIGKILL)
                m.p.wait()
                landed[m.role] += 1
            elif m.role == "run" or m.p.poll() is not None:
                _, err = m.p.communicate(timeout=180)
                assert m.p.returncode == 0, err
            m.close()

    def zombies(self):
        return [m for m in self.members if m.role == "zombie" and m.p.poll() is None]


def _committed_indices(url):
    return {e["run_index"] for e in rollway.Dataset(url).episodes}


def _release(zombies, landed):
    """Lets the last life's zombies go, now that the new driver has read what is committed: each
    is refused (its commit fenced, or, had it more to push, its next lease check)."""
    for m in zombies:
        (m.pause / "member-commit.go").touch()
        _, err = m.p.communicate(timeout=180)
        assert m.p.returncode != 0 and ("fenced" in err or "no longer holds the dataset's lease" in err), err
        landed["fenced"] += "fenced" in err


def _last_life(life, follower, figures):
    """Closes the run and stops the follower, which must have sampled the replay."""
    life.driver.stdin.write("finish\n")
    life.driver.stdin.flush()
    out, err = life.driver.communicate(timeout=180)
    assert life.driver.returncode == 0 and "finished" in out, err
    if follower.poll() is None:
        follower.stdin.write("stop\n")
        follower.stdin.flush()
    # A follower that died before the stop says why (its exit and stderr), not a broken pipe.
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 0 and int(out.strip()) > 0, err
    figures["follower_s"] = time.monotonic() - figures.pop("follower_started")


def _lives(url, env, follower_env, tmp_path, reap, landed, figures):
    """The driver's lives (see the module docs), until the run is closed."""
    rng, zombies = random.Random(54), []
    for n in range(MAX_LIVES):
        life = Life(n, url, env, tmp_path, rng, reap)
        ledger = _committed_indices(url)  # the new driver has read what is committed: now the zombies
        _release(zombies, landed)
        missing = sorted(set(range(EPISODES)) - ledger)
        assert missing, f"life {n}: something is left to run (coverage so far: {dict(landed)})"
        last = all(landed[k] for k in COVERAGE) or n == MAX_LIVES - 1
        follower = None
        if last:
            follower = subprocess.Popen([sys.executable, "-c", FOLLOWER, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=HERE, env=follower_env)
            reap(follower)
            figures["follower_started"] = time.monotonic()
        life.start_members(missing, last)
        life.settle_members(landed)
        zombies = life.zombies()
        if last:
            figures["lives"] = n + 1
            return _last_life(life, follower, figures)
        life.driver.send_signal(signal.SIGKILL)
        life.driver.wait()


@pytest.mark.heavy
def test_issue54_eight_writers_under_faults_kills_and_resumes_record_each_episode_once(s3_store, tmp_path, reap):
    """Up to a minute or more beside other tests: eight writer processes on one loopback S3 server
    (moto, in Python) through a proxy that drops and delays requests, over several killed lives; the
    faults and kills need enough of a run to land in, and every request is a Python server's work."""
    url = f"s3://{BUCKET}/stress/run"
    writers, follower_proxy = Client(s3_store), Client(s3_store)
    assert writers.send("chaos 54 40") == "ok"
    env = dict(os.environ, AWS_ENDPOINT_URL=writers.endpoint, PYTHONPATH=HERE)
    watched = subprocess.Popen(["sleep", "3600"])
    reap(watched)
    reader = subprocess.Popen([sys.executable, os.path.join(HERE, "glob_reader.py"), url, "--watch", str(watched.pid)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reap(reader)
    landed, figures, failed = collections.Counter(), {}, None
    try:
        _lives(url, env, dict(env, AWS_ENDPOINT_URL=follower_proxy.endpoint), tmp_path, reap, landed, figures)
    except Exception as e:  # noqa: BLE001 - the glob's verdict is reported first, then this
        failed = e
    finally:
        watched.kill()
        watched.wait()
        out, err = reader.communicate(timeout=300)
        writer_counts = writers.counts()
        follower_counts = follower_proxy.counts()
        writers.close()
        follower_proxy.close()
    # The glob's verdict comes first: a break of the commit protocol shows there, whatever else it broke.
    assert reader.returncode == 0, err
    if failed is not None:
        raise failed
    # Each kind of kill and a fenced zombie happened (a life that missed one was followed by another).
    assert all(landed[k] >= 1 for k in COVERAGE), f"coverage: {dict(landed)}"
    glob = json.loads(out)
    assert glob["nonempty"] > 0 and glob["proven"] > 0, glob

    ds = rollway.Dataset(url)
    rollway.run(**JOB, out=tmp_path / "local", progress=False, host="inline")
    assert fingerprints(ds) == fingerprints(rollway.Dataset(tmp_path / "local")), "every episode once, as a local run's"
    assert ds.verify()["problems"] == []
    keys, indexes = _store("stress/run")
    assert not [k for k in keys if k.startswith(".tmp/")], "nothing staged, claimed or leased is left"

    shards = len([i for i in indexes if i["episodes"]])
    requests = sum(v for k, v in writer_counts.items() if not k.startswith("fault "))
    faults = sum(v for k, v in writer_counts.items() if k.startswith("fault "))
    figures.update(shards=shards, fenced=len(indexes) - shards, landed=dict(landed),
                   writer_requests=writer_counts, follower_requests=follower_counts, faults=faults,
                   requests_per_shard=requests / shards, glob=glob)
    assert faults > 0, "the proxy injected faults"
    print(json.dumps(figures))
    if os.environ.get("ROLLWAY_STRESS_FIGURES"):
        with open(os.environ["ROLLWAY_STRESS_FIGURES"], "w") as f:
            json.dump(figures, f, indent=1)
