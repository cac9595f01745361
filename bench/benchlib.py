"""Helpers shared by the bench scripts (one script per comparison of rollway with its peers,
run as ``python bench/X.py``, which puts bench/ on ``sys.path``).

Formatting of rates/ratios and the markdown table of the reports, the common command-line
options, running the rollway CLI as a timed subprocess and reading its ``--summary-json``,
the machine note at the top of each report, and writing the report out.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Iterable, Optional, Sequence

ENV_ID = "CartPole-v1"


def log(msg: str) -> None:
    """Progress goes to stderr (the report goes to stdout)."""
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- formatting


def fmt_rate(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    if x >= 1e6:
        return f"{x / 1e6:.2f}M"
    if x >= 1e3:
        return f"{x / 1e3:.1f}k"
    return f"{x:.0f}"


def fmt_ratio(num: Optional[float], den: Optional[float], *,
              whole_from: Optional[float] = None) -> str:
    """`num / den` as "N×": two decimals below 10, one from 10 on, and (when `whole_from`
    is given) none, with thousands separators, from `whole_from` on. "n/a" when either
    side is missing or `den` <= 0."""
    if num is None or den is None or den <= 0:
        return "n/a"
    r = num / den
    if whole_from is not None and r >= whole_from:
        return f"{r:,.0f}×"
    return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"


def fmt_spread(vals: list[float]) -> str:
    """"min – max" of some rates; "n/a" when there are none."""
    return f"{fmt_rate(min(vals))} – {fmt_rate(max(vals))}" if vals else "n/a"


_SEPARATORS = {"r": "---:", "l": ":---", "c": ":---:"}


def md_row(cells: Sequence[object]) -> str:
    """One markdown table line: ``| a | b |``; an empty cell is written ``| |``."""
    return "|" + "".join(f" {c} |" if str(c) else " |" for c in cells)


def md_table(headers: Sequence[object], rows: Iterable[Sequence[object]],
             align: Optional[str] = None) -> list[str]:
    """A markdown table as lines: the header row, the separator row, then one line per row.

    Cells are written with ``str()`` as ``| a | b |`` (an empty cell as ``| |``); rows are
    not checked against the header's width. `align` gives one character per column:
    ``r`` for ``---:`` (right), ``l`` for ``:---``, ``c`` for ``:---:``, anything else
    (``-`` by convention) for a plain ``---``; None makes every column plain.
    """
    if align is None:
        align = "-" * len(headers)
    if len(align) != len(headers):
        raise ValueError(f"align {align!r} has {len(align)} columns, the headers {len(headers)}")
    sep = "|" + "".join(_SEPARATORS.get(ch, "---") + "|" for ch in align)
    return [md_row(headers), sep, *(md_row(r) for r in rows)]


# --------------------------------------------------------------------------- training benches


def fmt_outside(share: float) -> str:
    """The share of wall time outside the policy's forward and the learner's update. Below
    zero the two overlapped (a forward on the collecting thread during an update): then
    how much of the wall time they sum to."""
    return f"{share:.1%}" if share >= 0 else f"overlapped (forward + update = {1 - share:.0%} of wall)"


def training_parser(doc: str, systems: Sequence[str], seeds: str, steps_total: int) -> argparse.ArgumentParser:
    """The training benches' flags; ``--one SYSTEM`` (hidden) trains one (system, first seed) in
    this process and prints its result as a JSON line."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default=seeds)
    p.add_argument("--systems", default=",".join(systems))
    p.add_argument("--steps-total", type=int, default=steps_total)
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--out", help="also write the report here")
    p.add_argument("--one", help=argparse.SUPPRESS)
    return p


def training_row(r: dict, system: str, curve_ends) -> dict:
    """A training run's result as the training benches report it: the curve's first and last
    fifths' mean returns (``curve_ends``, the examples' own) in place of the curve, the process's
    peak RSS, the system, torch's threads."""
    import resource

    import torch

    r["first_mean"], r["last_mean"] = curve_ends(r.pop("curve")) if r["curve"] else (float("nan"), float("nan"))
    r["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    r["system"], r["torch_threads"] = system, torch.get_num_threads()
    return r


def training_table(rows: list[dict], systems: Sequence[str], base: str, base_label: str) -> list[str]:
    """Median steps/s, the ratio to ``base``'s, the time outside policy and update, the last fifth's
    mean return and peak RSS, a row per system."""
    import statistics

    def med(xs: list) -> float:
        return statistics.median(xs) if xs else float("nan")

    by = {s: [r for r in rows if r["system"] == s] for s in systems}
    ref = med([r["steps_per_s"] for r in by.get(base, [])])
    cells = []
    for s, rs in by.items():
        sps = med([r["steps_per_s"] for r in rs])
        cells.append([s, f"{sps:,.0f}", f"{sps / ref:.2f}×", fmt_outside(med([r["outside_share"] for r in rs])),
                      f"{med([r['last_mean'] for r in rs]):.1f}", f"{med([r['peak_rss_mb'] for r in rs]):.0f} MB"])
    return md_table(["system", "steps/s (median)", f"vs {base_label}", "outside policy+update", "mean return, last fifth",
                     "peak RSS"], cells)


def train_each(script: str, args: argparse.Namespace, seeds: Sequence[int], line, extra: Sequence[str] = ()) -> list[dict]:
    """Each (seed, system) of ``args.systems`` as ``script --one`` in a process of its own (its peak
    memory is its own), in turn per seed, so slow drifts of the machine spread over every system
    alike; ``line(seed, result, seconds)`` is logged after each; ``extra``: the script's own flags."""
    rows = []
    for seed in seeds:
        for system in args.systems:
            cmd = [sys.executable, script, "--one", system, "--seeds", str(seed), "--steps-total", str(args.steps_total),
                   "--envs", str(args.envs), "--steps", str(args.steps), *extra]
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
            log(line(seed, rows[-1], time.perf_counter() - t0))
    return rows


# --------------------------------------------------------------------------- Minari


def minari_random(steps: int, seed: int, dataset_id: str, data_format: str) -> tuple:
    """Random-action CartPole-v1 recorded by Minari's own ``DataCollector`` into ``dataset_id``
    (under ``$MINARI_DATASETS_PATH``): ``steps`` steps, the first reset seeded ``seed`` and each
    later one ``seed + episode`` (Minari would otherwise draw a random seed). Returns the
    collector (the caller closes it, which removes its temp dir), the dataset, and how many
    episodes ended."""
    import gymnasium as gym
    import minari

    env = minari.DataCollector(gym.make(ENV_ID), record_infos=False, data_format=data_format)
    env.action_space.seed(seed)
    episode = 0
    env.reset(seed=seed)
    sample, step = env.action_space.sample, env.step
    for _ in range(steps):
        _obs, _rew, terminated, truncated, _info = step(sample())
        if terminated or truncated:
            episode += 1
            env.reset(seed=seed + episode)
    ds = env.create_dataset(dataset_id=dataset_id, algorithm_name="random",
                            description="rollway bench: random-action CartPole-v1")
    return env, ds, episode


# --------------------------------------------------------------------------- command line


def parse_list(s: str, typ=int) -> list:
    """Comma list → list of `typ` (blank items dropped, items stripped)."""
    return [typ(x.strip()) for x in s.split(",") if x.strip()]


def common_parser(doc: str, *, quick_help: str, reps_help: str) -> argparse.ArgumentParser:
    """Parser with the options every bench script has: --rollway, --quick, --out, --reps."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--rollway", default="target/release/rollway", help="path to the rollway CLI binary")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--out", help="also write the markdown report to this file")
    p.add_argument("--reps", type=int, default=3, help=reps_help)
    return p


def timed_steps(step, n: int, seconds: float, warmup: int = 20) -> float:
    """``step()`` (which steps ``n`` envs) called ``warmup`` times, then for ``seconds``: env steps/s."""
    for _ in range(warmup):
        step()
    k, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        k += 1
    return k * n / (time.perf_counter() - t0)


def fresh_process_rate(script: str, system: str, n: int, seconds: float, extra: Sequence[str] = ()) -> float:
    """One figure of a bench script's ``--one SYSTEM --n N --seconds S`` mode (and ``extra``
    arguments), in a fresh process."""
    cmd = [sys.executable, script, "--one", system, "--n", str(n), "--seconds", str(seconds), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 10 + 300)
    if p.returncode != 0:
        raise RuntimeError(f"{system} at N={n} failed (exit {p.returncode}): {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def writer_ceiling(rollout, seconds: float, episodes: int = 8) -> float:
    """The dataset writer's own ceiling for ``rollout``'s rows: env steps/s that the writer alone
    commits (``crates/store/examples/writer_ceiling.rs``: no env, episodes built once), for rows of
    the rollout's observation size (the rows of its last fragment, in turn), in episodes as long as
    the rollout's own (their mean over fragments until ``episodes`` have ended). The bench's
    run_*.sh builds the example."""
    import numpy as np
    from rollway.spaces import leaves, to_json

    row = leaves(to_json(rollout.single_observation_space))[1]
    ended = taken = 0
    while ended < episodes:
        f = rollout.collect()
        ended, taken = ended + int(f.dones.sum()), taken + f.dones.size
    length = max(1, round(taken / ended))
    # The last fragment's observation rows, as the rollout packed them (every leaf views one buffer).
    a = f.obs if isinstance(f.obs, np.ndarray) else next(iter(f.obs.values()))
    while isinstance(a.base, np.ndarray):
        a = a.base
    rows = np.ascontiguousarray(a).reshape(-1).view(np.uint8)[:(f.steps + 1) * f.envs * row]
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    binary = os.path.join(target, "release", "examples", "writer_ceiling")
    with tempfile.NamedTemporaryFile(suffix=".rows") as file:
        file.write(rows)
        file.flush()
        p = subprocess.run([binary, str(row), str(length), str(max(1, round(seconds))), file.name], capture_output=True,
                           text=True, timeout=seconds * 10 + 300)
    if p.returncode != 0:
        raise RuntimeError(f"writer_ceiling {row} {length} failed (exit {p.returncode}): {p.stderr[-2000:]}")
    return float(json.loads(p.stdout.strip().splitlines()[-1])["steps_per_s"])


def alternating_medians(systems: Iterable[str], reps: int, measure) -> dict:
    """Each system measured ``reps`` times by ``measure(system)``, the systems alternating; the median of each."""
    rates: dict = {s: [] for s in systems}
    for rep in range(reps):
        for s in rates:
            rates[s].append(measure(s))
            log(f"rep {rep + 1}: {s} {rates[s][-1]:,.0f} steps/s")
    return {s: statistics.median(v) for s, v in rates.items()}


def ratio_report(title: str, med: dict, base: str, labels: Sequence[str], modules: Iterable[str], load_start: tuple,
                 out: Optional[str], digits: int = 2) -> None:
    """A steps/s table of ``med`` with each ratio to ``med[base]`` under ``title`` and the machine note;
    ``labels`` name the first and last columns."""
    rows = [[s, fmt_rate(m), f"{m / med[base]:.{digits}f}×"] for s, m in med.items()]
    packages = ", ".join(f"{m} {v}" for m, v in module_versions(modules).items())
    text = "\n".join([title, "", *machine_note(None, load_start, os.getloadavg(), packages=packages), "",
                      *md_table([labels[0], "steps/s", labels[1]], rows, "lrr")]) + "\n"
    write_report(text, out)


def write_report(report: str, out: Optional[str]) -> None:
    """`report` as is to stdout and, when `out` is given, to that file."""
    print(report, end="")
    if out:
        with open(out, "w") as f:
            f.write(report)
        log(f"wrote {out}")


# --------------------------------------------------------------------------- rollway process


class RollwayError(RuntimeError):
    pass


def resolve_binary(path: str) -> Optional[str]:
    """Absolute path of the rollway binary, or None when it is not an executable file."""
    cand = path if os.path.isabs(path) else os.path.abspath(path)
    if os.path.isfile(cand) and os.access(cand, os.X_OK):
        return cand
    return None


def run_proc(cmd: list[str], timeout: float) -> float:
    """Run `cmd` (output captured); return its wall seconds. RollwayError on a timeout or a
    non-zero exit (with the tail of its output)."""
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise RollwayError(f"timed out after {timeout:.0f}s: {shlex.join(cmd)}") from exc
    wall = time.perf_counter() - t
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).decode(errors="replace").strip()[-800:]
        raise RollwayError(f"exit {p.returncode}: {shlex.join(cmd)}\n{tail}")
    return wall


def load_summary(path: str, cmd: list[str], keys: Iterable[str]) -> dict:
    """The `--summary-json` file `cmd` wrote at `path`; RollwayError when it is missing,
    invalid or lacks one of `keys`."""
    try:
        with open(path) as f:
            summary = json.load(f)
    except (OSError, ValueError) as exc:
        raise RollwayError(f"no/invalid summary JSON from {shlex.join(cmd)}: {exc}") from exc
    for key in keys:
        if key not in summary:
            raise RollwayError(f"summary JSON lacks {key!r}: {summary}")
    return summary


# --------------------------------------------------------------------------- machine note


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def usable_cores() -> Optional[int]:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def module_versions(mods: Iterable[str]) -> dict[str, str]:
    vers = {}
    for mod in mods:
        try:
            vers[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            try:  # a package without __version__ (gymnax, craftax): its installed metadata
                vers[mod] = importlib.metadata.version(mod)
            except Exception:  # noqa: BLE001
                vers[mod] = "not installed"
    return vers


def rollway_version(binary: str) -> str:
    try:
        return subprocess.run([binary, "--version"], capture_output=True, timeout=10,
                              text=True).stdout.strip() or "?"
    except Exception:  # noqa: BLE001
        return "?"


def machine_note(binary: Optional[str], load_start: tuple, load_end: tuple, *, packages: str,
                 os_extra: str = "", rollway_extra: str = "") -> list[str]:
    """The report's machine lines. `packages` follows "Python X.Y.Z; " on its line,
    `os_extra` is appended to the OS line, `rollway_extra` to the rollway line when a
    binary was found."""
    rv = "not found (skipped)"
    if binary:
        rv = f"{rollway_version(binary)} (`{binary}`){rollway_extra}"
    return [
        f"- Date: {_dt.datetime.now().isoformat(timespec='seconds')}",
        f"- CPU: {cpu_model()}; {os.cpu_count()} logical cores ({usable_cores()} usable by this process)",
        f"- OS: {platform.system()} {platform.release()} ({platform.machine()}){os_extra}",
        f"- Load average (1/5/15 min) at start: {'/'.join(f'{x:.2f}' for x in load_start)}; "
        f"at end: {'/'.join(f'{x:.2f}' for x in load_end)}",
        f"- Python {platform.python_version()}; {packages}",
        f"- rollway: {rv}",
    ]
