#!/usr/bin/env python3
"""Issue 72: how long one request to an object store keeps trying before it gives up, measured.

rollway's S3 client (object_store's) retries a request that meets a 5xx, a ``SlowDown`` or a
dropped connection up to 16 times, with jittered exponential backoff (each wait drawn between
0.1 s and twice the last one, at most 10 s), so its budget is a spread, not one figure. This
measures it: ``--reps`` times each, a request that meets a store answering every request
``503 SlowDown``, and one whose every connection is reset (a store that is down), through a
TCP proxy (tests/python/fault_proxy.py) in front of moto's S3 server on loopback. The request is
the first one of opening a dataset (``rollway.Dataset("s3://…")``: a LIST); reported: seconds
until the error, min / median / max, and (503s) the requests the store answered.

    bench/run_store_retry.sh [--reps 10] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import machine_note, md_table, module_versions, write_report  # noqa: E402
from s3 import BUCKET, start_server  # noqa: E402

sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from fault_proxy import Client  # noqa: E402


def give_up_s(proxy: Client) -> float:
    """Seconds until opening a dataset through ``proxy`` fails."""
    import rollway

    t = time.monotonic()
    try:
        rollway.Dataset(f"s3://{BUCKET}/retry/ds")
    except rollway.RollwayError:
        return time.monotonic() - t
    raise AssertionError("the store answered")


def measure(env: dict, fault: str, reps: int) -> tuple:
    """(seconds per rep, requests the store was sent per rep) under ``fault``."""
    secs, sent = [], []
    for _ in range(reps):
        proxy = Client(env["AWS_ENDPOINT_URL"])
        os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
        if fault == "slowdown":
            assert proxy.send("slowdown 100000") == "ok"
        else:
            # `down` answers only once it is over: started without waiting, it holds for the whole rep.
            proxy.start("down 3600")
            time.sleep(0.5)
        secs.append(give_up_s(proxy))
        if fault == "slowdown":
            sent.append(100000 - int(proxy.send("stats").split()[1]))
        proxy.close()
    return secs, sent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out")
    args = ap.parse_args()
    load0 = os.getloadavg()
    server, env = start_server()
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    os.environ["ROLLWAY_CACHE_DIR"] = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"rollway-retry-{os.getpid()}")
    rows = []
    try:
        for fault, what in (("slowdown", "every request answered `503 SlowDown`"), ("down", "every connection reset")):
            secs, sent = measure(env, fault, args.reps)
            rows.append([what, f"{min(secs):.1f}", f"{statistics.median(secs):.1f}", f"{max(secs):.1f}",
                         f"{min(sent)}–{max(sent)}" if sent else "(connections reset)"])
    finally:
        server.kill()
    text = "\n".join([
        "### How long one store request keeps trying (`bench/store_retry.py`)", "",
        *machine_note(None, load0, os.getloadavg(), packages=str(module_versions(["moto", "boto3"])))[:-1],
        "- rollway: the package this Python imports", "",
        f"- Method: {args.reps} times each, opening a dataset on `s3://` (its first request, a LIST) through a proxy "
        "that answers or drops every request; seconds until the error.", "",
        *md_table(["store", "min s", "median s", "max s", "requests sent"], rows, "lrrrr"), "",
    ])
    write_report(text + "\n", args.out)


if __name__ == "__main__":
    main()
