#!/usr/bin/env python3
"""The Python package against the CLI and the Python peers, side by side in one run.

Loader (same data, same windows: shuffled ``--clip``-step windows, stride 1, batch ``--batch``):

* ``rollway load DIR --json`` as a subprocess (its in-process ``windows_per_sec``): the target;
* ``rollway.Loader`` iterated from Python, numpy arrays (each batch's arrays touched: shape read);
* ``rollway.Loader(torch=True)``: every field a ``torch.from_numpy`` tensor (no copy), as
  ``rollway.torch.IterableDataset`` gives them;
* numpy ``np.take`` gather and TorchRL ``SliceSampler``, as in ``load_throughput.py`` (reused).

DataCollector (``gym.make("CartPole-v1")``, random actions from a seeded numpy
generator, ``--collect-steps`` steps, reset on episode end, then close/commit):

* the bare env loop (no recording): what the env itself costs;
* ``rollway.DataCollector``, then ``close()`` (commits everything);
* ``minari.DataCollector(data_format="hdf5")``, then ``create_dataset``.

make_vec (random CartPole-v1 actions pre-drawn per batch, stepped from a Python loop
for ~``--vec-s`` seconds, N = ``--vec-n``):

* ``rollway.make_vec("CartPole-v1", N)`` (and ``threads=2``);
* ``envpool.make_gymnasium("CartPole-v1", num_envs=N)`` (sync ``step``), when installed;
* Gymnasium's numpy-vectorised ``CartPoleVectorEnv`` (``vectorization_mode="vector_entry_point"``).

Reported: medians of ``--reps`` (taken in turn, so all see the same machine), ratios,
and for the collectors the µs per step each adds over the bare env.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import fmt_rate, log, machine_note, md_table, module_versions, resolve_binary, write_report  # noqa: E402
import load_throughput as lt  # noqa: E402


def med(xs: List[float]) -> float:
    return statistics.median(xs)


def cli_load(binary: str, ds: str, a) -> float:
    cmd = [binary, "load", ds, "--clip", str(a.clip), "--stride", "1", "--batch", str(a.batch),
           "--epochs", str(a.epochs), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(lt.parse_json_out(out)["windows_per_sec"])


def tensor_floor(ds: str, a, loops: int = 20_000) -> Dict[str, float]:
    """µs a batch that Python spends making its arrays into tensors, at the least: one
    `torch.from_numpy` per field (what `torch=True` does), and `Tensor.detach()` per
    field, torch's cheapest way to make a tensor object (no numpy, no new storage)."""
    import torch

    import rollway

    b = next(iter(rollway.Loader(ds, clip=a.clip, stride=1, batch=a.batch, seed=a.seed, epochs=1)))
    arrays = [v for v in b.values() if hasattr(v, "shape")]
    tensors = [torch.from_numpy(x) for x in arrays]
    out = {"fields": float(len(arrays))}
    for name, make, src in (("from_numpy", torch.from_numpy, arrays), ("detach", torch.Tensor.detach, tensors)):
        t = time.perf_counter()
        for _ in range(loops):
            for x in src:
                make(x)
        out[f"tensor_{name}_us"] = (time.perf_counter() - t) / loops * 1e6
    return out


def py_load(ds: str, a, torch_too: bool, busy: Optional[List[float]] = None) -> float:
    """Windows/s; appends to `busy` how many cores the process kept busy meanwhile."""
    import rollway

    ld = rollway.Loader(ds, clip=a.clip, stride=1, batch=a.batch, seed=a.seed, epochs=a.epochs, torch=torch_too)
    n = 0
    c, t = os.times(), time.perf_counter()
    for b in ld:
        n += b["rewards"].shape[0]
    secs, c1 = time.perf_counter() - t, os.times()
    if busy is not None:
        busy.append((c1.user + c1.system - c.user - c.system) / secs)
    return n / secs


def bench_loader(binary: str, ds: str, a) -> Dict[str, List[float]]:
    d = lt.load_numpy(ds)
    starts = lt.window_starts(d.ep_start, d.ep_len, a.clip, 1)
    import numpy as np

    rng = np.random.default_rng(a.seed)
    have_torch = _importable("torch")
    rates: Dict[str, List[float]] = {k: [] for k in ("cli", "py", "torch", "numpy")}
    busy: List[float] = []
    py_load(ds, a, False)  # warm-up (page cache, first allocations)
    for i in range(a.reps):
        rates["cli"].append(cli_load(binary, ds, a))
        rates["py"].append(py_load(ds, a, False, busy))
        if have_torch:
            rates["torch"].append(py_load(ds, a, True))
        n = secs = 0
        for _ in range(max(1, a.epochs // 10)):
            w, s, _ = lt.numpy_epoch(d, starts, a.clip, a.batch, rng)
            n, secs = n + w, secs + s
        rates["numpy"].append(n / secs)
        log(f"  loader rep {i + 1}: " + ", ".join(f"{k} {fmt_rate(v[-1])}" for k, v in rates.items() if v))
    if not a.skip_torchrl and have_torch and _importable("torchrl"):
        ns = argparse.Namespace(clip=a.clip, batch=a.batch, reps=a.reps, seed=a.seed, torch_threads=1,
                                torchrl_max_s=a.torchrl_max_s, quick=False, epochs=1)
        r = lt.bench_torchrl(d, len(starts), ns)
        rates["torchrl"] = r.rates if not r.error else []
    rates["busy"] = busy
    if have_torch:
        rates.update({k: [v] for k, v in tensor_floor(ds, a).items()})
    return rates


def _importable(mod: str) -> bool:
    try:
        __import__(mod)
        return True
    except Exception:  # noqa: BLE001
        return False


def drive(env, steps: int, seed: int) -> None:
    import numpy as np

    acts = np.random.default_rng(seed).integers(0, 2, size=steps).tolist()
    env.reset(seed=seed)
    ep = 0
    for a in acts:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            ep += 1
            env.reset(seed=seed + ep)


def collect_once(kind: str, steps: int, seed: int, tmp: str) -> float:
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    t = time.perf_counter()
    if kind == "bare":
        drive(env, steps, seed)
    elif kind == "rollway":
        import rollway

        c = rollway.DataCollector(env, os.path.join(tmp, "rw"))
        drive(c, steps, seed)
        c.close()
    else:
        import minari

        os.environ["MINARI_DATASETS_PATH"] = os.path.join(tmp, "minari")
        c = minari.DataCollector(env, record_infos=False, data_format="hdf5")
        drive(c, steps, seed)
        c.create_dataset(dataset_id="bench/cartpole-v0", algorithm_name="random")
        c.close()
    secs = time.perf_counter() - t
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp, exist_ok=True)
    return steps / secs


def bench_collect(a) -> Dict[str, List[float]]:
    tmp = tempfile.mkdtemp(prefix="rollway-collect-bench-")
    rates: Dict[str, List[float]] = {"bare": [], "rollway": [], "minari": []}
    collect_once("rollway", 2000, a.seed, tmp)  # warm-up: imports, first allocations
    for i in range(a.reps):
        for k in rates:
            rates[k].append(collect_once(k, a.collect_steps, a.seed + i, tmp))
        log(f"  collect rep {i + 1}: " + ", ".join(f"{k} {fmt_rate(v[-1])} steps/s" for k, v in rates.items()))
    shutil.rmtree(tmp, ignore_errors=True)
    return rates


def vec_rate(make: Callable, n: int, secs: float, seed: int) -> float:
    import numpy as np

    env = make(n)
    env.reset(seed=seed)
    acts = np.random.default_rng(seed).integers(0, 2, size=(64, n))
    steps, t = 0, time.perf_counter()
    while time.perf_counter() - t < secs:
        for a in acts:
            env.step(a)
        steps += len(acts) * n
    rate = steps / (time.perf_counter() - t)
    env.close()
    return rate


def vec_makers() -> Dict[str, Callable]:
    import gymnasium as gym
    import rollway

    makers: Dict[str, Callable] = {
        "rollway": lambda n: rollway.make_vec("CartPole-v1", n),
        "rollway2": lambda n: rollway.make_vec("CartPole-v1", n, threads=2),
        "gymvec": lambda n: gym.make_vec("CartPole-v1", n, vectorization_mode="vector_entry_point"),
    }
    if _importable("envpool"):
        import envpool

        makers["envpool"] = lambda n: envpool.make_gymnasium("CartPole-v1", num_envs=n, seed=0)
    return makers


def bench_vec(a) -> Dict[int, Dict[str, List[float]]]:
    makers = vec_makers()
    out: Dict[int, Dict[str, List[float]]] = {}
    for n in a.vec_n:
        out[n] = {k: [] for k in makers}
        for i in range(a.reps):
            for k, mk in makers.items():
                out[n][k].append(vec_rate(mk, n, a.vec_s, a.seed + i))
        log(f"  make_vec N={n}: " + ", ".join(f"{k} {fmt_rate(med(v))}" for k, v in out[n].items()))
    return out


def render_vec(vec: Dict[int, Dict[str, List[float]]], a) -> List[str]:
    names = {"rollway": "`rollway.make_vec`", "rollway2": "`rollway.make_vec(threads=2)`",
             "envpool": "EnvPool `make_gymnasium` (sync)", "gymvec": "Gymnasium `CartPoleVectorEnv`"}
    keys = [k for k in names if any(k in v for v in vec.values())]
    rows = []
    for n, rates in vec.items():
        m = {k: med(v) for k, v in rates.items()}
        best = max(m["rollway"], m["rollway2"])
        ep = f"{best / m['envpool']:.2f}×" if "envpool" in m else "n/a (envpool not installed)"
        rows.append([n, *(fmt_rate(m[k]) for k in keys), ep, f"{best / m['gymvec']:.2f}×"])
    headers = ["N", *(names[k] for k in keys), "rollway best / EnvPool", "rollway best / Gymnasium"]
    return ["", f"### make_vec: CartPole-v1 steps/s from a Python loop, median of {a.reps} × {a.vec_s:g} s", "",
            *md_table(headers, rows, "r" * len(headers))]


def render_floor(m: Dict[str, float], batch: int) -> List[str]:
    """The torch path's ceiling: with the cores busy loading, each µs the consumer spends on
    a batch is a µs taken from loading, so a ratio to the CLI is at most G / (G + X)."""
    g = m["busy"] * batch / m["cli"] * 1e6
    fn, dt = m["tensor_from_numpy_us"], m["tensor_detach_us"]
    return ["", f"The numpy loader kept {m['busy']:.2f} cores busy: loading is CPU-bound, and a batch at the CLI's "
            f"rate costs G = {g:.1f} CPU µs. Making the batch's {int(m['fields'])} arrays into tensors costs "
            f"{fn:.2f} µs with `torch.from_numpy`, and {dt:.2f} µs even with `Tensor.detach()` (torch's cheapest new "
            f"tensor; both timed here). Each µs the consumer spends is one taken from loading, so a torch loader "
            f"stays below G / (G + X) = {g / (g + fn):.2f}× / {g / (g + dt):.2f}× of the CLI before any other cost."]


def render(load: Dict[str, List[float]], coll: Dict[str, List[float]], vec, a, note: List[str]) -> str:
    m = {k: med(v) for k, v in load.items() if v}
    L = ["## Python package: `rollway.Loader` and `rollway.DataCollector`", ""] + note + [""]
    names = {"cli": "`rollway load --json` (CLI, in-process rate)", "py": "`rollway.Loader` → numpy (zero-copy)",
             "torch": "`rollway.Loader(torch=True)` → tensors (`torch.from_numpy` of every field)", "numpy": "numpy `np.take` gather",
             "torchrl": "TorchRL `ReplayBuffer` + `SliceSampler`"}
    rows = [[name, fmt_rate(m[k]), ', '.join(fmt_rate(x) for x in load[k]), f"{m[k] / m['cli']:.2f}×"]
            for k, name in names.items() if k in m]
    L += [f"### Loader: shuffled {a.clip}-step windows, batch {a.batch}, {a.epochs} epochs a repetition "
          f"(CartPole, {a.steps:,} steps), median of {a.reps}", "",
          *md_table(["loader", "windows/s (median)", "reps", "vs `rollway load`"], rows, "-r-r")]
    for k in ("py", "torch"):
        if k in m:
            for peer in ("numpy", "torchrl"):
                if peer in m:
                    L.append(f"\n- {names[k]} / {names[peer]}: **{m[k] / m[peer]:.1f}×**")
    if "tensor_detach_us" in m:
        L += render_floor(m, a.batch)
    c = {k: med(v) for k, v in coll.items()}
    us = {k: 1e6 / c[k] - 1e6 / c["bare"] for k in ("rollway", "minari")}
    L += ["", f"### DataCollector: `gym.make(\"CartPole-v1\")`, random actions, {a.collect_steps:,} steps, "
          f"median of {a.reps}", ""]
    rows = []
    for k, name in (("bare", "bare env loop (no recording)"), ("rollway", "`rollway.DataCollector` + `close()`"),
                    ("minari", "`minari.DataCollector(hdf5)` + `create_dataset`")):
        add = "—" if k == "bare" else f"{us[k]:.2f}"
        rows.append([name, fmt_rate(c[k]), ', '.join(fmt_rate(x) for x in coll[k]), add])
    L += md_table(["recorder", "steps/s (median)", "reps", "µs/step added over the bare env"], rows, "-r-r")
    L += ["", f"- rollway / Minari: **{c['rollway'] / c['minari']:.1f}×** steps/s"]
    L += render_vec(vec, a)
    return "\n".join(L) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rollway", default=os.environ.get("ROLLWAY", "target/release/rollway"))
    p.add_argument("--steps", type=int, default=300_000, help="steps in the loader's dataset")
    p.add_argument("--clip", type=int, default=16)
    p.add_argument("--batch", type=int, default=256)
    # 10 epochs of CartPole windows take ~40 ms, shorter than this VM's scheduling noise (the CLI's
    # own rate spread 15-29M windows/s); 100 take ~0.4 s and settle within a few percent.
    p.add_argument("--epochs", type=int, default=100, help="loader epochs a repetition (default 100, ~0.4 s)")
    p.add_argument("--collect-steps", type=int, default=100_000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torchrl-max-s", type=float, default=10.0)
    p.add_argument("--skip-torchrl", action="store_true")
    p.add_argument("--vec-n", type=lambda x: [int(v) for v in x.split(",")], default=[8, 64, 256, 1024])
    p.add_argument("--vec-s", type=float, default=1.0, help="seconds per make_vec measurement")
    p.add_argument("--out", help="also write the markdown report here")
    a = p.parse_args(argv)
    binary = resolve_binary(a.rollway)
    if binary is None:
        log(f"rollway binary not found at {a.rollway!r} (cargo build --release)")
        return 2
    load_start = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="rollway-pyapi-bench-")
    try:
        ds = os.path.join(tmp, "ds")
        lt.make_dataset(binary, a.steps, a.seed, ds, 300)
        log("loader: CLI, Python numpy, Python torch, numpy gather in turn")
        load = bench_loader(binary, ds, a)
        log("collectors: bare env, rollway, minari in turn")
        coll = bench_collect(a)
        log("make_vec: rollway, EnvPool, Gymnasium in turn")
        vec = bench_vec(a)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    versions = module_versions(["numpy", "gymnasium", "minari", "torch", "torchrl"])
    note = machine_note(binary, load_start, os.getloadavg(), packages=", ".join(f"{k} {v}" for k, v in versions.items()))
    write_report(render(load, coll, vec, a, note), a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
