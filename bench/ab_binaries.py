"""Two rollway binaries side by side (a refactor's before and after): the default job's
wall time and CartPole-v1 random-action throughput, the runs of A and B alternating so
that a drift of the machine hits both alike. Medians, spreads and the ratio B / A.

    python bench/ab_binaries.py --before /tmp/rollway-before --rollway target/release/rollway --reps 5
"""

from __future__ import annotations

import os
import statistics
import tempfile

from benchlib import (common_parser, fmt_rate, load_summary, log, machine_note, md_table, resolve_binary, run_proc,
                      write_report)

CARTPOLE = ["run", "--env", "CartPole-v1", "--agent", "random", "--workers", "2", "--envs-per-worker", "1024",
            "--mode", "async", "--steps", "30000000", "--no-record", "-q"]


def default_job(binary: str, tmp: str) -> float:
    """Seconds for the default job (16 PixelMine episodes recorded with H.264 frames), whole process."""
    return run_proc([binary, "run", "-q", "--out", os.path.join(tempfile.mkdtemp(dir=tmp), "d")], timeout=600)


def cartpole(binary: str, tmp: str) -> float:
    """CartPole-v1 steps per second, in-process (the summary's `steps_per_sec`)."""
    cmd = [binary, *CARTPOLE, "--summary-json", os.path.join(tmp, "summary.json")]
    run_proc(cmd, timeout=600)
    return load_summary(cmd[-1], cmd, ["steps_per_sec"])["steps_per_sec"]


def main() -> None:
    p = common_parser(__doc__, quick_help="(no effect: both measures are short)", reps_help="runs of each binary per measure")
    p.add_argument("--before", required=True, help="binary A, the one --rollway (B) is compared with")
    a = p.parse_args()
    bin_a, bin_b = resolve_binary(a.before), resolve_binary(a.rollway)
    if not (bin_a and bin_b):
        raise SystemExit(f"not executable: {a.before if not bin_a else a.rollway}")
    load0, rows = os.getloadavg(), []
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure, show in [("default job, wall s (whole process)", default_job, lambda x: f"{x:.2f} s"),
                                    ("CartPole-v1 steps/s (W=2 E=1024 async, 30M steps, in-process)", cartpole, fmt_rate)]:
            got: dict[str, list[float]] = {bin_a: [], bin_b: []}
            for r in range(a.reps):
                for binary in (bin_a, bin_b) if r % 2 == 0 else (bin_b, bin_a):
                    got[binary].append(measure(binary, tmp))
            log(f"{name}: {got}")
            med = {k: statistics.median(v) for k, v in got.items()}
            cell = {k: f"{show(med[k])} ({show(min(v))} – {show(max(v))})" for k, v in got.items()}
            rows.append([name, cell[bin_a], cell[bin_b], f"{med[bin_b] / med[bin_a]:.3f}"])
    lines = [
        f"### `bench/ab_binaries.py --reps {a.reps}`: A `{bin_a}`, B `{bin_b}`, runs alternating, medians (min – max)",
        "",
        *machine_note(bin_b, load0, os.getloadavg(), packages="no Python peers"),
        "",
        *md_table(["measure", "A", "B", "B / A"], rows, "-rrr"),
        "",
    ]
    write_report("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
