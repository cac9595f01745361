#!/usr/bin/env python3
"""rollway's default flags vs the best hand-tuned flags, side by side (issue 14).

For each workload, ``rollway run`` with no tuning flags (workers, envs per worker and
mode chosen by rollway: a worker a core, async mode, envs per worker calibrated at
start) against a grid of hand-set configurations (2 workers × envs per worker ×
sync/async), all with ``--no-record`` and the same target, each a fresh process.
Two rates per run: the run's own (the summary's steps / seconds, calibration not
included) and the whole process's (target steps / wall seconds, calibration, env
building and exit included). Medians of ``--reps``. The ratio the issue asks for
(≥ 80%) is default / best, on the whole-process rate.

Workloads: CartPole-v1 with random actions (cheap steps: large blocks pay), the same
recorded (issue 54: the run a new user makes, ``--out``; 20M steps), and PixelMine-v0 with
the scripted miner (1000-step episodes whose worlds are costly to build: few envs pay).
``--workloads`` picks some of them by name.
"""

import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import (common_parser, fmt_rate, load_summary, log, machine_note, md_table,  # noqa: E402
                      resolve_binary, run_proc, write_report)

# name: (run arguments, envs per worker in the grid, recorded)
WORKLOADS = {
    "CartPole-v1": (["--env", "CartPole-v1", "--agent", "random", "--steps", "100000000"], [64, 256, 1024, 4096], False),
    "CartPole-v1 recorded": (["--env", "CartPole-v1", "--agent", "random", "--steps", "20000000"], [64, 256, 1024, 4096], True),
    "PixelMine-v0": (["--env", "PixelMine-v0", "--agent", "miner", "--steps", "300000"], [8, 16, 32, 64], False),
}


def one(binary: str, args: list, extra: list, record: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-defaults-") as d:
        js = os.path.join(d, "s.json")
        where = ["--out", os.path.join(d, "ds")] if record else ["--no-record"]
        cmd = [binary, "run", *args, *extra, *where, "--quiet", "--summary-json", js]
        wall = run_proc(cmd, timeout=600)
        s = load_summary(js, cmd, ["steps", "seconds", "workers", "envs_per_worker", "mode"])
    target = int(args[args.index("--steps") + 1])
    return {"run": s["steps"] / s["seconds"], "whole": target / wall, "config": f"W={s['workers']} E={s['envs_per_worker']} {s['mode']}",
            "calibration": s.get("calibration")}


def median_of(binary: str, args: list, extra: list, reps: int, record: bool) -> dict:
    runs = [one(binary, args, extra, record) for _ in range(reps)]
    return {"run": statistics.median(r["run"] for r in runs), "whole": statistics.median(r["whole"] for r in runs),
            "configs": sorted({r["config"] for r in runs}), "calibration": [r["calibration"] for r in runs]}


def main() -> None:
    p = common_parser(__doc__, quick_help="one repetition, two grid points", reps_help="repetitions per configuration")
    p.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS), help="which workloads (default: all)")
    a = p.parse_args()
    binary = resolve_binary(a.rollway)
    if binary is None:
        sys.exit(f"no rollway binary at {a.rollway}: cargo build --release first")
    reps = 1 if a.quick else a.reps
    load0 = os.getloadavg()
    lines = ["## Fast defaults: `rollway run` without tuning flags vs the best hand-tuned flags (`bench/run_defaults.sh`)", ""]
    rows, verdicts = [], []
    for name, (args, sizes, record) in WORKLOADS.items():
        if name not in a.workloads:
            continue
        log(f"{name}: default flags")
        d = median_of(binary, args, [], reps, record)
        grid = {}
        for e in sizes[:2] if a.quick else sizes:
            for mode in ("sync", "async"):
                log(f"{name}: W=2 E={e} {mode}")
                grid[(e, mode)] = median_of(binary, args, ["--workers", "2", "--envs-per-worker", str(e), "--mode", mode], reps,
                                            record)
        best_key = max(grid, key=lambda k: grid[k]["whole"])
        best = grid[best_key]
        rows.append([name, f"default: {', '.join(d['configs'])}", fmt_rate(d['run']), fmt_rate(d['whole']),
                     f"{d['whole'] / best['whole']:.0%}"])
        for (e, mode), r in grid.items():
            mark = " **(best)**" if (e, mode) == best_key else ""
            rows.append([name, f"W=2 E={e} {mode}{mark}", fmt_rate(r['run']), fmt_rate(r['whole']),
                         f"{r['whole'] / best['whole']:.0%}"])
        probes = [", ".join(f"{p['envs_per_worker']} {p.get('mode', '')} → {fmt_rate(p['steps_per_s'])}" for p in c["probes"])
                  + f" ({c['seconds']:.2f} s; chose {c['envs_per_worker']} {c.get('mode', '')})"
                  for c in d["calibration"] if c]
        verdicts.append(f"- {name}: default / best hand-tuned (W=2 E={best_key[0]} {best_key[1]}), whole process: "
                        f"**{d['whole'] / best['whole']:.0%}**; run only: {d['run'] / best['run']:.0%}. "
                        f"Calibrations: {'; '.join(probes) or 'none'}")
    lines += machine_note(binary, load0, os.getloadavg(), packages="(no Python peers)")
    lines += [f"- Method: each configuration a fresh process, median of {reps}; target steps as in the table's "
              "workloads (CartPole 100M, recorded CartPole 20M with `--out`, PixelMine 300k), `--no-record` unless recorded. "
              "\"whole process\" = target steps / wall time "
              "(calibration included); \"run\" = the summary's steps / seconds.", "",
              *md_table(["workload", "flags", "steps/s (run)", "steps/s (whole process)", "of best (whole process)"],
                        rows, "--rrr"),
              "", *verdicts, ""]
    write_report("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
