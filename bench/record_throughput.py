#!/usr/bin/env python3
"""Side-by-side CartPole-v1 episode *recording* throughput: rollway vs Minari.

Measures, in one run on one machine, recording random-action CartPole-v1 episodes
to an on-disk dataset with:

* Minari ``DataCollector`` with ``data_format="hdf5"`` (``--steps``, default 100k steps):
  ``gym.make("CartPole-v1")`` wrapped in ``minari.DataCollector(env, record_infos=False,
  data_format="hdf5")``, random actions from the seeded ``env.action_space.sample()``,
  ``reset`` on termination/truncation, then ``collector.create_dataset(...)``.
* the same with ``data_format="arrow"`` (``--arrow-steps``, default 10k steps: Minari's
  arrow writer re-walks the whole dataset directory after every episode, so its cost
  grows quadratically with the number of episodes), and optionally ``"parquet"``
  (``--minari-formats hdf5,arrow,parquet``; uses ``--arrow-steps`` too).
* rollway, via its CLI binary run as a subprocess:
  ``rollway run --env CartPole-v1 --agent random --workers 2 --envs-per-worker 16
  --steps S --seed 0 --out DIR --quiet --summary-json S.json`` (Parquet step shards in
  ``DIR/steps/shard-*.parquet`` plus ``DIR/index/shard-*.json``), at ``--steps`` and at
  ``--rollway-big-steps`` (default 10M) steps.

For every system and repetition (fresh temp dir each): record time (end to end:
env construction + stepping + recording + finalising the dataset) → steps/s; bytes
per step (sum of the file sizes of the dataset directory / steps); read-back time:

* Minari: ``minari.load_dataset(id)`` + ``for ep in ds.iterate_episodes()``, touching
  ``ep.observations``, ``ep.actions``, ``ep.rewards`` (converted to numpy and summed);
* rollway: (a) ``pyarrow.parquet.read_table`` of every committed ``steps/shard-*.parquet``
  (its ``index/shard-*.json`` exists) with every column materialised as numpy; (b) ``rollway verify DIR`` as a subprocess.

Minari is timed in-process (imports excluded, ``time.perf_counter``); rollway is timed
as a whole process (process start + generate + write + commit), and the summary
JSON's in-process ``steps_per_sec`` is reported next to it. Medians of ``--reps``
(default 3) repetitions. Progress goes to stderr; the markdown report goes to stdout
(and to ``--out``).
"""

from __future__ import annotations

import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchlib, from any cwd
from benchlib import (ENV_ID, RollwayError, common_parser, fmt_rate, fmt_ratio,  # noqa: E402
                      fmt_spread, load_summary, log, machine_note, md_table, minari_random, module_versions,
                      parse_list, resolve_binary, run_proc, write_report)

# --------------------------------------------------------------------------- helpers


def fmt_secs(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    if x < 1:
        return f"{x * 1000:.0f} ms" if x >= 0.01 else f"{x * 1000:.1f} ms"
    return f"{x:.2f} s"


def dir_bytes(path: str) -> int:
    """Sum of the (apparent) sizes of all regular files under `path`."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def med(xs: list[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


@dataclass
class Rep:
    steps: int
    record_s: float  # end-to-end record time (Minari in-process, rollway whole process)
    nbytes: int
    read_s: Optional[float] = None  # Minari load+iterate / rollway pyarrow read
    verify_s: Optional[float] = None  # rollway verify (whole process)
    inproc_rate: Optional[float] = None  # rollway summary steps_per_sec
    episodes: Optional[int] = None
    files: Optional[int] = None


@dataclass
class Case:
    system: str  # e.g. "Minari DataCollector (hdf5)"
    key: str  # e.g. "minari-hdf5", "rollway", "rollway-big"
    target_steps: int
    reps: list[Rep] = field(default_factory=list)
    error: Optional[str] = None

    @property
    def steps(self) -> Optional[int]:
        return int(statistics.median(r.steps for r in self.reps)) if self.reps else None

    @property
    def rate(self) -> Optional[float]:
        return med([r.steps / r.record_s for r in self.reps])

    @property
    def rates(self) -> list[float]:
        return [r.steps / r.record_s for r in self.reps]

    @property
    def bytes_per_step(self) -> Optional[float]:
        return med([r.nbytes / r.steps for r in self.reps])

    @property
    def read_s(self) -> Optional[float]:
        return med([r.read_s for r in self.reps if r.read_s is not None])

    @property
    def read_rate(self) -> Optional[float]:
        return med([r.steps / r.read_s for r in self.reps if r.read_s])

    @property
    def verify_s(self) -> Optional[float]:
        return med([r.verify_s for r in self.reps if r.verify_s is not None])

    @property
    def verify_rate(self) -> Optional[float]:
        return med([r.steps / r.verify_s for r in self.reps if r.verify_s])

    @property
    def inproc_rate(self) -> Optional[float]:
        return med([r.inproc_rate for r in self.reps if r.inproc_rate is not None])


# --------------------------------------------------------------------------- Minari


def minari_once(fmt: str, steps: int, seed: int, tmp_root: Optional[str]) -> Rep:
    import minari
    import numpy as np

    root = tempfile.mkdtemp(prefix=f"minari-bench-{fmt}-", dir=tmp_root)
    old_env = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = root  # read by DataCollector() and load_dataset()
    dataset_id = f"cartpole/bench-{fmt}-v0"
    try:
        t0 = time.perf_counter()
        env, ds, _episodes = minari_random(steps, seed, dataset_id, fmt)
        record_s = time.perf_counter() - t0
        n_steps, n_eps = int(ds.total_steps), int(ds.total_episodes)
        env.close()  # removes the collector's (now empty) temp dir
        del ds, env
        if n_steps != steps:
            raise RuntimeError(f"dataset has {n_steps} steps, expected {steps}")
        ds_dir = os.path.join(root, dataset_id)
        nbytes = dir_bytes(ds_dir)
        nfiles = sum(len(f) for _, _, f in os.walk(ds_dir))

        # Read-back: load + iterate every episode, touching observations/actions/rewards.
        t1 = time.perf_counter()
        ds = minari.load_dataset(dataset_id)
        acc, seen = 0.0, 0
        for ep in ds.iterate_episodes():
            acc += float(np.asarray(ep.observations).sum())
            acc += float(np.asarray(ep.actions).sum())
            acc += float(np.asarray(ep.rewards).sum())
            seen += len(ep.rewards)
        read_s = time.perf_counter() - t1
        if seen != n_steps:
            raise RuntimeError(f"read back {seen} steps, expected {n_steps}")
        return Rep(steps=n_steps, record_s=record_s, nbytes=nbytes, read_s=read_s,
                   episodes=n_eps, files=nfiles)
    finally:
        if old_env is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = old_env
        shutil.rmtree(root, ignore_errors=True)


def bench_minari(fmt: str, steps: int, a) -> Case:
    case = Case(f"Minari `DataCollector` ({fmt})", f"minari-{fmt}", steps)
    try:  # untimed warm-up: first-use imports (h5py/pyarrow storage, jax.tree_util)
        minari_once(fmt, min(200, steps), a.seed, a.tmpdir)
    except Exception as exc:  # noqa: BLE001
        case.error = f"{type(exc).__name__}: {exc}"
        log(f"  minari {fmt}: FAILED in warm-up: {case.error}")
        return case
    for i in range(a.reps):
        try:
            r = minari_once(fmt, steps, a.seed, a.tmpdir)
        except Exception as exc:  # noqa: BLE001 - report and keep going
            case.error = f"{type(exc).__name__}: {exc}"
            log(f"  minari {fmt}: FAILED: {case.error}")
            break
        case.reps.append(r)
        log(f"  minari {fmt} rep {i + 1}: {r.steps:,} steps ({r.episodes:,} episodes) in "
            f"{r.record_s:.2f}s = {fmt_rate(r.steps / r.record_s)} steps/s; "
            f"{r.nbytes / r.steps:.0f} B/step; read-back {fmt_secs(r.read_s)}")
    return case


# --------------------------------------------------------------------------- rollway


def rollway_supports_out(binary: str) -> tuple[bool, str]:
    try:
        p = subprocess.run([binary, "run", "--help"], capture_output=True, text=True, timeout=30)
    except Exception as exc:  # noqa: BLE001
        return False, f"`rollway run --help` failed: {exc}"
    text = p.stdout + p.stderr
    if p.returncode != 0:
        return False, f"`rollway run --help` exited {p.returncode}: {text.strip()[-300:]}"
    if "--out" not in text:
        return False, "this rollway binary's `run` has no `--out` option yet (no dataset recording)"
    return True, ""


def rollway_cmd(binary: str, a, steps: int, out_dir: str, summary: str) -> list[str]:
    return [binary, "run", "--env", ENV_ID, "--agent", "random",
            "--workers", str(a.rollway_workers), "--envs-per-worker", str(a.rollway_envs), "--mode", a.rollway_mode,
            "--steps", str(steps), "--seed", str(a.seed),
            "--out", out_dir, "--quiet", "--summary-json", summary]


def read_rollway_parquet(out_dir: str) -> int:
    """Read every committed step shard (`steps/shard-N.parquet` whose `index/shard-N.json`
    exists, per FORMAT.md) with pyarrow and materialise every column as numpy
    (list columns flattened; the null action/reward/flags of each episode's last row are
    filled with 0/False so bool columns stay numpy bools). Returns the rows read
    (one per observation: T+1 per episode)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    shards = []
    for path in sorted(glob.glob(os.path.join(out_dir, "steps", "shard-*.parquet"))):
        stem = os.path.basename(path)[: -len(".parquet")]
        if os.path.exists(os.path.join(out_dir, "index", stem + ".json")):
            shards.append(path)
    if not shards:
        raise RollwayError(f"no committed step shards in {out_dir}/steps")
    rows = 0
    for path in shards:
        table = pq.read_table(path)
        rows += table.num_rows
        for col in table.columns:
            arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            while pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) \
                    or pa.types.is_fixed_size_list(arr.type):
                arr = arr.flatten()
            if arr.null_count:
                fill = False if pa.types.is_boolean(arr.type) else (
                    "" if pa.types.is_string(arr.type) else 0)
                arr = pc.fill_null(arr, pa.scalar(fill, type=arr.type))
            np.asarray(arr.to_numpy(zero_copy_only=False))
    return rows


def rollway_once(binary: str, steps: int, a, verify: bool) -> Rep:
    parent = tempfile.mkdtemp(prefix="rollway-record-bench-", dir=a.tmpdir)
    try:
        out_dir = os.path.join(parent, "dataset")
        summary_path = os.path.join(parent, "summary.json")
        cmd = rollway_cmd(binary, a, steps, out_dir, summary_path)
        wall = run_proc(cmd, a.rollway_timeout)
        summary = load_summary(summary_path, cmd, ("steps", "steps_per_sec"))
        n_steps = int(summary["steps"])
        if not os.path.isdir(out_dir):
            raise RollwayError(f"`rollway run --out {out_dir}` wrote no dataset directory")
        nbytes = dir_bytes(out_dir)
        nfiles = sum(len(f) for _, _, f in os.walk(out_dir))

        t = time.perf_counter()
        rows = read_rollway_parquet(out_dir)
        read_s = time.perf_counter() - t
        n_eps = summary.get("episodes")
        if isinstance(n_eps, int) and rows not in (n_steps, n_steps + n_eps):
            log(f"    note: committed step shards hold {rows:,} rows; summary says "
                f"{n_steps:,} steps in {n_eps:,} episodes (expected steps + episodes)")

        verify_s = None
        if verify:
            verify_s = run_proc([binary, "verify", out_dir], a.rollway_timeout)
        return Rep(steps=n_steps, record_s=wall, nbytes=nbytes, read_s=read_s,
                   verify_s=verify_s, inproc_rate=float(summary["steps_per_sec"]),
                   episodes=summary.get("episodes"), files=nfiles)
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def bench_rollway(binary: str, steps: int, key: str, a) -> Case:
    case = Case(f"rollway `run --out` (W={a.rollway_workers} E={a.rollway_envs} {a.rollway_mode})", key, steps)
    import numpy  # noqa: F401  (import outside the timed read-back)
    import pyarrow.parquet  # noqa: F401
    if key == "rollway":  # untimed warm-up run (binary in page cache, pyarrow reader init)
        try:
            rollway_once(binary, min(steps, 10_000), a, verify=False)
        except RollwayError as exc:
            case.error = str(exc)
            log(f"  rollway: FAILED in warm-up: {exc}")
            return case
    for i in range(a.reps):
        try:
            r = rollway_once(binary, steps, a, verify=not a.no_verify)
        except RollwayError as exc:
            case.error = str(exc)
            log(f"  rollway {steps:,}: FAILED: {exc}")
            break
        case.reps.append(r)
        log(f"  rollway {steps:,} rep {i + 1}: {r.steps:,} steps in {r.record_s:.3f}s = "
            f"{fmt_rate(r.steps / r.record_s)} steps/s whole-process "
            f"({fmt_rate(r.inproc_rate)} in-process); {r.nbytes / r.steps:.1f} B/step; "
            f"pyarrow read {fmt_secs(r.read_s)}; verify {fmt_secs(r.verify_s)}")
    return case


# --------------------------------------------------------------------------- machine note


def record_machine_note(binary: Optional[str], rollway_state: str, load_start: tuple,
                        load_end: tuple) -> list[str]:
    vers = module_versions(("gymnasium", "minari", "h5py", "pyarrow", "numpy", "jax"))
    try:
        import h5py
        hdf5 = h5py.version.hdf5_version
    except Exception:  # noqa: BLE001
        hdf5 = "?"
    tmp = None
    try:
        tmp = tempfile.gettempdir()
    except Exception:  # noqa: BLE001
        pass
    return machine_note(
        binary, load_start, load_end,
        packages=f"gymnasium {vers['gymnasium']}; "
                 f"minari {vers['minari']} (needs jax {vers['jax']} for `DataCollector`); "
                 f"h5py {vers['h5py']} (HDF5 {hdf5}); pyarrow {vers['pyarrow']}; numpy {vers['numpy']}",
        os_extra=f"; datasets written under `{tmp}`",
        rollway_extra=f" — {rollway_state}" if rollway_state else "")


# --------------------------------------------------------------------------- report


def render_summary(cases: list[Case], a, skipped: list[tuple[str, str]]) -> list[str]:
    """One row per system (and per skipped one), rollway's rate over each, and how to read it."""
    ref = next((c for c in cases if c.key == "rollway" and c.reps), None)
    ref_rate = ref.rate if ref else None
    ref_in = ref.inproc_rate if ref else None
    rows = []
    for c in cases:
        if not c.reps:
            rows.append([c.system, f"{c.target_steps:,}", "failed", "", "", "", "", ""])
            continue
        ratio = "1.00× (reference)" if c is ref else (
            "—" if c.key.startswith("rollway") else fmt_ratio(ref_rate, c.rate, whole_from=100))
        rows.append([c.system, f"{c.steps:,}", fmt_rate(c.rate), fmt_spread(c.rates), ratio,
                     f"{c.bytes_per_step:.1f}", fmt_secs(c.read_s), fmt_rate(c.read_rate)])
    for system, why in skipped:
        rows.append([system, "—", f"skipped: {why}", "", "", "", "", ""])
    others = [c for c in cases if c.reps and not c.key.startswith("rollway")]
    return ["### Summary", "",
            *md_table(["system", "steps recorded", "record steps/s (median)", "min – max", "rollway / this",
                       "bytes/step", "read-back time", "read-back steps/s"], rows, "-rrrrrrr"),
            "",
            "rollway / this = rollway's whole-process record rate at "
            f"{a.steps:,} steps ÷ that system's record rate"
            + (f" (with rollway's in-process `steps_per_sec`, {fmt_rate(ref_in)}: "
               + ", ".join(f"{c.system} {fmt_ratio(ref_in, c.rate, whole_from=100)}" for c in others) + ")"
               if ref_in and others else "") + ". "
            "Read-back: Minari = `minari.load_dataset(id)` + `iterate_episodes()` touching "
            "observations/actions/rewards; rollway = `pyarrow.parquet.read_table` of every "
            "committed `steps/shard-*.parquet`, all columns materialised as numpy. Read-back "
            "steps/s counts transitions.",
            ""]


def render_rollway_detail(cases: list[Case], a) -> list[str]:
    """rollway's runs: in-process rate, episodes, files, pyarrow read and `rollway verify`."""
    rw = [c for c in cases if c.key.startswith("rollway") and c.reps]
    if not rw:
        return []
    rows = []
    for c in rw:
        eps = c.reps[0].episodes
        rows.append([f"{c.steps:,}", fmt_rate(c.rate), fmt_rate(c.inproc_rate),
                     f"{eps:,}" if isinstance(eps, int) else "?", c.reps[0].files,
                     f"{c.bytes_per_step:.1f}", fmt_secs(c.read_s), fmt_secs(c.verify_s),
                     fmt_rate(c.verify_rate)])
    return ["### rollway detail", "",
            *md_table(["steps", "whole-process steps/s", "in-process `steps_per_sec`", "episodes", "files",
                       "bytes/step", "pyarrow read", "`rollway verify`", "verify steps/s"], rows, "r" * 9),
            "", f"Command: `rollway run --env {ENV_ID} --agent random --workers "
            f"{a.rollway_workers} --envs-per-worker {a.rollway_envs} --mode {a.rollway_mode} --steps S --seed {a.seed} "
            "--out DIR --quiet --summary-json S.json`; whole-process = `steps` / wall time of "
            "that process (process start, env construction, generating, writing and "
            "committing shards); `rollway verify DIR` is timed as a whole process too.", ""]


def render_minari_detail(cases: list[Case]) -> list[str]:
    """Minari's runs by data format, and what its writers do."""
    mn = [c for c in cases if c.key.startswith("minari") and c.reps]
    if not mn:
        return []
    rows = [[c.key.split('-', 1)[1], f"{c.steps:,}", f"{c.reps[0].episodes:,}", c.reps[0].files,
             fmt_secs(med([r.record_s for r in c.reps])), f"{c.bytes_per_step:.1f}", fmt_secs(c.read_s)]
            for c in mn]
    return ["### Minari detail", "",
            *md_table(["format", "steps", "episodes", "files", "record time", "bytes/step", "read-back time"],
                      rows, "-rrrrrr"),
            "", "`DataCollector(gym.make(\"CartPole-v1\"), record_infos=False, data_format=F)`, "
            "`env.action_space.seed(seed)`, `reset(seed=seed + episode)`, "
            "`create_dataset(dataset_id=\"cartpole/bench-F-v0\", algorithm_name=\"random\", "
            "description=...)` (no reference-score estimation: no `ref_max_score`/`expert_policy`). "
            "Minari's hdf5 writer opens/closes the file for every episode and creates one group "
            "with 5 chunked datasets (+ an empty `infos` group) per episode; the arrow writer "
            "writes one directory per episode (`part-0.arrow` + `metadata.json`) and re-walks the "
            "whole dataset directory after each one (`get_size`), which is why its rate falls as "
            "the episode count grows.", ""]


def render(cases: list[Case], note: list[str], a, elapsed: float,
           skipped: list[tuple[str, str]]) -> str:
    L = [f"## CartPole-v1 episode recording throughput{' (quick run)' if a.quick else ''}", ""]
    L += note
    L += [f"- Method: median of {a.reps} repetitions per system, each into a fresh temp dir. "
          "Record = env construction + random-action stepping + writing + finalising the dataset "
          "(Minari: in-process, imports excluded; rollway: whole `rollway run` process). "
          "Bytes/step = sum of the dataset directory's file sizes / steps. "
          f"Script wall time {elapsed:.0f}s.", ""]
    L += render_summary(cases, a, skipped)
    L += render_rollway_detail(cases, a)
    L += render_minari_detail(cases)
    for c in cases:
        if c.error:
            L.append(f"- {c.system} at {c.target_steps:,} steps failed: `{c.error.splitlines()[0]}`")
    return "\n".join(L).rstrip() + "\n"


# --------------------------------------------------------------------------- main


def parse_args(argv: Optional[list[str]]):
    """The command line, with the defaults that depend on --quick filled in."""
    p = common_parser(__doc__, quick_help="fast run (~1 min): 10k steps (hdf5, rollway), 2k arrow "
                                          "steps, 1M big rollway steps",
                      reps_help="repetitions per system (median is reported)")
    p.add_argument("--steps", type=int, help="steps for Minari hdf5 and rollway (default 100000; --quick 10000)")
    p.add_argument("--arrow-steps", type=int,
                   help="steps for Minari arrow/parquet, whose cost is quadratic in episodes "
                        "(default 10000; --quick 2000)")
    p.add_argument("--rollway-big-steps", type=int,
                   help="steps for the sustained rollway case, 0 to skip (default 10000000; --quick 1000000)")
    p.add_argument("--minari-formats", default="hdf5,arrow",
                   help="Minari data formats to run (hdf5, arrow, parquet)")
    p.add_argument("--skip", default="", help="comma list to skip: minari,rollway,rollway-big")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollway-workers", type=int, default=2)
    p.add_argument("--rollway-envs", type=int, default=256, help="rollway --envs-per-worker")
    p.add_argument("--rollway-mode", default="async", choices=["sync", "async"], help="rollway --mode")
    p.add_argument("--no-verify", action="store_true", help="don't time `rollway verify DIR`")
    p.add_argument("--rollway-timeout", type=float, default=300.0, help="seconds before a rollway process is killed")
    p.add_argument("--tmpdir", help="where the temp dataset dirs go (default: the system temp dir)")
    a = p.parse_args(argv)

    q = a.quick
    if a.steps is None:
        a.steps = 10_000 if q else 100_000
    if a.arrow_steps is None:
        a.arrow_steps = 2_000 if q else 10_000
    if a.rollway_big_steps is None:
        a.rollway_big_steps = 1_000_000 if q else 10_000_000
    return a


def check_minari(skip: set[str], skipped: list[tuple[str, str]]) -> None:
    """Unless skipped already: when Minari (or what its `DataCollector` needs) does not
    import, add it to `skip` and say why in `skipped`."""
    if "minari" in skip:
        return
    try:
        import gymnasium as gym
        gym.logger.min_level = 40
        import minari  # noqa: F401
        import jax  # noqa: F401  (DataCollector's EpisodeBuffer needs jax.tree_util)
    except ImportError as exc:
        log(f"minari not importable ({exc}); skipping Minari "
            "(pip install 'minari[create,hdf5,arrow]')")
        skip.add("minari")
        skipped.append(("Minari `DataCollector`", str(exc)))


def run_rollway(a, skip: set[str], skipped: list[tuple[str, str]]) -> tuple[Optional[str], str, list[Case]]:
    """(the binary or None, the rollway state for the machine note, its cases); a reason to
    skip goes to `skipped`."""
    if "rollway" in skip:
        return None, "", []
    binary = resolve_binary(a.rollway)
    if binary is None:
        rollway_state = f"binary not found at {a.rollway!r}"
        log(f"rollway {rollway_state}; skipping rollway "
            "(build it with `cargo build --release` and pass --rollway PATH)")
        skipped.append(("rollway `run --out`", rollway_state))
        return None, rollway_state, []
    ok, why = rollway_supports_out(binary)
    if not ok:
        log(f"rollway: {why}; skipping rollway")
        skipped.append(("rollway `run --out`", why))
        return binary, why, []
    log(f"rollway ({binary}), {a.steps:,} steps")
    cases = [bench_rollway(binary, a.steps, "rollway", a)]
    if a.rollway_big_steps and "rollway-big" not in skip and cases[-1].reps:
        log(f"rollway, {a.rollway_big_steps:,} steps")
        cases.append(bench_rollway(binary, a.rollway_big_steps, "rollway-big", a))
    return binary, "", cases


def run_minari(a, formats: list[str]) -> list[Case]:
    """One case per Minari data format."""
    cases = []
    for fmt in formats:
        steps = a.steps if fmt == "hdf5" else a.arrow_steps
        log(f"Minari DataCollector, data_format={fmt!r}, {steps:,} steps")
        cases.append(bench_minari(fmt, steps, a))
    return cases


def main(argv: Optional[list[str]] = None) -> int:
    a = parse_args(argv)
    if a.tmpdir:
        os.makedirs(a.tmpdir, exist_ok=True)
        tempfile.tempdir = a.tmpdir
    skip = set(parse_list(a.skip, str))
    formats = parse_list(a.minari_formats, str)

    warnings.filterwarnings("ignore")  # Minari warns about missing author/permalink/eval_env
    skipped: list[tuple[str, str]] = []
    check_minari(skip, skipped)

    load_start = os.getloadavg()
    t_start = time.perf_counter()
    binary, rollway_state, cases = run_rollway(a, skip, skipped)
    if "minari" not in skip:
        cases += run_minari(a, formats)

    # Report order: Minari first, then rollway.
    cases.sort(key=lambda c: (c.key.startswith("rollway"), c.key == "rollway-big"))
    elapsed = time.perf_counter() - t_start
    note = record_machine_note(binary, rollway_state, load_start, os.getloadavg())
    write_report(render(cases, note, a, elapsed, skipped), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
