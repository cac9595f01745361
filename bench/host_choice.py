"""Issue 48: where a run's Python envs step. ``rollway.run(env="gym:CartPole-v1",
agent="random")`` with N envs, its envs in env processes (``host="process"``: 2
workers, or 1 at N = 1), in the caller's process (``host="inline"``: one worker
thread), and as the default ``host="auto"`` chooses after measuring both, against a
loop over Gymnasium's ``SyncVectorEnv`` of N with random actions. Side by side in
one run, reps taken in turn, medians.

rollway's figures are steady state, as bench/hosted_envs.py takes them: the
difference of two runs' times (``steps`` and ``2 × steps``, each above the size at
which ``auto`` measures), so that starting env processes and the choice's probes
(paid once per run, reported beside) are left out as the peer's making of its envs
is. rollway seeds every episode (each is replayable from its seed); the peer seeds
each env once, which is cheaper for Gymnasium (bench/RESULTS.md, issue 32 follow-up).

    bench/run_host_choice.sh [--ns 1,4,8,16,64] [--reps 3] [--steps 100000] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from typing import Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402
from hosted_envs import vec_rate  # noqa: E402

import rollway  # noqa: E402


def run_rate(n: int, host: str, steps: int) -> Tuple[float, Dict]:
    """Steady-state steps/s of a run of N envs on `host`, and the longer run's calibration."""
    workers = 1 if n == 1 else 2

    def once(k: int):
        s = rollway.run(env="gym:CartPole-v1", agent="random", workers=workers, envs_per_worker=n // workers, steps=k,
                        record=False, progress=False, host=host)
        return float(s.seconds), s.calibration

    short, _ = once(steps)
    long, cal = once(2 * steps)
    return steps / max(long - short, 1e-9), cal or {}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ns", default="1,4,8,16,64", help="env counts (default 1,4,8,16,64)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--steps", type=int, default=100_000, help="steps of the shorter run (default 100000)")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per SyncVectorEnv measurement")
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()
    os.environ.setdefault("ROLLWAY_PYTHON", sys.executable)
    load0 = os.getloadavg()
    rows = []
    for n in (int(x) for x in a.ns.split(",")):
        r: Dict[str, List[float]] = {k: [] for k in ("vec", "process", "inline", "auto")}
        chose: List[str] = []
        probe_s: List[float] = []
        for i in range(a.reps):
            log(f"N={n} rep {i + 1}/{a.reps}")
            r["vec"].append(vec_rate("sync", n, a.seconds))
            for host in ("process", "inline", "auto"):
                rate, cal = run_rate(n, host, a.steps)
                r[host].append(rate)
                if host == "auto":
                    h = cal.get("host", {})
                    chose.append(f"{h.get('host')} ({h.get('inline_steps_per_s') or 0:,.0f} vs {h.get('process_steps_per_s') or 0:,.0f})")
                    probe_s.append(float(cal.get("seconds", 0.0)))
        m = {k: statistics.median(v) for k, v in r.items()}
        rows.append([str(n), *(f"{m[k]:,.0f} ({m[k] / m['vec']:.2f}×)" for k in ("vec", "process", "inline", "auto")),
                     "; ".join(chose), f"{statistics.median(probe_s):.2f}"])
    lines = ["# Where a run's Python envs step (issue 48)", ""]
    lines += machine_note(None, load0, os.getloadavg(), packages=", ".join(f"{k} {v}" for k, v in module_versions(["gymnasium", "numpy"]).items()))
    lines += ["", f"`gym:CartPole-v1`, random actions, env steps/s (medians of {a.reps}; ratio to the SyncVectorEnv loop):", "",
              *md_table(["N", "SyncVectorEnv loop", "rollway.run process", "rollway.run inline", "rollway.run auto",
                         "auto chose (inline vs process probe, steps/s)", "auto's probes, s"], rows)]
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
