#!/usr/bin/env python3
"""Issue 45: a following loader's time from a commit to its first sample, on ``s3://`` vs
local disk, side by side on one machine (moto's S3 server on loopback, as ``bench/s3.py``).

Each repetition, for a local directory and for ``s3://bench/…`` in turn: a
``rollway.DataCollector`` creates the dataset (CartPole-v1), a ``rollway.Loader(…,
follow=True, clip=4, batch=1)`` opens it and spins on ``next_batch()`` in a thread, and the
main thread records one episode and ``save()``s it: the commit. The figure is the time from
calling ``save()`` to the loader's first batch: the commit itself (the shard written and
fsynced), then locally the loader's next look at the index; on the store the writer's push
(a poll of at most 50 ms, then stage, commit and publish) and the loader's pull (at most
every 250 ms, then the shard's GETs), so the commit comes at a random moment (0–500 ms)
after the loader opened.
Medians and ranges of ``--reps``. Progress to stderr, the report to stdout.

    bench/run_s3_follow.sh [--reps 15] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402
from s3 import BUCKET, start_server  # noqa: E402


def one(target: str) -> float:
    """Seconds from an episode's commit to the following loader's first sample of it."""
    import gymnasium as gym

    import rollway

    env = rollway.DataCollector(gym.make("CartPole-v1"), target)
    deadline = time.monotonic() + 30
    while True:  # the dataset exists (on the store: its metadata is pushed) before the loader opens it
        try:
            loader = rollway.Loader(target, clip=4, batch=1, follow=True)
            break
        except rollway.RollwayError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    seen: Dict[str, float] = {}

    def follow() -> None:
        while time.monotonic() < deadline + 30:
            if loader.next_batch() is not None:
                seen["at"] = time.monotonic()
                return
            time.sleep(0.001)

    t = threading.Thread(target=follow)
    t.start()
    # The loader pulls at most every 250 ms: commit at a random phase of that, as a learner would.
    time.sleep(random.uniform(0.0, 0.5))
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done = term or trunc
    env.reset(seed=1)  # ends the episode for the collector; save() commits it
    committed = time.monotonic()
    env.save()
    t.join()
    env.close()
    return seen["at"] - committed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()
    server, env = start_server()
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    load0 = os.getloadavg()
    times: Dict[str, List[float]] = {"local": [], "s3": []}
    try:
        with tempfile.TemporaryDirectory() as work:
            os.environ["ROLLWAY_CACHE_DIR"] = os.path.join(work, "cache")
            for rep in range(a.reps):
                times["local"].append(one(os.path.join(work, f"local-{rep}")))
                times["s3"].append(one(f"s3://{BUCKET}/follow-{rep}"))
                log(f"rep {rep + 1}/{a.reps}: local {times['local'][-1] * 1e3:.1f} ms, s3 {times['s3'][-1] * 1e3:.0f} ms")
    finally:
        server.kill()
    rows = [[where, f"{statistics.median(v) * 1e3:.1f}", f"{min(v) * 1e3:.1f} – {max(v) * 1e3:.1f}"] for where, v in times.items()]
    lines = [f"### A following loader, commit to first sample (`bench/s3_follow.py --reps {a.reps}`)", ""]
    lines += md_table(["dataset", "median ms", "range ms"], rows, "lrr")
    lines += ["", "CartPole-v1, one episode committed by `DataCollector.save()` (timed from the call); `Loader(follow=True, clip=4, batch=1)` "
              "spinning on `next_batch()`; moto's S3 server on loopback.", ""]
    lines += machine_note(None, load0, os.getloadavg(), packages=str(module_versions(["moto", "boto3"])))
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
