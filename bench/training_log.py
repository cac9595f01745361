#!/usr/bin/env python3
"""Issue 47: what a rollout's training log costs (``rollway.Rollout(log_dir=…, progress=True)``:
TensorBoard scalars and a progress line per fragment), side by side with no log.

The worst case for a per-fragment cost: CartPole-v1 with the built-in random policy (no
network, so a fragment is cheap), then a policy in Python (numpy: one call a step, as a
learner's network is), ``num_envs=8, steps=128``, ``--fragments`` fragments per
timing; with and without the log, taken in turn, ``--reps`` times; steps/s of the whole
``collect`` loop, medians. Separately, the log's own time per fragment (``TrainingLog.fragment``
timed over the same fragments). Progress to stderr, the report to stdout.

    python bench/training_log.py [--reps 7] [--fragments 400] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402


def python_policy(obs, first, state):
    """A policy in Python (numpy): one call per step for all envs, as a learner's network is."""
    import numpy as np

    return np.zeros(len(obs), np.int64)


def steps_per_s(fragments: int, log_dir, policy="random") -> float:
    import rollway

    with rollway.Rollout("CartPole-v1", policy, num_envs=8, steps_per_fragment=128, log_dir=log_dir,
                         progress=log_dir is not None) as r:
        r.collect()  # envs started
        t = time.perf_counter()
        for _ in range(fragments):
            r.collect()
        return fragments * 8 * 128 / (time.perf_counter() - t)


def log_cost(fragments: int, log_dir: str) -> float:
    """Seconds the log itself takes per fragment."""
    import rollway
    from rollway._training_log import TrainingLog

    with rollway.Rollout("CartPole-v1", "random", num_envs=8, steps_per_fragment=128) as r:
        frags = [r.collect() for _ in range(fragments)]
    tl = TrainingLog(log_dir, progress=False)
    t = time.perf_counter()
    for i, f in enumerate(frags):
        tl.fragment(f, i)
    return (time.perf_counter() - t) / fragments


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--fragments", type=int, default=400)
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()
    load0 = os.getloadavg()
    rows = []
    pm = 0.0
    with tempfile.TemporaryDirectory() as work:
        for name, policy in (("built-in random policy", "random"), ("a Python (numpy) policy", python_policy)):
            plain: List[float] = []
            logged: List[float] = []
            for rep in range(a.reps):
                # In turn, the order swapped every rep: the second of two runs is not favoured.
                for which in ((0, 1) if rep % 2 == 0 else (1, 0)):
                    if which == 0:
                        plain.append(steps_per_s(a.fragments, None, policy))
                    else:
                        logged.append(steps_per_s(a.fragments, os.path.join(work, f"tb-{rep}"), policy))
                log(f"{name}, rep {rep + 1}/{a.reps}: {plain[-1]:,.0f} vs {logged[-1]:,.0f} steps/s")
            med_p, lm = statistics.median(plain), statistics.median(logged)
            pm = pm or med_p
            rows += [[f"{name}, no log", f"{med_p:,.0f}", f"{min(plain):,.0f} – {max(plain):,.0f}", ""],
                     [f"{name}, `log_dir=…, progress=True`", f"{lm:,.0f}", f"{min(logged):,.0f} – {max(logged):,.0f}",
                      f"{lm / med_p:.3f}×"]]
        per = statistics.median(log_cost(a.fragments, os.path.join(work, f"cost-{i}")) for i in range(3))
    lines = [f"### A rollout's training log, side by side (`bench/training_log.py --reps {a.reps}`)", ""]
    lines += md_table(["rollout", "median steps/s", "range", "logged / plain"], rows, "lrrr")
    lines += ["", f"The log's own time: {per * 1e6:.0f} µs per fragment (a dozen scalars, one flushed record, "
              f"the progress check), against a fragment of {8 * 128 / pm * 1e3:.2f} ms with the built-in policy.", "",
              f"CartPole-v1, num_envs=8, steps=128, {a.fragments} fragments per timing, "
              "taken in turn (the order swapped every rep).", ""]
    lines += machine_note(None, load0, os.getloadavg(), packages=str(module_versions(["numpy"])))
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
