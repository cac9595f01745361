#!/usr/bin/env python3
"""Issue 45: datasets on an object store vs on local disk, side by side on one machine.

The store is moto's S3 server on loopback (``tests/python/s3_server.py``, the one the
tests use), so these figures are rollway's cost of the object-store protocol on the
same host, with moto's own speed as the floor: the report measures that too (boto3
PUT and GET of one 32 MB object, the bandwidth every byte of ours goes through).

For each repetition, in turn (fresh directories, a fresh cache each time):

* **record**: ``rollway run --env ENV --agent random --episodes N --seed 0 -q --out X``
  with X a local directory and ``s3://bench/…``, wall time of the whole command (the s3
  run returns once every shard is on the store) → steps/s; for CartPole-v1 and for the
  pixel env PixelMine-v0 (frames as lz4).
* **load**: ``rollway load X --clip 16 --batch 256 --epochs 1 --json`` on the local
  dataset, on the s3 one with an empty cache (the pull included) and again with the
  replica in place (nothing to pull) → windows/s of the whole command.

* **load the newest**: the same with ``--last-episodes N/10``: from the store, a loader
  fetches only the shards its selection reads (cold cache).
* **record the default job**: ``rollway run -q --out X`` (PixelMine-v0, the miner agent,
  H.264 frames; 16,000 steps).

Medians of ``--reps``. The follow loader's commit-to-first-sample time is
``bench/s3_follow.py``'s. Progress goes to stderr, the report to stdout.

    bench/run_s3.sh [--reps 3] [--cartpole-episodes 20000] [--pixel-episodes 200] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402

SERVER = os.path.join(HERE, "..", "tests", "python", "s3_server.py")
BUCKET = "bench"


def start_server() -> tuple:
    server = subprocess.Popen([sys.executable, SERVER, BUCKET], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    endpoint = server.stdout.readline().strip()
    env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
               AWS_REGION="us-east-1")
    return server, env


def store_floor(env: Dict[str, str], mb: int = 32) -> Dict[str, float]:
    """moto's own PUT, server-side COPY and GET bandwidth for one object, MB/s (boto3)."""
    import boto3

    c = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="bench",
                     aws_secret_access_key="bench", region_name="us-east-1")
    body = os.urandom(mb << 20)
    t = time.perf_counter()
    c.put_object(Bucket=BUCKET, Key="floor/blob", Body=body)
    put = time.perf_counter() - t
    t = time.perf_counter()
    c.copy_object(Bucket=BUCKET, Key="floor/copy", CopySource={"Bucket": BUCKET, "Key": "floor/blob"})
    copy = time.perf_counter() - t
    t = time.perf_counter()
    c.get_object(Bucket=BUCKET, Key="floor/blob")["Body"].read()
    get = time.perf_counter() - t
    return {"put": mb * 1.048576 / put, "copy": mb * 1.048576 / copy, "get": mb * 1.048576 / get}


def dir_mb(path: str) -> float:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) / 1e6


def timed(cmd: List[str], env: Dict[str, str]) -> tuple:
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
    return time.perf_counter() - t, out.stdout


def steps_of(rollway: str, dataset: str, env: Dict[str, str]) -> int:
    _, out = timed([rollway, "inspect", "--json", dataset], env)
    return int(json.loads(out)["steps"])


def one_rep(rollway: str, env: Dict[str, str], work: str, rep: int, jobs: Dict[str, int]) -> Dict[str, float]:
    r: Dict[str, float] = {}
    for name, episodes in jobs.items():
        job = ["--env", name, "--agent", "random", "--episodes", str(episodes), "--seed", "0", "-q"]
        local, url = os.path.join(work, f"{name}-{rep}"), f"s3://{BUCKET}/{name}-{rep}"
        cache = os.path.join(work, f"cache-{rep}")
        e = dict(env, ROLLWAY_CACHE_DIR=cache)
        for where, out in (("local", local), ("s3", url)):
            secs, _ = timed([rollway, "run", *job, "--out", out], e)
            r[f"record {name} {where}"] = secs
        steps = steps_of(rollway, local, e)
        r[f"mb {name}"], r[f"steps {name}"] = dir_mb(local), steps
        for k in list(r):
            if k.startswith(f"record {name} "):
                r[k] = steps / r[k]
        shutil.rmtree(cache, ignore_errors=True)
        load = ["load", "--clip", "16", "--batch", "256", "--epochs", "1", "--json"]
        for where, ds in (("local", local), ("s3 cold", url), ("s3 warm", url)):
            secs, out = timed([rollway, load[0], ds, *load[1:]], e)
            r[f"load {name} {where}"] = json.loads(out)["windows"] / secs
        shutil.rmtree(cache, ignore_errors=True)
        # A learner's replay: only the newest episodes; from the store, only their shards are fetched.
        newest = [*load, "--last-episodes", str(max(1, episodes // 10))]
        for where, ds in (("local", local), ("s3 cold", url)):
            secs, out = timed([rollway, newest[0], ds, *newest[1:]], e)
            r[f"newest {name} {where}"] = json.loads(out)["windows"] / secs
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(local, ignore_errors=True)
    # The default job (`rollway run`, PixelMine-v0 with the miner agent, H.264 frames): 16,000 steps.
    for where, out in (("local", os.path.join(work, f"default-{rep}")), ("s3", f"s3://{BUCKET}/default-{rep}")):
        secs, _ = timed([rollway, "run", "-q", "--out", out], dict(env, ROLLWAY_CACHE_DIR=os.path.join(work, f"cache-{rep}")))
        r[f"record default {where}"] = 16000 / secs
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--cartpole-episodes", type=int, default=20000)
    p.add_argument("--pixel-episodes", type=int, default=200)
    p.add_argument("--rollway", default="target/release/rollway")
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()
    jobs = {"CartPole-v1": a.cartpole_episodes, "PixelMine-v0": a.pixel_episodes}
    server, env = start_server()
    load0 = os.getloadavg()
    reps: List[Dict[str, float]] = []
    try:
        floor = store_floor(env)
        with tempfile.TemporaryDirectory() as work:
            for rep in range(a.reps):
                log(f"rep {rep + 1}/{a.reps}")
                reps.append(one_rep(a.rollway, env, work, rep, jobs))
    finally:
        server.kill()
    med = {k: statistics.median(r[k] for r in reps) for k in reps[0]}
    rows, floors = [], []
    for name in jobs:
        rec_l, rec_s = med[f"record {name} local"], med[f"record {name} s3"]
        rows.append([f"record {name}, steps/s", f"{rec_l:,.0f}", f"{rec_s:,.0f}", "", f"{rec_s / rec_l:.2f}×", ""])
        # The protocol makes the store take every byte twice: a PUT, then a server-side COPY.
        mb, steps = med[f"mb {name}"], med[f"steps {name}"]
        store_s = mb / floor["put"] + mb / floor["copy"]
        floors.append(f"{name}: {mb:,.0f} MB; moto's PUT + COPY of them alone takes {store_s:.1f} s, "
                      f"a ceiling of {steps / store_s:,.0f} steps/s ({steps / store_s / rec_l:.2f}× local) with nothing else running")
        ld = [med[f"load {name} {w}"] for w in ("local", "s3 cold", "s3 warm")]
        rows.append([f"load {name}, windows/s", f"{ld[0]:,.0f}", f"{ld[1]:,.0f}", f"{ld[2]:,.0f}",
                     f"{ld[1] / ld[0]:.2f}×", f"{ld[2] / ld[0]:.2f}×"])
        nl, ns = med[f"newest {name} local"], med[f"newest {name} s3 cold"]
        rows.append([f"load {name}, newest {max(1, jobs[name] // 10)} episodes only, windows/s", f"{nl:,.0f}", f"{ns:,.0f}", "",
                     f"{ns / nl:.2f}×", ""])
    dl, dss = med["record default local"], med["record default s3"]
    rows.insert(0, ["record the default job (`rollway run`), steps/s", f"{dl:,.0f}", f"{dss:,.0f}", "", f"{dss / dl:.2f}×", ""])
    lines = [f"### Datasets on S3 vs local disk (`bench/s3.py --reps {a.reps}`, moto's server on loopback)", ""]
    lines += md_table(["what (whole command)", "local disk", "s3 (cold cache)", "s3 (warm replica)", "s3 / local", "warm / local"],
                      rows, "lrrrrr")
    lines += ["", f"The store's floor (boto3, one 32 MB object): PUT {floor['put']:.0f} MB/s, COPY {floor['copy']:.0f} MB/s, "
              f"GET {floor['get']:.0f} MB/s. Recording's ceiling there:", ""]
    lines += [f"- {f}" for f in floors]
    lines += ["",
              f"Jobs: CartPole-v1 {a.cartpole_episodes} episodes, PixelMine-v0 {a.pixel_episodes} episodes "
              "(random agent, seed 0); medians of the reps, taken in turn.", ""]
    lines += machine_note(a.rollway, load0, os.getloadavg(), packages=str(module_versions(["moto", "boto3"])))
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
