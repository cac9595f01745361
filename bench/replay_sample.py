#!/usr/bin/env python3
"""Is a replay buffer that is a dataset fast enough for an off-policy learner (issue 32)?

Side by side, on the same CartPole transitions: sampling a DQN batch (128 transitions)
from ``rollway.Loader(follow=True)`` over a dataset that ``rollway.Rollout(out=...)``
recorded (two-step windows, 50k steps of capacity, a new round every ``round_windows``
windows, each round reading the new commits), against an in-memory numpy ring buffer
sampled as Stable-Baselines3's ``ReplayBuffer.sample`` does (CleanRL's DQN): random
indices, then one fancy-index gather per field. Both sides are timed per batch over
``--batches`` batches, repetitions alternating; medians reported.

Then, when torch is installed, ``rollway.examples.dqn_cartpole`` end to end: the share of
its wall time spent sampling the replay, next to the share in the TD updates.

Progress goes to stderr; the markdown report to stdout (and to --out).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import numpy as np

from benchlib import common_parser, log, machine_note, md_table, resolve_binary, write_report

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 128


def fill(out: str, steps: int) -> dict:
    """Records ``steps`` random CartPole steps into ``out`` and keeps the same transitions
    in numpy arrays, as a ring buffer would hold them."""
    import rollway

    obs, nxt, act, rew, done = [], [], [], [], []
    with rollway.Rollout("CartPole-v1", "random", num_envs=8, steps_per_fragment=128, seed=1, out=out, commit_every=0.05) as r:
        for _ in range(steps // (8 * 128)):
            f = r.collect()
            # The next observation of a step that ended an episode is the reset one here:
            # a timing fixture, not a learner's data.
            obs.append(f.obs[:-1].reshape(-1, 4))
            nxt.append(f.obs[1:].reshape(-1, 4))
            act.append(f.actions.reshape(-1))
            rew.append(f.rewards.reshape(-1))
            done.append(f.terminated.reshape(-1))
    return {k: np.concatenate(v) for k, v in (("obs", obs), ("next_obs", nxt), ("actions", act), ("rewards", rew), ("dones", done))}


def ring_sample(buf: dict, capacity: int, batches: int, rng: np.random.Generator) -> float:
    """Seconds per batch, sampled as SB3's ReplayBuffer.sample does."""
    size = min(capacity, len(buf["obs"]))
    fields = [buf[k][-size:] for k in ("obs", "next_obs", "actions", "rewards", "dones")]
    t0 = time.perf_counter()
    for _ in range(batches):
        idx = rng.integers(0, size, BATCH)
        _ = [f[idx] for f in fields]
    return (time.perf_counter() - t0) / batches


def rollway_sample(out: str, capacity: int, round_windows: int, batches: int, seed: int) -> float:
    import rollway

    loader = rollway.Loader(out, clip=2, stride=1, pad=True, batch=BATCH, seed=seed, follow=True, last_steps=capacity,
                            round_windows=round_windows)
    t0 = time.perf_counter()
    for _ in range(batches):
        b = loader.next_batch()
        assert b is not None
    return (time.perf_counter() - t0) / batches


def dqn_split(steps: int, seed: int) -> dict | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    from rollway.examples import dqn_cartpole

    with tempfile.TemporaryDirectory() as tmp:
        return dqn_cartpole.train(os.path.join(tmp, "replay"), total_steps=steps, seed=seed, log=False)


def main() -> None:
    p = common_parser(__doc__, quick_help="fewer steps and batches", reps_help="repetitions of each sampler (alternating)")
    p.add_argument("--steps", type=int, default=100_000, help="random steps recorded into the replay")
    p.add_argument("--capacity", type=int, default=50_000, help="transitions sampled from (the newest)")
    p.add_argument("--batches", type=int, default=2_000, help="batches timed per repetition")
    p.add_argument("--dqn-steps", type=int, default=50_000, help="env steps of the DQN run (0: skip it)")
    a = p.parse_args()
    steps, batches = (20_000, 300) if a.quick else (a.steps, a.batches)
    load0 = os.getloadavg()
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "replay")
        log(f"recording {steps} steps")
        buf = fill(out, steps)
        shards = len(os.listdir(os.path.join(out, "index")))
        times: dict[str, list[float]] = {"ring": [], "rw2048": [], "rw16384": []}
        for r in range(a.reps):
            times["ring"].append(ring_sample(buf, a.capacity, batches, np.random.default_rng(r)))
            times["rw2048"].append(rollway_sample(out, a.capacity, 2048, batches, r))
            times["rw16384"].append(rollway_sample(out, a.capacity, 16384, batches, r))
            log(f"rep {r + 1}: " + ", ".join(f"{k} {v[-1] * 1e6:.1f} µs" for k, v in times.items()))
    ring = statistics.median(times["ring"])
    labels = {"ring": "numpy ring buffer, SB3's `ReplayBuffer.sample` (in memory)",
              "rw2048": "`rollway.Loader(follow=True)`, a round every 2048 windows (16 batches)",
              "rw16384": "`rollway.Loader(follow=True)`, a round every 16384 windows (128 batches)"}
    for k, v in times.items():
        med = statistics.median(v)
        rows.append([labels[k], f"{med * 1e6:.1f}", f"{min(v) * 1e6:.1f} – {max(v) * 1e6:.1f}", f"{med / ring:.2f}"])
    if a.dqn_steps:
        log(f"DQN, {a.dqn_steps} steps")
        d = dqn_split(a.dqn_steps, 1)
        if d is not None:
            notes.append(f"`rollway.examples.dqn_cartpole`, {d['steps']} steps, seed 1: {d['wall_s']:.1f} s wall, "
                         f"{d['updates']} TD updates; sampling the replay {d['sample_s']:.2f} s "
                         f"({100 * d['sample_s'] / d['wall_s']:.0f}% of wall, {d['sample_s'] / max(d['updates'], 1) * 1e6:.0f} µs a batch), "
                         f"the updates {d['learn_s']:.2f} s ({100 * d['learn_s'] / d['wall_s']:.0f}%); "
                         f"mean return at the end {d['mean_return']:.0f} (best {d['best_mean_return']:.0f}).")
    lines = [
        f"### Sampling a DQN batch ({BATCH} transitions): `bench/replay_sample.py --reps {a.reps}` "
        f"({steps} random steps recorded in {shards} shards, the newest {a.capacity} sampled)",
        "",
        *machine_note(resolve_binary(a.rollway), load0, os.getloadavg(), packages=f"numpy {np.__version__}; the rollway package from this checkout"),
        "",
        *md_table(["sampler", "µs a batch (median)", "spread", "× ring buffer"], rows),
        "",
        *notes,
        "",
    ]
    write_report("\n".join(lines), a.out)


if __name__ == "__main__":
    main()
