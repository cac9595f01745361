#!/usr/bin/env python3
"""Issue 12: envs and policies written in Python, run by rollway, against the peers
a user would otherwise use, side by side in one run (reps taken in turn).

* CartPole (``gymnasium.make("CartPole-v1")``, random actions) at N envs: rollway
  hosting it (``env="gym:CartPole-v1"``, 2 workers = 2 env processes, sync mode;
  and async mode, two processes per worker) vs Gymnasium ``SyncVectorEnv`` and
  ``AsyncVectorEnv(shared_memory=True)``. rollway's figure is steady state: the
  difference of two runs' times (``steps`` and ``3 × steps``), leaving out the
  start of its env processes as the peers' clocks leave out making their envs. Also: rollway with one worker vs the bare env
  loop (the same N envs stepped in one Python loop, seeded resets as rollway does
  them), whose difference is what hosting adds per env step.
* A pixel env written in Python (bench/pixel_env.py, 128×128×3 uint8) recorded as
  H.264 video: rollway (``image_media="h264"``) vs ``AsyncVectorEnv`` + PyAV
  (libx264, one MP4 per episode, as MineStudio's recorder does); episodes/s.
* A torch MLP policy (CPU) on 256 built-in CartPole envs, sync mode, with 1 worker
  (the central thread steps the envs and calls the policy in turn) and with 2 (worker
  1's thread steps its half alongside the central thread's): policy calls per second
  and the share of wall time outside the policy: the run's wall time less the time
  spent inside the callable handed to rollway (the user's whole policy function, its
  ``torch.no_grad`` wrapper included). ``--policy-only`` runs just these rows.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = HERE + os.pathsep + os.environ.get("PYTHONPATH", "")
from benchlib import log, machine_note, md_table, module_versions, write_report  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import rollway  # noqa: E402


def vec_rate(kind: str, n: int, seconds: float) -> float:
    fns = [lambda: gym.make("CartPole-v1")] * n
    v = gym.vector.SyncVectorEnv(fns) if kind == "sync" else gym.vector.AsyncVectorEnv(fns, shared_memory=True)
    try:
        v.reset(seed=0)
        rng = np.random.default_rng(0)
        steps, t = 0, time.perf_counter()
        while time.perf_counter() - t < seconds:
            v.step(rng.integers(0, 2, n))
            steps += n
        return steps / (time.perf_counter() - t)
    finally:
        v.close()


def bare_loop_us(n: int, steps: int) -> float:
    envs = [gym.make("CartPole-v1") for _ in range(n)]
    seed = 1 << 40
    for e in envs:
        seed += 1
        e.reset(seed=seed)
    rng = np.random.default_rng(0)
    done, t = 0, time.perf_counter()
    while done < steps:
        acts = rng.integers(0, 2, n)
        for i, e in enumerate(envs):
            _, _, term, trunc, _ = e.step(int(acts[i]))
            if term or trunc:
                seed += 1
                e.reset(seed=seed)
        done += n
    return (time.perf_counter() - t) / done * 1e6


def rollway_rate(n: int, steps: int, workers: int = 2, mode: str = "sync") -> float:
    """Steady-state steps/s: two runs of `steps` and `3 * steps`, the difference of
    their run times, so that starting the env processes (Python, imports, first
    envs: a second or so, paid once per run) is left out, as the peers' setup is."""
    def seconds(k: int) -> float:
        # host="process": this row measures env processes (bench/run_host_choice.py compares the hosts).
        s = rollway.run(env="gym:CartPole-v1", agent="random", workers=workers, envs_per_worker=n // workers, mode=mode,
                        steps=k, record=False, progress=False, host="process")
        return float(s.seconds)

    short, long = seconds(steps), seconds(3 * steps)
    return 2 * steps / max(long - short, 1e-9)


def pixel_rollway(episodes: int, length: int) -> float:
    out = tempfile.mkdtemp(prefix="bench-pixels-")
    try:
        t = time.perf_counter()
        rollway.run(env="pixel_env:make", env_params={"length": length}, agent="random", workers=2, envs_per_worker=4,
                    episodes=episodes, image_media="h264", out=os.path.join(out, "ds"), progress=False)
        return episodes / (time.perf_counter() - t)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def pixel_peer(episodes: int, length: int) -> float:
    import pixel_env
    from video_encode import pyav_write

    out = tempfile.mkdtemp(prefix="bench-pyav-")
    v = gym.vector.AsyncVectorEnv([lambda: pixel_env.make(length)] * 8, shared_memory=True)
    try:
        t = time.perf_counter()
        obs, _ = v.reset(seed=0)
        frames: List[List[np.ndarray]] = [[o.copy()] for o in obs]
        rng, done, fresh = np.random.default_rng(0), 0, np.zeros(8, bool)
        while done < episodes:
            obs, _, term, trunc, _ = v.step(rng.integers(0, 4, 8))
            for i in range(8):
                if fresh[i]:  # autoreset step: this is the next episode's first frame
                    frames[i] = [obs[i].copy()]
                    continue
                frames[i].append(obs[i].copy())
                if term[i] or trunc[i]:
                    pyav_write(os.path.join(out, f"ep{done}.mp4"), frames[i], rate=20)
                    done += 1
            fresh = term | trunc
        return episodes / (time.perf_counter() - t)
    finally:
        v.close()
        shutil.rmtree(out, ignore_errors=True)


def policy_run(steps: int, workers: int) -> Dict[str, float]:
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    inside = [0.0, 0]

    @torch.no_grad()
    def policy(obs, first, state):
        return model(torch.from_numpy(obs)).argmax(-1).numpy()

    # The clock goes around the user's whole callable, decorator included: what rollway
    # does outside it is what the bar is about (the decorator costs ~5 µs a call).
    def timed(obs, first, state):
        t = time.perf_counter()
        a = policy(obs, first, state)
        inside[0] += time.perf_counter() - t
        inside[1] += 1
        return a

    t = time.perf_counter()
    rollway.run(env="CartPole-v1", agent=timed, workers=workers, envs_per_worker=256 // workers, mode="sync", steps=steps, record=False, progress=False)
    wall = time.perf_counter() - t
    return {"calls": inside[1] / wall, "outside": 1 - inside[0] / wall}


def cartpole_row(n: int, m: Dict[str, float]) -> List[object]:
    """One N's medians: rates, ratios and the µs per step that hosting adds."""
    us1 = 1e6 / m["rw1"]
    return [n, f"{m['rw']:,.0f}", f"{m['rw_async']:,.0f}", f"{m['sync']:,.0f}", f"{m['async']:,.0f}",
            f"{m['rw'] / m['sync']:.2f}×", f"{m['rw_async'] / m['sync']:.2f}×", f"{m['rw'] / m['async']:.1f}×",
            f"{us1:.2f}", f"{m['bare']:.2f}", f"{us1 - m['bare']:.2f}"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ns", default="8,64,256", help="env counts (default 8,64,256)")
    p.add_argument("--seconds", type=float, default=3.0, help="seconds per peer measurement")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--pixel-episodes", type=int, default=32)
    p.add_argument("--pixel-length", type=int, default=100)
    p.add_argument("--policy-steps", type=int, default=2_000_000, help="env steps per policy run (~1.5 s)")
    p.add_argument("--policy-only", action="store_true", help="run the torch policy rows only")
    p.add_argument("--out", help="also write the report here")
    a = p.parse_args()
    os.environ.setdefault("ROLLWAY_PYTHON", sys.executable)
    load0 = os.getloadavg()
    ns = [int(x) for x in a.ns.split(",")]
    rows = []
    for n in [] if a.policy_only else ns:
        r: Dict[str, List[float]] = {k: [] for k in ("sync", "async", "rw", "rw_async", "rw1", "bare")}
        steps = max(50_000, int(20_000 * a.seconds))
        for i in range(a.reps):
            log(f"cartpole N={n} rep {i + 1}/{a.reps}")
            r["rw"].append(rollway_rate(n, steps))
            r["rw_async"].append(rollway_rate(n, steps, mode="async") if n >= 4 else float("nan"))
            r["sync"].append(vec_rate("sync", n, a.seconds))
            r["async"].append(vec_rate("async", n, a.seconds))
            r["rw1"].append(rollway_rate(n, steps // 2, workers=1))
            r["bare"].append(bare_loop_us(n, steps // 4))
        rows.append((n, {k: statistics.median(v) for k, v in r.items()}))
    pix = {"rw": [], "peer": []}
    for i in range(0 if a.policy_only else a.reps):
        log(f"pixels rep {i + 1}/{a.reps}")
        pix["rw"].append(pixel_rollway(a.pixel_episodes, a.pixel_length))
        pix["peer"].append(pixel_peer(a.pixel_episodes, a.pixel_length))
    # Sync runs step worker 0's envs on the central thread: 1 worker is one thread that
    # steps and calls the policy in turn; 2 workers are two threads on two cores (the
    # second worker's steps alongside), which poll for each other's messages.
    pol: Dict[int, List[Dict[str, float]]] = {1: [], 2: []}
    for i in range(a.reps):
        log(f"policy rep {i + 1}/{a.reps}")
        for w in pol:
            pol[w].append(policy_run(a.policy_steps, w))
    lines = ["# Python envs and policies (issue 12)", ""]
    lines += machine_note(None, load0, os.getloadavg(), packages=", ".join(f"{k} {v}" for k, v in module_versions(["gymnasium", "numpy", "torch", "av"]).items()))
    lines += ["", f"CartPole-v1, random actions, steps/s (medians of {a.reps}):", "",
              *md_table(["N", "rollway 2 workers sync", "rollway 2 workers async", "SyncVectorEnv", "AsyncVectorEnv (shm)",
                         "sync/SyncVec", "async/SyncVec", "sync/AsyncVec", "µs/step hosted (1 worker)", "µs/step bare loop",
                         "added µs/step"], [cartpole_row(n, m) for n, m in rows])]
    pr, pp = (statistics.median(pix[k]) if pix[k] else float("nan") for k in ("rw", "peer"))
    lines += ["", f"Pixel env (128×128×3, {a.pixel_length} steps, 8 envs), H.264: rollway {pr:.2f} episodes/s, "
              f"AsyncVectorEnv + PyAV {pp:.2f} episodes/s: {pr / pp:.2f}×", ""]
    for w, runs in pol.items():
        calls = statistics.median([x["calls"] for x in runs])
        outside = statistics.median([x["outside"] for x in runs])
        each = ", ".join(f"{x['outside']:.1%}" for x in runs)
        lines += [f"torch MLP policy on 256 CartPole envs (sync, {w} worker{'s' if w > 1 else ''}): {calls:,.0f} policy calls/s, "
                  f"{outside:.1%} of wall time outside the policy ({each})", ""]
    write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
