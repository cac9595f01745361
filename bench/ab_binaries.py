"""Two rollway binaries side by side (a refactor's before and after): the default job's
wall time and CartPole-v1 random-action throughput, the runs of A and B alternating so
that a drift of the machine hits both alike. Medians, spreads and the ratio B / A.

    python bench/ab_binaries.py --a /tmp/rollway-before --b target/release/rollway --reps 5
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import fmt_rate, log

CARTPOLE = ["run", "--env", "CartPole-v1", "--agent", "random", "--workers", "2", "--envs-per-worker", "1024",
            "--mode", "async", "--steps", "30000000", "--no-record", "-q"]


def default_job(binary: str, tmp: str) -> float:
    """Seconds for the default job (16 PixelMine episodes recorded with H.264 frames), whole process."""
    out = tempfile.mkdtemp(dir=tmp)
    t = time.perf_counter()
    subprocess.run([binary, "run", "-q", "--out", os.path.join(out, "d")], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def cartpole(binary: str, tmp: str) -> float:
    """CartPole-v1 steps per second, in-process (the summary's `steps_per_sec`)."""
    summary = os.path.join(tmp, "summary.json")
    subprocess.run([binary, *CARTPOLE, "--summary-json", summary], check=True, stdout=subprocess.DEVNULL)
    with open(summary) as f:
        return json.load(f)["steps_per_sec"]


def main() -> None:
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    a, b, reps = args["--a"], args["--b"], int(args.get("--reps", "5"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure, unit in [("default job, wall s", default_job, "s"), ("CartPole steps/s", cartpole, "/s")]:
            got: dict[str, list[float]] = {a: [], b: []}
            for r in range(reps):
                for binary in (a, b) if r % 2 == 0 else (b, a):
                    got[binary].append(measure(binary, tmp))
            log(f"{name}: {got}")
            ma, mb = statistics.median(got[a]), statistics.median(got[b])
            show = (lambda x: f"{x:.2f} s") if unit == "s" else fmt_rate
            spread = {k: f"{show(min(v))} – {show(max(v))}" for k, v in got.items()}
            rows.append(f"| {name} | {show(ma)} ({spread[a]}) | {show(mb)} ({spread[b]}) | {mb / ma:.3f} |")
    print(f"A: `{a}`, B: `{b}`, {reps} alternating runs each, medians (min – max)\n")
    print("| measure | A | B | B / A |\n|---|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
