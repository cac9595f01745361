"""Issue 54: the store's last duplicate window, forced open and shown closed.

A member of a distributed run checks the dataset's lease, then commits: two requests. A
member that passes the check, stalls, and commits after its driver was killed and a new
driver has read what is committed would add episodes the new driver runs again. The new
driver fences every claimed, uncommitted shard number first (commits it as an empty shard),
so the stalled member's commit fails. The test holds a member between the two requests with
a failpoint (``ROLLWAY_PAUSE``), kills its driver, resumes, lets the member go, and checks
that every episode is on the store once, as a local run records it, and that a glob of
``steps/`` reads no row of the fenced shard. Against a real S3 server (moto's: the
``s3_store`` fixture); no Ray: the driver and members are the primitives ``rollway.ray``
drives (``HeldDataset``, a ``--join``ed part)."""

import json
import os
import subprocess
import sys
import time

import pytest

import rollway
from rollway import _rollway
from store_roles import DRIVER, MEMBER, fingerprints

pytest.importorskip("moto")

BUCKET = "rollway-test"
JOB = {"env": "CartPole-v1", "agent": "random", "episodes": 8, "seed": 54}

def _wait_for(path, proc, what):
    deadline = time.monotonic() + 120
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists(), f"{what}: {proc.communicate(timeout=30) if proc.poll() is not None else 'timed out'}"


def _driver_and_held_member(url, part, point, tmp_path, reap):
    """A driver holding a new run of ``JOB`` at ``url``, and a member running ``part`` of it, held
    at failpoint ``point`` (``ROLLWAY_PAUSE``) until the test creates ``pause / f"{point}.go"``."""
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, url, "new", json.dumps(JOB)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reap(driver)
    assert driver.stdout.readline().strip() == "ready", driver.communicate(timeout=30)
    pause = tmp_path / "pause"
    pause.mkdir()
    member = subprocess.Popen([sys.executable, "-c", MEMBER, url, part], env=dict(os.environ, ROLLWAY_PAUSE=f"{point}:{pause}"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reap(member)
    _wait_for(pause / f"{point}.paused", member, f"the member reached {point}")
    return driver, member, pause


def test_issue54_a_member_stalled_past_its_drivers_death_cannot_commit_beside_the_resumed_driver(s3_store, tmp_path, reap):
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs

    url = f"s3://{BUCKET}/fence/run"
    # The member runs every episode of the run and stops between its lease check and its commit.
    driver, member, pause = _driver_and_held_member(url, "0:0:8:stalled", "member-commit", tmp_path, reap)
    driver.kill()
    driver.wait()

    # The resumed driver takes the lease over (its holder, a process of this host, is gone),
    # settles, and reads its ledger: nothing of run 0 committed.
    hold = _rollway.HeldDataset(url, "resume")
    hold.pull_index()
    assert [e for e in rollway.Dataset(hold.work_dir).episodes if e["run"] == 0] == []
    # Now the stalled member commits: refused, as the fenced number is taken.
    (pause / "member-commit.go").touch()
    _, err = member.communicate(timeout=120)
    assert member.returncode != 0, "the stalled member's commit went through"
    assert "fenced" in err, err
    # The new driver runs what its ledger lacks, and closes.
    _rollway.run(None, join=(url, "0:0:8:resumed"), progress=False, python=sys.executable)
    hold.finish()

    ds = rollway.Dataset(url)
    rollway.run(**JOB, out=tmp_path / "local", progress=False)
    assert fingerprints(ds) == fingerprints(rollway.Dataset(tmp_path / "local")), "every episode once, as a local run's"
    assert ds.verify()["problems"] == []
    # A glob of steps/ (pyarrow over S3, knowing nothing of rollway's index) reads each episode's rows
    # (its steps and the row of its last observation) once.
    fs = pafs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"], region="us-east-1")
    table = pads.dataset(f"{BUCKET}/fence/run/steps", filesystem=fs, format="parquet").to_table(columns=["episode_id"])
    rows = {}
    for i in table.column("episode_id").to_pylist():
        rows[i] = rows.get(i, 0) + 1
    assert rows == {e["id"]: e["length"] + 1 for e in ds.episodes}


READER = r"""
import sys
import rollway
print(len(rollway.Dataset(sys.argv[1]).episodes))
"""


def test_issue54_a_reader_racing_a_shards_publish_finds_it_at_its_final_key(s3_store, tmp_path, reap):
    """A reader looks for a committed shard's file at its final key, then at its staged one. A writer
    that publishes between the two looks (a copy to the final key, then the staged one deleted)
    left the reader finding neither, and it called the dataset corrupt (seen in
    test_store_stress's follower). The test holds the reader between its two looks
    (``pull-staged``) while the writer, held until then after its commit (``member-publish``),
    publishes."""
    url = f"s3://{BUCKET}/race/run"
    driver, member, pause = _driver_and_held_member(url, "0:0:8:m", "member-publish", tmp_path, reap)
    reader = subprocess.Popen([sys.executable, "-c", READER, url],
                              env=dict(os.environ, ROLLWAY_PAUSE=f"pull-staged:{pause}", ROLLWAY_CACHE_DIR=str(tmp_path / "cache")),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reap(reader)
    _wait_for(pause / "pull-staged.paused", reader, "the reader missed the file at its final key")
    (pause / "member-publish.go").touch()
    _, err = member.communicate(timeout=120)
    assert member.returncode == 0, err
    (pause / "pull-staged.go").touch()  # the staged copy is gone now, the final one there
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    assert int(out.strip()) == JOB["episodes"]
    driver.stdin.write("\n")
    driver.stdin.flush()
    assert "finished" in driver.communicate(timeout=120)[0]
