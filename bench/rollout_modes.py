"""Env processes in lockstep (``mode="sync"``) or running ahead (``mode="async"``), side by side.

``rollway.Rollout("pz:MODULE", POLICY, num_envs=N, workers=2, host="process", mode=MODE)`` on
PettingZoo envs, agent steps/s, with two policies:

- **random**: rollway's ``random`` agent, in Rust (a policy that costs nothing);
- **off-core D µs a row**: a Python policy that waits D µs per agent row with the GIL let go and
  returns zeros: the time an accelerator takes to answer, during which the cores are free (what a
  policy on a GPU costs the CPU side).

Besides the rate, the CPU time each env process used over the timed window (``/proc``), as a share
of that window: 1.0 is a process that never waited. Each figure in a fresh process after a warm-up
fragment, the modes alternating, the median of the reps.

    bench/rollout_modes.py [--games simple_spread,kaz] [--envs 8,32] [--reps 3] [--seconds 6] [--row-us 30]
                           [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

from benchlib import fmt_rate, log, machine_note, md_table, module_versions, write_report

GAMES = {
    "simple_spread": ("mpe2.simple_spread_v3", 3),
    "kaz": ("pettingzoo.butterfly.knights_archers_zombies_v11", 4),
}
T = 64


def children_cpu() -> dict:
    """CPU seconds used so far by each child process of this one."""
    tick, me, out = os.sysconf("SC_CLK_TCK"), os.getpid(), {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def one(game: str, n: int, mode: str, row_us: float, seconds: float) -> dict:
    import numpy as np

    import rollway

    module, k = GAMES[game]

    def off_core(obs, first, state):
        rows = len(first)
        time.sleep(row_us * 1e-6 * rows * k)
        return np.zeros((rows, k), np.int64), state

    policy = "random" if row_us == 0 else off_core
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rollway.Rollout(f"pz:{module}", policy, num_envs=n, steps_per_fragment=T, seed=1, workers=2, host="process",
                             mode=mode) as r:
            r.collect()
            before, t0, steps = children_cpu(), time.perf_counter(), 0
            while time.perf_counter() - t0 < seconds:
                r.collect()
                steps += n * T * k
            dt = time.perf_counter() - t0
            after = children_cpu()
    busy = [(after[p] - before[p]) / dt for p in before if p in after]
    return {"rate": steps / dt, "busy": sorted(busy)[-2:]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", default=",".join(GAMES))
    p.add_argument("--envs", default="8,32")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--row-us", type=float, default=30.0, help="the off-core policy's wait per agent row, µs")
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        game, n, mode, row_us = a.one.split("|")
        print(json.dumps(one(game, int(n), mode, float(row_us), a.seconds)))
        return
    import subprocess

    load_start = os.getloadavg()
    policies = {"random": 0.0, f"off-core {a.row_us:g} µs a row": a.row_us}
    rows = []
    for game in a.games.split(","):
        for n in (int(x) for x in a.envs.split(",")):
            for name, us in policies.items():
                got = {m: [] for m in ("sync", "async")}
                for _ in range(a.reps):
                    for mode in got:
                        cmd = [sys.executable, __file__, "--one", f"{game}|{n}|{mode}|{us}", "--seconds", str(a.seconds)]
                        got[mode].append(json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True,
                                                                   timeout=a.seconds * 10 + 300).stdout))
                        log(f"{game} N={n} {name} {mode}: {got[mode][-1]}")
                rate = {m: statistics.median(x["rate"] for x in v) for m, v in got.items()}
                busy = {m: statistics.median(b for x in v for b in x["busy"]) for m, v in got.items()}
                rows.append([game, n, name, fmt_rate(rate["sync"]), fmt_rate(rate["async"]),
                             f"{rate['async'] / rate['sync']:.2f}×", f"{busy['sync']:.2f}", f"{busy['async']:.2f}"])
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(["rollway", "pettingzoo", "mpe2", "numpy"]).items())
    text = "\n".join([
        f"Env processes in lockstep or running ahead: agent steps/s ({a.seconds:g} s each, median of {a.reps}), "
        "2 env processes.", "",
        *machine_note(None, load_start, os.getloadavg(), packages=packages), "",
        *md_table(["env", "N", "policy", "sync", "async", "async / sync", "env process busy, sync", "async"], rows,
                  "llrrrrrr"), ""])
    write_report(text, a.out)


if __name__ == "__main__":
    main()
