#!/usr/bin/env python3
"""Side-by-side CartPole-v1 random-action stepping throughput: rollway vs Python peers.

Measures, in one run on one machine:

* Gymnasium ``SyncVectorEnv``   (``gym.make_vec(..., vectorization_mode="sync")``)
* Gymnasium ``AsyncVectorEnv``  (``gym.make_vec(..., vectorization_mode="async")``, subprocesses)
* Gymnasium ``CartPoleVectorEnv`` (``vectorization_mode="vector_entry_point"``, the
  numpy-vectorised CartPole that ships with Gymnasium; an extra, strong Python peer)
* EnvPool, sync mode (batch_size == num_envs) and async mode (send/recv, batch_size < num_envs)
* rollway, via its CLI binary run as a subprocess
  (``rollway run --env CartPole-v1 --agent random ... --summary-json OUT.json``)

Every peer measurement: warm up (which also calibrates how many calls make one
repetition), then time a fixed number of steps with ``time.perf_counter``,
repeat ``--reps`` times (default 3) and take the median. rollway: each config is
run ``--reps`` times as a fresh process; both the in-process ``steps_per_sec``
from the summary JSON and the whole-process rate (``steps`` / wall time of the
subprocess, including process start, env construction and teardown) are reported.

"Steps" means env transitions summed over all environments (one vector step of
N envs = N steps). Auto-reset steps are counted the way each library counts them
(Gymnasium's default next-step autoreset and EnvPool both spend one step slot on
the reset after an episode ends; with random actions CartPole episodes last ~22
steps, so that is ~4% of slots).

Progress goes to stderr; the markdown report goes to stdout (and to ``--out``).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchlib, from any cwd
from benchlib import (ENV_ID, RollwayError, common_parser, fmt_rate, fmt_ratio,  # noqa: E402
                      fmt_spread, load_summary, log, machine_note, md_table, module_versions,
                      parse_list, resolve_binary, run_proc, write_report)


# --------------------------------------------------------------------------- results


@dataclass
class Result:
    peer: str  # e.g. "EnvPool (async)"
    config: str  # e.g. "N=256 B=128 T=2"
    rates: list[float]  # steps/s of each repetition
    steps_per_rep: int
    extra: dict = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def spread(self) -> str:
        return fmt_spread(self.rates)


# --------------------------------------------------------------------------- timing core


def measure(run: Callable[[int], None], steps_per_call: int, warm_s: float, rep_s: float,
            reps: int) -> tuple[list[float], int]:
    """Warm up for ~warm_s (calibrating the call rate), then time `reps` repetitions
    of the same fixed number of calls (sized to last ~rep_s each).

    `run(k)` must perform k calls in a tight loop; each call steps `steps_per_call`
    env transitions. Returns (steps/s per repetition, steps per repetition)."""
    # Warm-up in geometrically growing chunks so slow peers don't overshoot.
    k, done, t0 = 1, 0, time.perf_counter()
    while True:
        run(k)
        done += k
        el = time.perf_counter() - t0
        if el >= warm_s:
            break
        k = min(k * 2, max(1, done))
    calls = max(5, int(done / el * rep_s))
    rates = []
    for _ in range(reps):
        t = time.perf_counter()
        run(calls)
        dt = time.perf_counter() - t
        rates.append(calls * steps_per_call / dt)
    return rates, calls * steps_per_call


# --------------------------------------------------------------------------- gymnasium


def bench_gym(mode: str, n: int, a) -> Result:
    import gymnasium as gym

    envs = gym.make_vec(ENV_ID, num_envs=n, vectorization_mode=mode)
    try:
        envs.reset(seed=0)
        envs.action_space.seed(0)
        step = envs.step
        sample = envs.action_space.sample

        def run(k: int) -> None:
            for _ in range(k):
                step(sample())

        rates, spr = measure(run, n, a.warm_s, a.rep_s, a.reps)
    finally:
        envs.close()
    label = {
        "sync": "Gymnasium SyncVectorEnv",
        "async": "Gymnasium AsyncVectorEnv",
        "vector_entry_point": "Gymnasium CartPoleVectorEnv (numpy)",
    }[mode]
    return Result(label, f"N={n}", rates, spr)


# --------------------------------------------------------------------------- envpool


ACTION_BLOCK = 256  # actions are drawn from the numpy RNG this many batches at a time


def bench_envpool(n: int, b: int, t: int, a) -> Result:
    import numpy as np
    import envpool

    env = envpool.make(ENV_ID, env_type="gymnasium", num_envs=n, batch_size=b,
                       num_threads=t, seed=0)
    rng = np.random.default_rng(0)
    st = {"block": rng.integers(0, 2, size=(ACTION_BLOCK, b), dtype=np.int32), "i": 0}
    if b == n:
        env.reset()
        step = env.step

        def run(k: int) -> None:
            block, i = st["block"], st["i"]
            for _ in range(k):
                if i == ACTION_BLOCK:
                    block = rng.integers(0, 2, size=(ACTION_BLOCK, b), dtype=np.int32)
                    i = 0
                step(block[i])
                i += 1
            st["block"], st["i"] = block, i

        peer = "EnvPool (sync)"
    else:
        env.async_reset()
        send, recv = env.send, env.recv
        st["env_id"] = recv()[4]["env_id"]

        def run(k: int) -> None:
            block, i, env_id = st["block"], st["i"], st["env_id"]
            for _ in range(k):
                if i == ACTION_BLOCK:
                    block = rng.integers(0, 2, size=(ACTION_BLOCK, b), dtype=np.int32)
                    i = 0
                send(block[i], env_id)
                env_id = recv()[4]["env_id"]
                i += 1
            st["block"], st["i"], st["env_id"] = block, i, env_id

        peer = "EnvPool (async)"
    try:
        rates, spr = measure(run, b, a.warm_s, a.rep_s, a.reps)
    finally:
        if hasattr(env, "close"):
            try:
                env.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
        del env
    return Result(peer, f"N={n} B={b} T={t}", rates, spr)


# --------------------------------------------------------------------------- rollway


def rollway_cmd(binary: str, w: int, e: int, steps: int, mode: str, out_json: str) -> list[str]:
    return [binary, "run", "--env", ENV_ID, "--agent", "random",
            "--workers", str(w), "--envs-per-worker", str(e), "--steps", str(steps),
            "--mode", mode, "--seed", "0", "--summary-json", out_json]


def rollway_once(binary: str, w: int, e: int, steps: int, mode: str,
                 timeout: float) -> tuple[dict, float]:
    """Run rollway once; return (summary JSON, whole-process wall seconds)."""
    with tempfile.TemporaryDirectory(prefix="rollway-bench-") as d:
        out_json = os.path.join(d, "summary.json")
        cmd = rollway_cmd(binary, w, e, steps, mode, out_json)
        wall = run_proc(cmd, timeout)
        summary = load_summary(out_json, cmd, ("steps", "seconds", "steps_per_sec"))
    return summary, wall


def rollway_steps_for(binary: str, w: int, e: int, mode: str, a) -> int:
    """S for one config: fixed via --rollway-steps, or sized from a short pilot run of
    that config so one timed run lasts ~--rollway-s seconds."""
    if a.rollway_steps:
        return a.rollway_steps
    summary, _ = rollway_once(binary, w, e, a.rollway_pilot_steps, mode, timeout=a.rollway_timeout)
    rate = float(summary["steps_per_sec"])
    steps = int(round(rate * a.rollway_s / 1e6)) * 1_000_000
    return max(1_000_000, min(steps, a.rollway_max_steps))


def bench_rollway(binary: str, configs: list[tuple[int, int, str]], a) -> list[Result]:
    results = []
    for w, e, mode in configs:
        cfg = f"W={w} E={e} {mode}"
        inproc, whole, walls, secs, nsteps = [], [], [], [], []
        try:
            steps = rollway_steps_for(binary, w, e, mode, a)
            for _ in range(a.reps):
                s, wall = rollway_once(binary, w, e, steps, mode, timeout=a.rollway_timeout)
                inproc.append(float(s["steps_per_sec"]))
                whole.append(int(s["steps"]) / wall)
                walls.append(wall)
                secs.append(float(s["seconds"]))
                nsteps.append(int(s["steps"]))
        except RollwayError as exc:
            log(f"  rollway {cfg}: FAILED, skipping config: {exc}")
            continue
        r = Result("rollway", cfg, inproc, nsteps[0], extra={
            "whole_rates": whole, "walls": walls, "seconds": secs,
            "overhead": statistics.median(wl - sc for wl, sc in zip(walls, secs)),
        })
        results.append(r)
        log(f"  rollway {cfg}: {fmt_rate(r.median)} steps/s in-process, "
            f"{fmt_rate(statistics.median(whole))} steps/s whole-process "
            f"(S={steps:,}, {fmt_spread(inproc)}, "
            f"overhead {r.extra['overhead'] * 1000:.0f} ms)")
    return results


# --------------------------------------------------------------------------- machine note


def cartpole_machine_note(binary: Optional[str], load_start: tuple, load_end: tuple) -> list[str]:
    vers = module_versions(("gymnasium", "envpool", "numpy"))
    return machine_note(binary, load_start, load_end,
                        packages=f"gymnasium {vers['gymnasium']}; envpool {vers['envpool']}; "
                                 f"numpy {vers['numpy']}")


# --------------------------------------------------------------------------- report


def render_summary(results: list[Result], rw: list[Result]) -> list[str]:
    """The best config of each peer against rollway's best, in-process and whole-process."""
    best_rw = max(rw, key=lambda r: r.median) if rw else None
    best_rw_rate = best_rw.median if best_rw else None
    best_rw_whole = max((statistics.median(r.extra["whole_rates"]) for r in rw), default=None)

    def best_of(pred) -> Optional[Result]:
        c = [r for r in results if pred(r)]
        return max(c, key=lambda r: r.median) if c else None

    if best_rw:
        rows = [[f"**rollway best** ({best_rw.config}), in-process", f"**{fmt_rate(best_rw_rate)}**",
                 "1.00×", "—"],
                ["rollway best, whole-process (incl. process start)", fmt_rate(best_rw_whole), "—", "1.00×"]]
    else:
        rows = [["rollway", "skipped (binary not found or all runs failed)", "n/a", "n/a"]]
    for name, r in (("EnvPool best", best_of(lambda r: r.peer.startswith("EnvPool"))),
                    ("Gymnasium SyncVectorEnv best", best_of(lambda r: r.peer == "Gymnasium SyncVectorEnv")),
                    ("Gymnasium AsyncVectorEnv best", best_of(lambda r: r.peer == "Gymnasium AsyncVectorEnv")),
                    ("Gymnasium CartPoleVectorEnv (numpy) best",
                     best_of(lambda r: r.peer.startswith("Gymnasium CartPoleVectorEnv")))):
        if r:
            mode = r.peer.split("(")[-1].rstrip(")") + ", " if name.startswith("EnvPool") else ""
            rows.append([f"{name} ({mode}{r.config})", fmt_rate(r.median),
                         fmt_ratio(best_rw_rate, r.median), fmt_ratio(best_rw_whole, r.median)])
    return ["### Summary", "",
            *md_table(["", "steps/s", "rollway best / this (in-process)", "rollway best / this (whole-process)"],
                      rows, "-rrr"),
            ""]


def render_all(results: list[Result], rw: list[Result]) -> list[str]:
    """Every config of every peer, with rollway's best over it."""
    best_rw_rate = max(r.median for r in rw) if rw else None
    rows = [[r.peer, r.config, fmt_rate(r.median), r.spread, fmt_ratio(best_rw_rate, r.median)]
            for r in results + rw]
    return ["### All configurations", "",
            *md_table(["peer", "config", "steps/s (median)", "min – max", "rollway best / this"], rows, "--rrr"),
            "",
            "N = num_envs, B = EnvPool batch_size, T = EnvPool num_threads; "
            "W = rollway workers, E = envs per worker.",
            ""]


def render_rollway(rw: list[Result]) -> list[str]:
    """rollway's own rate next to the rate of its whole process, per config."""
    if not rw:
        return []
    rows = [[r.config, f"{r.steps_per_rep:,}", fmt_rate(r.median),
             fmt_rate(statistics.median(r.extra["whole_rates"])), f"{r.extra['overhead'] * 1000:.0f} ms"]
            for r in rw]
    return ["### rollway: in-process vs whole-process", "",
            *md_table(["config", "steps per run", "in-process steps/s (median)",
                       "whole-process steps/s (median)", "wall − `seconds` (median)"], rows, "-rrrr"),
            "", "In-process = the summary JSON's `steps_per_sec` (`steps` / `seconds`, as measured "
            "by rollway itself); whole-process = `steps` / wall time of the subprocess as seen "
            "by this script (includes process start, env construction and writing the summary).", ""]


def render(results: list[Result], rw: list[Result], note: list[str], a, elapsed: float) -> str:
    L = [f"## CartPole-v1 random-action stepping throughput{' (quick run)' if a.quick else ''}", ""]
    L += note
    L += [f"- Method: median of {a.reps} timed repetitions per config (peers: after warm-up, "
          f"~{a.rep_s:g}s per repetition, `time.perf_counter`; rollway: {a.reps} fresh processes "
          f"per config, " + (f"S={a.rollway_steps:,} steps each" if a.rollway_steps else
                             f"S sized per config from a pilot run to last ~{a.rollway_s:g}s") + "). Steps = env transitions summed over all envs. Script wall time "
          f"{elapsed:.0f}s.", ""]
    L += render_summary(results, rw)
    L += render_all(results, rw)
    L += render_rollway(rw)
    return "\n".join(L)


# --------------------------------------------------------------------------- main


def parse_args(argv: Optional[list[str]]):
    """The command line, with the defaults that depend on --quick filled in."""
    p = common_parser(__doc__, quick_help="fewer configs and shorter repetitions (~1 min)",
                      reps_help="timed repetitions per config (median is reported)")
    p.add_argument("--skip", default="", help="comma list of peers to skip: gym-sync,gym-async,gym-numpy,envpool,rollway")
    p.add_argument("--gym-sync-n", type=parse_list, help="N values for Gymnasium SyncVectorEnv")
    p.add_argument("--gym-async-n", type=parse_list, help="N values for Gymnasium AsyncVectorEnv")
    p.add_argument("--gym-numpy-n", type=parse_list, help="N values for Gymnasium's numpy CartPoleVectorEnv")
    p.add_argument("--envpool-n", type=parse_list, help="num_envs values for EnvPool")
    p.add_argument("--envpool-t", type=parse_list, help="num_threads values for EnvPool")
    p.add_argument("--rollway-workers", type=parse_list, help="W values for rollway")
    p.add_argument("--rollway-envs", type=parse_list, help="E (envs per worker) values for rollway")
    p.add_argument("--rollway-modes", type=lambda s: parse_list(s, str), help="rollway modes (sync,async)")
    p.add_argument("--rollway-steps", type=int, default=0,
                   help="fixed S per rollway run (0 = size S per config from a short pilot run "
                        "so one run lasts ~--rollway-s)")
    p.add_argument("--rollway-s", type=float, help="target seconds per rollway run when S is automatic")
    p.add_argument("--rollway-pilot-steps", type=int, default=2_000_000)
    p.add_argument("--rollway-max-steps", type=int, default=1_000_000_000)
    p.add_argument("--rollway-timeout", type=float, default=120.0, help="seconds before a rollway run is killed")
    a = p.parse_args(argv)

    q = a.quick
    defaults = {
        "gym_sync_n": [8, 64] if q else [8, 64, 256],
        "gym_async_n": [2, 8],
        "gym_numpy_n": [256, 4096] if q else [64, 256, 1024, 4096],
        "envpool_n": [64, 1024] if q else [16, 64, 256, 1024],
        "envpool_t": [1, 2],
        "rollway_workers": [2] if q else [1, 2],
        "rollway_envs": [1024, 4096] if q else [64, 256, 1024, 4096],
        "rollway_modes": ["sync", "async"],
        "rollway_s": 1.0 if q else 3.0,
    }
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.warm_s = 0.15 if q else 0.5
    a.rep_s = 0.3 if q else 1.0
    if q:
        a.rollway_pilot_steps = min(a.rollway_pilot_steps, 1_000_000)
    return a


def unavailable_peers() -> set[str]:
    """The Python peers whose package does not import (logged)."""
    skip = set()
    try:
        import gymnasium as gym
        gym.logger.min_level = 40  # errors only
    except ImportError:
        log("gymnasium not installed; skipping Gymnasium peers")
        skip |= {"gym-sync", "gym-async", "gym-numpy"}
    try:
        import envpool  # noqa: F401
    except ImportError as exc:
        log(f"envpool not importable ({exc}); skipping EnvPool")
        skip.add("envpool")
    return skip


def run_python_peers(a, skip: set[str]) -> list[Result]:
    """Every config of the Gymnasium and EnvPool peers not in `skip`; a failed config is
    logged and left out."""
    results: list[Result] = []

    def record(fn, *args):
        try:
            r = fn(*args)
        except Exception as exc:  # noqa: BLE001 - report and keep going
            log(f"  FAILED {fn.__name__}{args[:-1]}: {exc!r}")
            return
        results.append(r)
        log(f"  {r.peer:38s} {r.config:18s} {fmt_rate(r.median):>8s} steps/s  "
            f"({r.spread}, {r.steps_per_rep:,} steps/rep)")

    if "gym-sync" not in skip:
        log("Gymnasium SyncVectorEnv")
        for n in a.gym_sync_n:
            record(bench_gym, "sync", n, a)
    if "gym-async" not in skip:
        log("Gymnasium AsyncVectorEnv")
        for n in a.gym_async_n:
            record(bench_gym, "async", n, a)
    if "gym-numpy" not in skip:
        log("Gymnasium CartPoleVectorEnv (numpy-vectorised)")
        for n in a.gym_numpy_n:
            record(bench_gym, "vector_entry_point", n, a)
    if "envpool" not in skip:
        log("EnvPool")
        for n in a.envpool_n:
            for t in a.envpool_t:
                record(bench_envpool, n, n, t, a)  # sync: batch_size == num_envs
                if n >= 2:
                    record(bench_envpool, n, n // 2, t, a)  # async: batch_size = num_envs / 2
    return results


def run_rollway(a, skip: set[str]) -> tuple[Optional[str], list[Result]]:
    """(the binary, or None when skipped or missing; its results, one per config)."""
    if "rollway" in skip:
        return None, []
    binary = resolve_binary(a.rollway)
    if binary is None:
        log(f"rollway binary not found at {a.rollway!r}; skipping rollway "
            f"(build it with `cargo build --release` and pass --rollway PATH)")
        return None, []
    log(f"rollway ({binary})")
    configs = [(w, e, m) for w in a.rollway_workers for e in a.rollway_envs
               for m in a.rollway_modes]
    return binary, bench_rollway(binary, configs, a)


def main(argv: Optional[list[str]] = None) -> int:
    a = parse_args(argv)
    skip = set(parse_list(a.skip, str))
    warnings.filterwarnings("ignore")
    skip |= unavailable_peers()

    load_start = os.getloadavg()
    t_start = time.perf_counter()
    results = run_python_peers(a, skip)
    binary, rw = run_rollway(a, skip)
    elapsed = time.perf_counter() - t_start
    note = cartpole_machine_note(binary, load_start, os.getloadavg())
    write_report(render(results, rw, note, a, elapsed) + "\n", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
