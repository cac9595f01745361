#!/usr/bin/env python3
"""Training-loader throughput: shuffled 16-step windows, batch 256, rollway vs Python peers.

Measures, in one run on one machine and on the same data, how many shuffled
``--clip``-step windows (default 16, start every step, never crossing an episode end)
per second each loader delivers in batches of ``--batch`` (default 256):

* rollway: ``rollway load DIR --clip 16 --stride 1 --batch 256 --epochs E --json`` as a
  subprocess (its JSON: ``windows``, ``windows_per_sec``, ``mb_per_sec``, ``seconds``);
  skipped with the reason when the binary has no ``load`` subcommand yet.
* numpy gather: the same Parquet shards read with pyarrow into contiguous numpy arrays
  (obs float32 [N,4], actions int64, rewards float64, terminations, truncations), the
  valid window starts built from the index JSON, shuffled with ``np.random.default_rng``
  and every batch gathered with ``np.take(arr, idx[:, None] + arange(clip), axis=0)`` into
  [256, 16, ...] arrays; ``--epochs`` full epochs (shuffle included) per repetition.
* TorchRL: ``ReplayBuffer(storage=LazyTensorStorage(N), sampler=SliceSampler(slice_len=16,
  traj_key="episode", cache_values=True, strict_length=True), batch_size=256*16)`` filled
  with a TensorDict of the same transitions; ``rb.sample()`` timed over as many batches
  as one epoch has.
* Minari: a dataset built with ``minari.DataCollector`` over random-action CartPole-v1
  (same number of steps, seeded) in a temp ``MINARI_DATASETS_PATH``, then the "Minari
  loop": ``ds.sample_episodes(256)`` + slicing one random window out of each long-enough
  episode in Python, time-boxed; windows measured / time measured.
* memcpy: ``np.copyto`` of a large contiguous buffer → GB/s, the yardstick for rollway's
  ``mb_per_sec``.

The dataset is made with ``rollway run --env CartPole-v1 --agent random --steps 300000
--seed 0 --out DIR -q`` (or given with ``--dataset DIR``). Medians of ``--reps`` (default
3). Progress goes to stderr; the markdown report goes to stdout (and to ``--out``).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchlib, from any cwd
from benchlib import (ENV_ID, RollwayError, common_parser, fmt_rate, fmt_ratio,  # noqa: E402
                      fmt_spread, log, machine_note, md_table, module_versions, parse_list,
                      resolve_binary, run_proc, write_report)

from load_peers import Result, bench_minari, bench_torchrl, med  # noqa: E402

ROLLWAY_KEYS = ("windows", "windows_per_sec", "mb_per_sec", "seconds")


def fmt_secs(x: Optional[float]) -> str:
    if x is None:
        return "n/a"
    if x < 1:
        return f"{x * 1000:.0f} ms" if x >= 0.01 else f"{x * 1000:.1f} ms"
    return f"{x:.2f} s"


# --------------------------------------------------------------------------- dataset


def make_dataset(binary: str, steps: int, seed: int, out_dir: str, timeout: float) -> float:
    cmd = [binary, "run", "--env", ENV_ID, "--agent", "random", "--steps", str(steps),
           "--seed", str(seed), "--out", out_dir, "-q"]
    return run_proc(cmd, timeout)


@dataclass
class Data:
    """All committed rows of the dataset as contiguous numpy arrays plus episode layout."""
    obs: "object"  # float32 [R, obs_dim]
    actions: "object"  # int64 [R] (null on each episode's last row → 0)
    rewards: "object"  # float64 [R]
    terminations: "object"  # bool [R]
    truncations: "object"  # bool [R]
    episode_id: "object"  # int64 [R]
    ep_start: "object"  # int64 [E] global row of each episode's first row
    ep_len: "object"  # int64 [E] T (transitions) of each episode
    load_s: float = 0.0

    @property
    def rows(self) -> int:
        return len(self.actions)

    @property
    def steps(self) -> int:
        return int(self.ep_len.sum())


def committed_shards(ds_dir: str) -> list[tuple[str, str]]:
    """(parquet, index json) of every committed shard, in shard order (FORMAT.md)."""
    out = []
    for idx in sorted(glob.glob(os.path.join(ds_dir, "index", "shard-*.json"))):
        stem = os.path.basename(idx)[: -len(".json")]
        pq_path = os.path.join(ds_dir, "steps", stem + ".parquet")
        if os.path.exists(pq_path):
            out.append((pq_path, idx))
    if not out:
        raise RollwayError(f"no committed step shards in {ds_dir}")
    return out


def load_numpy(ds_dir: str) -> Data:
    """pyarrow → contiguous numpy arrays (timed: `load_s`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = time.perf_counter()
    cols: dict[str, list] = {k: [] for k in ("observations", "actions", "rewards", "terminations",
                                             "truncations", "episode_id")}
    starts, lens = [], []
    offset = 0
    for pq_path, idx_path in committed_shards(ds_dir):
        table = pq.read_table(pq_path, columns=list(cols))
        with open(idx_path) as f:
            index = json.load(f)
        for e in index["episodes"]:
            if e["rows"] > 0:
                starts.append(offset + e["row_start"])
                lens.append(e["length"])
        for name in cols:
            arr = table.column(name).combine_chunks()
            if pa.types.is_fixed_size_list(arr.type):
                width = arr.type.list_size
                np_arr = arr.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
            else:
                if arr.null_count:
                    fill = False if pa.types.is_boolean(arr.type) else 0
                    arr = pc.fill_null(arr, pa.scalar(fill, type=arr.type))
                np_arr = arr.to_numpy(zero_copy_only=False)
            cols[name].append(np_arr)
        offset += table.num_rows
    cat = {k: np.ascontiguousarray(np.concatenate(v)) for k, v in cols.items()}
    d = Data(obs=cat["observations"].astype(np.float32, copy=False),
             actions=cat["actions"].astype(np.int64, copy=False),
             rewards=cat["rewards"].astype(np.float64, copy=False),
             terminations=cat["terminations"].astype(bool, copy=False),
             truncations=cat["truncations"].astype(bool, copy=False),
             episode_id=cat["episode_id"],
             ep_start=np.asarray(starts, dtype=np.int64), ep_len=np.asarray(lens, dtype=np.int64))
    d.load_s = time.perf_counter() - t
    return d


def window_starts(ep_start, ep_len, clip: int, stride: int):
    """Global rows where a `clip`-step window starts: within an episode of T steps (T+1 rows,
    the last one holding only the final observation) a window covers rows s..s+clip-1,
    all with an action, so s = 0, stride, … ≤ T - clip."""
    import numpy as np

    n = np.where(ep_len >= clip, (ep_len - clip) // stride + 1, 0)
    total = int(n.sum())
    ep = np.repeat(np.arange(len(n)), n)
    first = np.cumsum(n) - n  # index of each episode's first window
    k = np.arange(total) - np.repeat(first, n)
    return (ep_start[ep] + k * stride).astype(np.int64)


# --------------------------------------------------------------------------- numpy gather


def numpy_epoch(d: Data, starts, clip: int, batch: int, rng) -> tuple[int, float, int]:
    """One shuffled epoch of gathered batches → (windows, seconds, checksum-ish int)."""
    import numpy as np

    ar = np.arange(clip, dtype=np.int64)
    t = time.perf_counter()
    perm = rng.permutation(starts)
    touched = 0
    for b in range(0, len(perm), batch):
        rows = perm[b:b + batch, None] + ar  # [B, clip]
        o = np.take(d.obs, rows, axis=0)  # [B, clip, obs_dim]
        a = np.take(d.actions, rows)
        r = np.take(d.rewards, rows)
        te = np.take(d.terminations, rows)
        tr = np.take(d.truncations, rows)
        touched += o.shape[0] + a.shape[0] + r.shape[0] + te.shape[0] + tr.shape[0]
    secs = time.perf_counter() - t
    return len(perm), secs, touched


def bytes_per_window(d: Data, clip: int) -> int:
    return clip * (d.obs.itemsize * d.obs.shape[1] + d.actions.itemsize + d.rewards.itemsize
                   + d.terminations.itemsize + d.truncations.itemsize)


def bytes_per_window_default(clip: int) -> int:
    """CartPole: obs 4×f32 + action i64 + reward f64 + 2 bools per step."""
    return clip * (16 + 8 + 8 + 1 + 1)


def numpy_setup(d: Data, starts, a) -> tuple[Result, "object"]:
    """Sanity check + warm-up; returns the result to fill and the shuffle rng."""
    import numpy as np

    res = Result("numpy gather (`np.take`, [256,16,…] per field)", "numpy")
    # Untimed sanity check: every window lies inside one episode and its last row has an action
    # (the row after it, at worst the episode's final-observation row, is the same episode).
    if not (np.array_equal(d.episode_id[starts], d.episode_id[starts + a.clip])
            and np.array_equal(d.episode_id[starts], d.episode_id[starts + a.clip - 1])):
        raise RuntimeError("window index crosses an episode end (bug in window_starts)")
    rng = np.random.default_rng(a.seed)
    numpy_epoch(d, starts[: max(a.batch * 20, 1)], a.clip, a.batch, rng)  # warm-up
    res.extra["bytes_per_window"] = bytes_per_window(d, a.clip)
    return res, rng


def numpy_rep(d: Data, starts, a, res: Result, rng, i: int) -> None:
    """One repetition = --epochs shuffled epochs, the same work as rollway's."""
    n = secs = 0
    for _ in range(a.epochs):
        n_e, s_e, _ = numpy_epoch(d, starts, a.clip, a.batch, rng)
        n += n_e
        secs += s_e
    res.rates.append(n / secs)
    res.windows.append(n)
    res.seconds.append(secs)
    log(f"  numpy rep {i + 1}: {n:,} windows in {secs:.3f}s = {fmt_rate(n / secs)} windows/s")


# --------------------------------------------------------------------------- memcpy


def bench_memcpy(mb: int, reps: int) -> tuple[float, list[float]]:
    """np.copyto of an `mb`-MB contiguous buffer; (median GB/s, all GB/s). GB = 1e9 bytes
    copied (each byte is read once and written once)."""
    import numpy as np

    n = mb * 1_000_000 // 8
    src = np.arange(n, dtype=np.float64)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in
    rates = []
    for _ in range(max(reps, 5)):
        t = time.perf_counter()
        np.copyto(dst, src)
        rates.append(src.nbytes / (time.perf_counter() - t) / 1e9)
    del src, dst
    return statistics.median(rates), rates


# --------------------------------------------------------------------------- rollway


def rollway_has_load(binary: str) -> tuple[bool, str]:
    try:
        p = subprocess.run([binary, "load", "--help"], capture_output=True, text=True, timeout=30)
    except Exception as exc:  # noqa: BLE001
        return False, f"`rollway load --help` failed: {exc}"
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        return False, f"`rollway load --help` exited {p.returncode}: {msg[0] if msg else ''}"
    return True, ""


def parse_json_out(text: str) -> dict:
    """The JSON object `rollway load --json` printed (the whole stdout, or its last line
    that parses as an object)."""
    text = text.strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            return obj
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
                if isinstance(obj, dict):
                    return obj
            except ValueError:
                continue
    raise RollwayError(f"no JSON object in `rollway load --json` output: {text[-300:]!r}")


def rollway_load_once(binary: str, ds_dir: str, a) -> tuple[dict, float]:
    cmd = [binary, "load", ds_dir, "--clip", str(a.clip), "--stride", "1", "--batch", str(a.batch),
           "--epochs", str(a.epochs), "--json"]
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=a.rollway_timeout)
    except subprocess.TimeoutExpired as exc:
        raise RollwayError(f"timed out after {a.rollway_timeout:.0f}s: {' '.join(cmd)}") from exc
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise RollwayError(f"exit {p.returncode}: {' '.join(cmd)}\n{(p.stderr or p.stdout).strip()[-600:]}")
    js = parse_json_out(p.stdout)
    missing = [k for k in ROLLWAY_KEYS if k not in js]
    if missing:
        raise RollwayError(f"`rollway load --json` lacks {missing}: {js}")
    return js, wall


def rollway_rep(binary: str, ds_dir: str, a, res: Result, i: int) -> None:
    js, wall = rollway_load_once(binary, ds_dir, a)
    w = int(js["windows"])
    res.rates.append(float(js["windows_per_sec"]))
    res.windows.append(w)
    res.seconds.append(float(js["seconds"]))
    res.extra.setdefault("wall", []).append(wall)
    res.extra.setdefault("mb_per_sec", []).append(float(js["mb_per_sec"]))
    res.extra.setdefault("wall_rates", []).append(w / wall)
    res.extra["json"] = js
    log(f"  rollway rep {i + 1}: {w:,} windows, {fmt_rate(float(js['windows_per_sec']))} "
        f"windows/s in-process ({float(js['seconds']):.3f}s), {float(js['mb_per_sec']):.0f} MB/s; "
        f"whole process {wall:.3f}s = {fmt_rate(w / wall)} windows/s")


def bench_rollway_and_numpy(binary: Optional[str], ds_dir: str, d: Data, starts, a,
                            rw: Result, run_numpy: bool) -> Optional[Result]:
    """rollway and numpy repetitions taken in turn (rollway, numpy, rollway, …) so both
    see the same machine: the ratio is also taken pair by pair."""
    np_res = rng = None
    if run_numpy:
        np_res, rng = numpy_setup(d, starts, a)
    if binary is not None and rw.error is None:
        try:
            rollway_load_once(binary, ds_dir, a)  # warm-up (page cache)
        except RollwayError as exc:
            rw.error = str(exc)
            log(f"  rollway: FAILED: {exc}")
    for i in range(a.reps):
        if binary is not None and rw.error is None:
            try:
                rollway_rep(binary, ds_dir, a, rw, i)
            except RollwayError as exc:
                rw.error = str(exc)
                log(f"  rollway: FAILED: {exc}")
        if np_res is not None:
            numpy_rep(d, starts, a, np_res, rng, i)
    if np_res is not None and rw.rates and len(rw.rates) == len(np_res.rates):
        rw.extra["paired_vs_numpy"] = [x / y for x, y in zip(rw.rates, np_res.rates)]
    return np_res


# --------------------------------------------------------------------------- report


def render_table(results: list[Result], rw: Optional[Result]) -> list[str]:
    """One row per system: its rate, spread, windows and rollway's rate over it."""
    ref = rw.rate if rw and rw.rates else None
    rows = []
    for r in results:
        if r.error and not r.rates:
            rows.append([r.system, "skipped", r.error.splitlines()[0], "", ""])
            continue
        ratio = "1.00× (reference)" if r is rw else fmt_ratio(ref, r.rate, whole_from=100)
        rows.append([r.system, fmt_rate(r.rate), fmt_spread(r.rates),
                     f"{int(statistics.median(r.windows)):,}", ratio])
    return [*md_table(["system", "windows/s (median)", "min – max", "windows per rep", "rollway / this"],
                      rows, "-rrrr"),
            ""]


def render_rollway_detail(rw: Result, a, info: dict) -> list[str]:
    """rollway's bandwidth against memcpy, a window-count check and the details of its JSON."""
    mc = info.get("memcpy")
    L = []
    mbs = med(rw.extra["mb_per_sec"])
    share = f"{mbs / (mc * 1000) * 100:.1f}%" if mc else "n/a"
    L.append(f"**Bandwidth:** rollway `mb_per_sec` {mbs:,.0f} MB/s vs `np.copyto` memcpy "
             f"{mc:.2f} GB/s → {share} of memcpy (assuming MB = 10⁶ bytes)"
             if mc else f"**Bandwidth:** rollway `mb_per_sec` {mbs:,.0f} MB/s (memcpy not measured)")
    bpw = mbs * 1e6 / rw.rate if rw.rate else None
    L.append("")
    js = rw.extra.get("json", {})
    per_epoch = int(statistics.median(rw.windows)) / max(a.epochs, 1)
    if int(statistics.median(rw.windows)) not in (info["windows"], info["windows"] * a.epochs):
        L.append(f"**Window count mismatch:** rollway reports {int(statistics.median(rw.windows)):,} "
                 f"windows for {a.epochs} epoch(s) ({per_epoch:,.0f}/epoch); this script's definition "
                 f"(a window = {a.clip} transitions, starts 0..T−{a.clip}) gives {info['windows']:,} "
                 f"per epoch; counting {a.clip} *rows* of the T+1 (final observation included) "
                 f"would give {info['windows_rows']:,}.")
        L.append("")
    L.append(f"rollway detail: in-process `windows_per_sec` from its JSON; whole-process rate "
             f"(`windows` / wall time of the process, incl. start-up and reading the dataset) "
             f"{fmt_rate(med(rw.extra['wall_rates']))} windows/s; JSON `windows` = "
             f"{int(statistics.median(rw.windows)):,} for `--epochs {a.epochs}` "
             f"(one epoch here = {info['windows']:,}); implied "
             f"{'n/a' if bpw is None else f'{bpw:,.0f}'} bytes/window (numpy's five fields: "
             f"{bytes_per_window_default(a.clip)}); JSON `setup_seconds` (not in its rate) "
             f"{fmt_secs(js['setup_seconds']) if isinstance(js.get('setup_seconds'), (int, float)) else 'n/a'}; "
             "rollway assembles batches on its default `--threads` (CPU cores − 1 background "
             "threads, and the consuming thread assembles whenever the next batch is not ready: "
             "every core here), the numpy and TorchRL loops run on one core. "
             f"Last JSON: `{json.dumps(js, separators=(',', ':'))}`")
    return L


def render_bandwidth(rw: Optional[Result], a, info: dict) -> list[str]:
    """rollway's detail when it ran, else why not (with memcpy when measured)."""
    mc = info.get("memcpy")
    if rw and rw.rates:
        L = render_rollway_detail(rw, a, info)
    else:
        why = rw.error.splitlines()[0] if rw and rw.error else "not run"
        L = [f"**Bandwidth:** rollway not measured ({why}); `np.copyto` memcpy "
             f"{mc:.2f} GB/s" if mc else f"**Bandwidth:** rollway not measured ({why})"]
    return L + [""]


def render_peer_notes(results: list[Result], a, info: dict) -> list[str]:
    """A note on how each peer (numpy, TorchRL, Minari, memcpy) was measured."""
    L = []
    np_r = next((r for r in results if r.key == "numpy" and r.rates), None)
    if np_r:
        bpw = np_r.extra["bytes_per_window"]
        L.append(f"- numpy gather: pyarrow read + numpy conversion of the shards took "
                 f"{fmt_secs(info.get('load_s'))} (not in the rate); each rep = {a.epochs} epochs (as "
                 f"rollway's `--epochs`), each `rng.permutation` of the window starts + a full pass of `np.take` gathers of obs/actions/rewards/"
                 f"terminations/truncations into [{a.batch},{a.clip},…] arrays ({bpw} bytes/window "
                 f"→ {np_r.rate * bpw / 1e6:,.0f} MB/s at the median rate).")
    tr = next((r for r in results if r.key == "torchrl"), None)
    if tr and tr.rates:
        capped = " (capped by `--torchrl-max-s`)" if min(tr.windows) < tr.extra["n_batches"] * a.batch else ""
        L.append(f"- TorchRL: storage filled with the {tr.extra['transitions']:,} transitions (each "
                 f"episode's action-less last row dropped) in {fmt_secs(tr.extra['fill_s'])}; "
                 f"timed {tr.extra['n_batches']:,} `rb.sample()` calls of {a.batch}×{a.clip} rows"
                 f"{capped}; torch threads {tr.extra['torch_threads']} (`--torch-threads`). `SliceSampler` draws "
                 "trajectories uniformly at random with replacement, not an epoch without replacement.")
    mn = next((r for r in results if r.key == "minari"), None)
    if mn and mn.rates:
        L.append(f"- Minari: built with `DataCollector` (hdf5, {mn.extra['steps']:,} steps, "
                 f"{mn.extra['episodes']:,} episodes, in {mn.extra['build_s']:.0f}s, not timed in the "
                 f"rate); each rep time-boxed to ~{a.minari_s:g}s of `sample_episodes({a.batch})` + "
                 f"slicing one random window per episode with ≥{a.clip} steps + `np.stack`; "
                 f"{mn.extra['sampled_per_window']:.2f} episodes sampled per window (short ones are "
                 "skipped). Rate = windows measured / seconds measured (a rep ends after the "
                 "first batch past the box).")
    mna = next((r for r in results if r.key == "minari-all"), None)
    if mna and mna.rates:
        L.append(f"- Minari, every window: the same loop but slicing all T−{a.clip - 1} windows of each "
                 f"sampled episode ({mna.extra['sampled_per_window']:.3f} episodes read per window) — "
                 "Minari's best case, as its cost is per episode read; batches are runs of "
                 "overlapping windows from a few episodes, so this is not a shuffled loader.")
    if info.get("memcpy"):
        L.append(f"- memcpy: `np.copyto` of a {a.memcpy_mb} MB float64 buffer, median of "
                 f"{len(info['memcpy_all'])} ({min(info['memcpy_all']):.2f} – {max(info['memcpy_all']):.2f} GB/s), "
                 "GB/s = bytes copied / s / 10⁹.")
    return L


def render(results: list[Result], note: list[str], a, info: dict) -> str:
    rw = next((r for r in results if r.key == "rollway"), None)
    L = [f"## Training-loader throughput: shuffled {a.clip}-step windows, batch {a.batch}"
         f"{' (quick run)' if a.quick else ''}", ""]
    L += note
    L += [f"- Data: {info['dataset']}; {info['episodes']:,} episodes, {info['steps']:,} steps "
          f"({info['rows']:,} rows), {info['windows']:,} windows of {a.clip} steps per epoch "
          f"(stride 1, never crossing an episode end; episodes shorter than {a.clip} steps give none).",
          f"- Method: median of {a.reps} repetitions per system after a warm-up; rollway and "
          f"numpy repetitions alternate (rollway, numpy, rollway, …). "
          f"Script wall time {info['elapsed']:.0f}s.", ""]
    L += render_table(results, rw)
    L += render_bandwidth(rw, a, info)

    pairs = rw.extra.get("paired_vs_numpy") if rw else None
    if pairs:
        L.append(f"**rollway / numpy, pair by pair:** median {statistics.median(pairs):.2f}× "
                 f"(each rollway repetition over the numpy repetition that followed it; "
                 f"{min(pairs):.2f}× – {max(pairs):.2f}×).")
        L.append("")
    L += ["Notes:", ""]
    L += render_peer_notes(results, a, info)
    for r in results:
        if r.error and r.rates:
            L.append(f"- {r.system}: error after some reps: `{r.error.splitlines()[0]}`")
    return "\n".join(L).rstrip() + "\n"


# --------------------------------------------------------------------------- main


def parse_args(argv: Optional[list[str]]):
    """The command line, with the defaults that depend on --quick filled in."""
    p = common_parser(__doc__, quick_help="fast run (~1 min): same 300k-step data, 20k-step Minari "
                                          "dataset, 1 s Minari box, TorchRL capped at 2 s, 3 rollway epochs",
                      reps_help="repetitions per system (median is reported)")
    p.add_argument("--steps", type=int, default=300_000, help="steps in the rollway dataset")
    p.add_argument("--dataset", help="use this existing rollway dataset dir instead of making one")
    p.add_argument("--clip", type=int, default=16, help="window length in steps")
    p.add_argument("--batch", type=int, default=256, help="windows per batch")
    p.add_argument("--epochs", type=int, help="epochs per repetition, rollway and numpy alike (default 30; --quick 3)")
    p.add_argument("--minari-steps", type=int,
                   help="steps in the Minari dataset (default --steps; --quick 20000)")
    p.add_argument("--minari-s", type=float, help="seconds per Minari repetition (default 3; --quick 1)")
    p.add_argument("--torchrl-max-s", type=float,
                   help="cap on seconds per TorchRL repetition (default 30; --quick 2)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch.set_num_threads for TorchRL (0 = torch's default); with 2 threads on a "
                        "busy 2-core machine OpenMP contention made rb.sample() 10× slower")
    p.add_argument("--memcpy-mb", type=int, default=256, help="memcpy buffer size in MB")
    p.add_argument("--skip", default="", help="comma list to skip: rollway,numpy,torchrl,minari,memcpy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollway-timeout", type=float, default=300.0)
    p.add_argument("--tmpdir", help="where the temp dataset dirs go (default: the system temp dir)")
    a = p.parse_args(argv)
    if a.epochs is None:
        a.epochs = 3 if a.quick else 30
    if a.minari_steps is None:
        a.minari_steps = 20_000 if a.quick else a.steps
    if a.torchrl_max_s is None:
        a.torchrl_max_s = 2.0 if a.quick else 30.0
    if a.minari_s is None:
        a.minari_s = 1.0 if a.quick else 3.0
    return a


def dataset_dir(a, binary: Optional[str], rollway_state: str, info: dict, made: list[str]) -> str:
    """--dataset, or a dataset made with `rollway run` in a temp dir (appended to `made`, for
    the caller to remove); how it was made goes to info["dataset"]."""
    if a.dataset:
        ds_dir = os.path.abspath(a.dataset)
        info["dataset"] = f"existing dataset `{ds_dir}`"
        return ds_dir
    if binary is None:
        log(f"rollway {rollway_state}; cannot create the dataset (pass --dataset DIR)")
        raise SystemExit(2)
    tmp_parent = tempfile.mkdtemp(prefix="rollway-load-bench-")
    made.append(tmp_parent)
    ds_dir = os.path.join(tmp_parent, "dataset")
    log(f"creating dataset: rollway run --env {ENV_ID} --agent random --steps {a.steps:,} "
        f"--seed {a.seed} --out {ds_dir} -q")
    gen_s = make_dataset(binary, a.steps, a.seed, ds_dir, a.rollway_timeout)
    info["dataset"] = (f"`rollway run --env {ENV_ID} --agent random --steps {a.steps} "
                       f"--seed {a.seed} --out DIR -q` ({gen_s:.1f}s)")
    return ds_dir


def load_data(ds_dir: str, a, info: dict) -> tuple[Data, "object"]:
    """The dataset as numpy arrays and its window starts; its counts go to `info`."""
    d = load_numpy(ds_dir)
    starts = window_starts(d.ep_start, d.ep_len, a.clip, 1)
    info.update(episodes=len(d.ep_len), steps=d.steps, rows=d.rows, windows=len(starts),
                windows_rows=len(window_starts(d.ep_start, d.ep_len + 1, a.clip, 1)),
                load_s=d.load_s)
    log(f"data: {len(d.ep_len):,} episodes, {d.steps:,} steps, {d.rows:,} rows, "
        f"{len(starts):,} windows/epoch; pyarrow→numpy {d.load_s:.3f}s")
    return d, starts


def rollway_entry(a, binary: Optional[str], rollway_state: str, skip: set[str]) -> tuple[Result, str]:
    """rollway's result to fill, with its error set when it cannot run; and the rollway
    state for the machine note."""
    rw = Result(f"rollway `load --clip {a.clip} --stride 1 --batch {a.batch} --epochs {a.epochs}`",
                "rollway")
    if "rollway" in skip:
        rw.error = "skipped (--skip rollway)"
    elif binary is None:
        rw.error = rollway_state
    else:
        ok, why = rollway_has_load(binary)
        if not ok:
            rw.error = why
            rollway_state = "no `load` subcommand yet"
            log(f"rollway: {why}; skipping rollway load")
    return rw, rollway_state


def run_systems(a, binary: Optional[str], rollway_state: str, skip: set[str], ds_dir: str,
                d: Data, starts, info: dict) -> tuple[list[Result], str]:
    """Every system not in `skip`, in report order; memcpy goes to `info`. Returns the
    results and the rollway state for the machine note."""
    rw, rollway_state = rollway_entry(a, binary, rollway_state, skip)
    binary_for_rw = None if rw.error else binary
    if binary_for_rw:
        log(f"rollway load ({binary}) and numpy gather in turn, {a.epochs} epochs a rep")
    results = [rw]
    np_res = bench_rollway_and_numpy(binary_for_rw, ds_dir, d, starts, a, rw, "numpy" not in skip)
    if np_res is not None:
        results.append(np_res)
    if "torchrl" not in skip:
        log("TorchRL ReplayBuffer + SliceSampler")
        results.append(bench_torchrl(d, len(starts), a))
    if "minari" not in skip:
        log("Minari loop")
        results.extend(bench_minari(a))
    if "memcpy" not in skip:
        log(f"memcpy {a.memcpy_mb} MB")
        info["memcpy"], info["memcpy_all"] = bench_memcpy(a.memcpy_mb, a.reps)
        log(f"  memcpy: {info['memcpy']:.2f} GB/s (median)")
    return results, rollway_state


def main(argv: Optional[list[str]] = None) -> int:
    a = parse_args(argv)
    if a.tmpdir:
        os.makedirs(a.tmpdir, exist_ok=True)
        tempfile.tempdir = a.tmpdir
    skip = set(parse_list(a.skip, str))
    warnings.filterwarnings("ignore")

    load_start = os.getloadavg()
    t_start = time.perf_counter()
    binary = resolve_binary(a.rollway)
    rollway_state = "" if binary else f"binary not found at {a.rollway!r}"
    made: list[str] = []
    info: dict = {}
    try:
        ds_dir = dataset_dir(a, binary, rollway_state, info, made)
        d, starts = load_data(ds_dir, a, info)
        results, rollway_state = run_systems(a, binary, rollway_state, skip, ds_dir, d, starts, info)
    finally:
        for tmp_parent in made:
            shutil.rmtree(tmp_parent, ignore_errors=True)

    info["elapsed"] = time.perf_counter() - t_start
    vers = module_versions(("numpy", "pyarrow", "minari", "gymnasium", "torch", "torchrl", "tensordict"))
    note = machine_note(
        binary, load_start, os.getloadavg(),
        packages="; ".join(f"{k} {v}" for k, v in vers.items()),
        rollway_extra=f" — {rollway_state}" if rollway_state else "")
    write_report(render(results, note, a, info), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
