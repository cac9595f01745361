#!/usr/bin/env python3
"""What checking actions, observations and rewards costs (issue 36): `rollway run` with
`--check true` (the default) and `--check false`, side by side.

Each configuration is run as a fresh `rollway run` process per repetition, the two
settings alternating (on, off, on, off, …) so that drift on a noisy machine hits both
alike; the in-process `steps_per_sec` of each summary is kept and the medians compared.
Configurations: CartPole-v1 (a Discrete action: one compare per row; a float32[4]
observation: 4 finite-and-bounds compares) and Pendulum-v1 (a Box action: a finite
compare; a float32[3] observation), both with the random agent, no dataset written.

Progress goes to stderr; the markdown report to stdout (and to --out).
"""

from __future__ import annotations

import os
import statistics
import tempfile

from benchlib import (common_parser, fmt_rate, fmt_spread, load_summary, log, machine_note, md_table,
                      resolve_binary, run_proc, write_report)

CONFIGS = [
    ("CartPole-v1", ["--env", "CartPole-v1", "--agent", "random"]),
    ("Pendulum-v1", ["--env", "Pendulum-v1", "--agent", "random"]),
]


def one(binary: str, args: list[str], steps: int, check: bool, workers: int, per_worker: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.json")
        cmd = [binary, "run", *args, "--steps", str(steps), "--workers", str(workers), "--envs-per-worker", str(per_worker),
               "--mode", "sync", "--no-record", "-q", "--check", "true" if check else "false", "--summary-json", out]
        run_proc(cmd, timeout=600)
        return float(load_summary(out, cmd, ["steps_per_sec"])["steps_per_sec"])


def main() -> None:
    p = common_parser(__doc__, quick_help="fewer steps", reps_help="repetitions of each setting (alternating)")
    p.add_argument("--steps", type=int, default=4_000_000, help="steps per run")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--envs-per-worker", type=int, default=64)
    a = p.parse_args()
    binary = resolve_binary(a.rollway)
    if binary is None:
        raise SystemExit(f"no rollway binary at {a.rollway}: cargo build --release first")
    steps = 400_000 if a.quick else a.steps
    load0 = os.getloadavg()
    rows = []
    for name, args in CONFIGS:
        rates = {True: [], False: []}
        for r in range(a.reps):
            for check in (True, False):
                rate = one(binary, args, steps, check, a.workers, a.envs_per_worker)
                rates[check].append(rate)
                log(f"{name} check={check} rep {r + 1}: {rate:,.0f} steps/s")
        on, off = statistics.median(rates[True]), statistics.median(rates[False])
        rows.append([name, f"{fmt_rate(on)} ({fmt_spread(rates[True])})", f"{fmt_rate(off)} ({fmt_spread(rates[False])})",
                     f"{on / off:.3f}", f"{100 * (off - on) / off:+.1f}%"])
    lines = [
        f"### Checks on vs off: `bench/checks_cost.py --reps {a.reps} --steps {steps}` "
        f"({a.workers} workers × {a.envs_per_worker} envs, sync, random agent, no dataset)",
        "",
        *machine_note(binary, load0, os.getloadavg(), packages="no Python peers"),
        "",
        *md_table(["env", "`--check true` steps/s (median, spread)", "`--check false`", "on / off", "cost"], rows),
        "",
    ]
    write_report("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
