#!/usr/bin/env python3
"""Issue 54: what many writers and a follower ask of an object store, counted, and what that
costs at S3's request prices: the plan past one machine, from measured counts.

One run of ``--episodes`` CartPole-v1 episodes (shards of ``--shard-episodes``) is recorded to
``s3://`` (moto's server on loopback, as ``bench/s3.py``) by ``--members`` member processes at
once under one driver, as ``rollway.ray.run`` writes a store (a ``HeldDataset`` holding the
lease, each member a ``join``ed part), while a following loader samples it; then the follower
idles on the finished replay for ``--idle-s``. A TCP proxy (tests/python/fault_proxy.py, no
faults injected) in front of the store counts every request by kind: one for the writers, one
for the follower. Reported: requests per committed shard by kind, the follower's requests per
hour (while the replay grows, and idle), and their price at S3 Standard's request prices.

    bench/run_store_requests.sh [--members 8] [--episodes 4000] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402
from s3 import BUCKET, start_server  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from fault_proxy import Client  # noqa: E402
from store_roles import DRIVER, MEMBER  # noqa: E402

# S3 Standard, us-east-1 list prices per 1,000 requests (DELETE is free).
PRICE = {"write": 0.005, "read": 0.0004}
WRITE_KINDS = ("PUT", "COPY", "LIST", "POST")

FOLLOWER = r"""
import sys, threading, time, rollway
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
while True:
    try:
        loader = rollway.Loader(sys.argv[1], clip=2, batch=16, follow=True, seed=1)
        break
    except rollway.RollwayError:
        time.sleep(0.05)  # not on the store yet
print("open", flush=True)
batches = 0
while not stop.is_set():
    batches += loader.next_batch() is not None
print(batches, flush=True)
"""


def price(counts: Dict[str, int]) -> float:
    """Dollars for these requests at S3 Standard's prices."""
    total = 0.0
    for kind, n in counts.items():
        method = kind.split()[0]
        if method != "DELETE":
            total += n / 1000 * PRICE["write" if method in WRITE_KINDS else "read"]
    return total


def run(args: argparse.Namespace, env: Dict[str, str]) -> Dict[str, object]:
    writers, follower_proxy = Client(env["AWS_ENDPOINT_URL"]), Client(env["AWS_ENDPOINT_URL"])
    url = f"s3://{BUCKET}/requests/run"
    job = {"env": "CartPole-v1", "agent": "random", "episodes": args.episodes, "seed": 54,
           "max_buffer_episodes": args.shard_episodes, "workers": 1, "envs_per_worker": 4}
    wenv = dict(env, AWS_ENDPOINT_URL=writers.endpoint)
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, url, "new", json.dumps(job)], env=wenv, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert driver.stdout.readline().strip() == "ready"
    follower = subprocess.Popen([sys.executable, "-c", FOLLOWER, url], env=dict(env, AWS_ENDPOINT_URL=follower_proxy.endpoint),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert follower.stdout.readline().strip() == "open"
    t0 = time.monotonic()
    per = -(-args.episodes // args.members)
    members = [subprocess.Popen([sys.executable, "-c", MEMBER, url, f"0:{a}:{min(a + per, args.episodes)}:m{i}"], env=wenv)
               for i, a in enumerate(range(0, args.episodes, per))]
    for m in members:
        assert m.wait() == 0
    driver.stdin.write("finish\n")
    driver.stdin.flush()
    assert "finished" in driver.communicate(timeout=300)[0]
    writing_s = time.monotonic() - t0
    growing = follower_proxy.counts()
    log(f"written in {writing_s:.1f} s; the follower idles {args.idle_s} s")
    time.sleep(args.idle_s)
    idle = {k: v - growing.get(k, 0) for k, v in follower_proxy.counts().items()}
    follower.stdin.write("stop\n")
    follower.stdin.flush()
    batches = int(follower.communicate(timeout=120)[0].strip())
    counts = writers.counts()
    writers.close()
    follower_proxy.close()
    import boto3

    c = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], region_name="us-east-1", aws_access_key_id="bench",
                     aws_secret_access_key="bench")
    pages = c.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix="requests/run/index/")
    keys = [o["Key"] for p in pages for o in p.get("Contents", [])]
    indexes = [json.loads(c.get_object(Bucket=BUCKET, Key=k)["Body"].read()) for k in keys]
    return {"counts": counts, "episodes": sum(len(i["episodes"]) for i in indexes),
            "shards": len([i for i in indexes if i["episodes"]]), "writing_s": writing_s, "growing": growing,
            "idle": idle, "batches": batches}


def report(args: argparse.Namespace, r: Dict[str, object]) -> str:
    counts, shards = r["counts"], r["shards"]
    rows = [[k, f"{n:,}", f"{n / shards:.2f}"] for k, n in sorted(counts.items())]
    total = sum(counts.values())
    rows.append(["**all**", f"**{total:,}**", f"**{total / shards:.2f}**"])
    per_shard_usd = price(counts) / shards
    hour = lambda c, s: {k: v * 3600 / s for k, v in c.items()}  # noqa: E731
    grow_h, idle_h = hour(r["growing"], r["writing_s"]), hour(r["idle"], args.idle_s)
    frows = [["while the replay grows", f"{sum(grow_h.values()):,.0f}", f"${price(grow_h):.3f}"],
             ["idle (nothing new)", f"{sum(idle_h.values()):,.0f}", f"${price(idle_h):.3f}"]]
    # The plan for 1,000 actors, each committing a shard every --shard-s seconds, and as many followers as learners.
    shards_h = 1000 * 3600 / args.shard_s
    lines = [
        "# Requests to an object store: many writers and a follower (`bench/store_requests.py`)", "",
        *machine_note(None, args.load0, os.getloadavg(), packages=str(module_versions(["moto", "boto3"])))[:-1],
        "- rollway: the package this Python imports", "",
        f"- Method: {args.members} member processes record {args.episodes} CartPole-v1 episodes ({args.shard_episodes} an "
        f"episode shard) into one `s3://` dataset under one driver, as `rollway.ray.run` on a store, while a "
        f"`Loader(follow=True)` samples it; requests counted by a proxy in front of moto's server (no faults).",
        f"- Committed: {r['episodes']} episodes in {shards} shards, in {r['writing_s']:.1f} s; the follower drew "
        f"{r['batches']:,} batches.", "",
        "Writers' requests (members and driver), by kind:", "",
        *md_table(["request", "count", "per committed shard"], rows, "lrr"), "",
        f"At S3 Standard's request prices (PUT/COPY/LIST $0.005, GET/HEAD $0.0004 per 1,000; DELETE free): "
        f"**${per_shard_usd * 1000:.3f} per 1,000 committed shards**.", "",
        "A following loader's requests (it pulls at most every 250 ms):", "",
        *md_table(["follower", "requests per hour", "per hour at S3 prices"], frows, "lrr"), "",
        f"A 1,000-actor run, each actor committing a shard every {args.shard_s:.0f} s ({shards_h:,.0f} shards an hour), "
        f"costs **${per_shard_usd * shards_h:.2f} an hour** in writers' requests; each following learner adds "
        f"${price(grow_h):.3f} an hour while it follows.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=8)
    ap.add_argument("--episodes", type=int, default=4000)
    ap.add_argument("--shard-episodes", type=int, default=10)
    ap.add_argument("--idle-s", type=float, default=20.0)
    ap.add_argument("--shard-s", type=float, default=10.0, help="the projection's seconds between an actor's shards")
    ap.add_argument("--out")
    args = ap.parse_args()
    args.load0 = os.getloadavg()
    server, env = start_server()
    try:
        r = run(args, env)
    finally:
        server.kill()
    write_report(report(args, r), args.out)


if __name__ == "__main__":
    main()
