"""The load bench's Python peers (bench/load_throughput.py): TorchRL's replay buffer with a
``SliceSampler`` and Minari's own episode sampling, each gathering the same shuffled windows
as rollway's loader; and the ``Result`` every system of that bench reports in."""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from benchlib import fmt_rate, log, minari_random


def med(xs: list[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


@dataclass
class Result:
    system: str
    key: str  # rollway, numpy, torchrl, minari
    rates: list[float] = field(default_factory=list)  # windows/s per repetition
    windows: list[int] = field(default_factory=list)  # windows per repetition
    seconds: list[float] = field(default_factory=list)
    error: Optional[str] = None  # failed / skipped: why
    extra: dict = field(default_factory=dict)

    @property
    def rate(self) -> Optional[float]:
        return med(self.rates)


# --------------------------------------------------------------------------- TorchRL


def bench_torchrl(d: Any, n_windows: int, a) -> Result:
    res = Result("TorchRL `ReplayBuffer` + `SliceSampler` (`rb.sample()`)", "torchrl")
    try:
        import numpy as np
        import torch
        from tensordict import TensorDict
        from torchrl.data import LazyTensorStorage, ReplayBuffer
        from torchrl.data.replay_buffers.samplers import SliceSampler
    except Exception as exc:  # noqa: BLE001
        res.error = (f"not importable ({type(exc).__name__}: {exc}); "
                     "pip install -r bench/requirements-torch.txt")
        return res
    import logging
    logging.getLogger("torchrl").setLevel(logging.WARNING)
    torch.manual_seed(a.seed)
    if a.torch_threads:
        torch.set_num_threads(a.torch_threads)
    # Transitions only (drop each episode's last, action-less row): T rows per episode.
    keep = np.ones(d.rows, dtype=bool)
    keep[d.ep_start + d.ep_len] = False
    n = int(keep.sum())
    t = time.perf_counter()
    td = TensorDict({
        "observation": torch.from_numpy(np.ascontiguousarray(d.obs[keep])),
        "action": torch.from_numpy(np.ascontiguousarray(d.actions[keep])),
        "reward": torch.from_numpy(np.ascontiguousarray(d.rewards[keep])),
        "terminated": torch.from_numpy(np.ascontiguousarray(d.terminations[keep])),
        "truncated": torch.from_numpy(np.ascontiguousarray(d.truncations[keep])),
        "episode": torch.from_numpy(np.ascontiguousarray(d.episode_id[keep])),
    }, batch_size=[n])
    rb = ReplayBuffer(storage=LazyTensorStorage(n),
                      sampler=SliceSampler(slice_len=a.clip, traj_key="episode",
                                           cache_values=True, strict_length=True),
                      batch_size=a.batch * a.clip)
    rb.extend(td)
    res.extra["fill_s"] = time.perf_counter() - t
    res.extra["transitions"] = n
    res.extra["torch_threads"] = torch.get_num_threads()
    n_batches = -(-n_windows // a.batch)
    try:
        s = rb.sample()  # warm-up (builds the trajectory cache)
        if s.batch_size[0] != a.batch * a.clip:
            raise RuntimeError(f"sample batch {tuple(s.batch_size)}, expected {a.batch * a.clip}")
        ep = s["episode"].view(a.batch, a.clip)
        if not bool((ep == ep[:, :1]).all()):
            raise RuntimeError("a sampled slice crosses an episode boundary")
        for _ in range(min(20, n_batches)):
            rb.sample()
        for i in range(a.reps):
            t = time.perf_counter()
            done = 0
            for _ in range(n_batches):
                s = rb.sample()
                done += 1
                if time.perf_counter() - t > a.torchrl_max_s:
                    break
            secs = time.perf_counter() - t
            w = done * a.batch
            res.rates.append(w / secs)
            res.windows.append(w)
            res.seconds.append(secs)
            log(f"  torchrl rep {i + 1}: {done:,}/{n_batches:,} batches, {w:,} windows in "
                f"{secs:.3f}s = {fmt_rate(w / secs)} windows/s")
    except Exception as exc:  # noqa: BLE001
        res.error = f"{type(exc).__name__}: {exc}"
        log(f"  torchrl: FAILED: {res.error}")
    res.extra["n_batches"] = n_batches
    return res


# --------------------------------------------------------------------------- Minari


def build_minari(steps: int, seed: int, root: str, dataset_id: str) -> tuple[object, float, int]:
    t = time.perf_counter()
    env, ds, episode = minari_random(steps, seed, dataset_id, "hdf5")
    env.close()
    return ds, time.perf_counter() - t, episode


def minari_loop(ds, clip: int, batch: int, budget_s: float, rng, every: bool) -> tuple[int, float, int]:
    """Batches of `batch` windows out of `ds.sample_episodes(batch)` (`every`: 8 episodes per
    call; windows left over carry to the next batch), stacked to
    [batch, clip, …] per field, until `budget_s` is spent. `every=False`: one random window
    per sampled episode with ≥ clip steps (independent windows, like the other loaders);
    `every=True`: every window of each sampled episode (stride 1) — the most windows per
    episode read, but a batch then holds runs of overlapping windows from few episodes.
    Returns (windows, seconds, episodes sampled)."""
    import numpy as np

    # sample_episodes draws without replacement; `every` needs only a few episodes per batch
    n_sample = min(8 if every else batch, int(ds.total_episodes))
    t = time.perf_counter()
    windows = sampled = 0
    pend: list[tuple] = []
    while True:
        while len(pend) < batch:
            for ep in ds.sample_episodes(n_sample):
                sampled += 1
                T = len(ep.actions)
                if T < clip:
                    continue
                starts = range(T - clip + 1) if every else (int(rng.integers(0, T - clip + 1)),)
                for s in starts:
                    pend.append((ep.observations[s:s + clip], ep.actions[s:s + clip],
                                 ep.rewards[s:s + clip], ep.terminations[s:s + clip],
                                 ep.truncations[s:s + clip]))
        chunk, pend = pend[:batch], pend[batch:]
        _b = tuple(np.stack(f) for f in zip(*chunk))
        windows += batch
        elapsed = time.perf_counter() - t
        if elapsed >= budget_s:
            return windows, elapsed, sampled


def bench_minari(a) -> list[Result]:
    res = Result("Minari loop (`sample_episodes(256)`, 1 random window per episode)", "minari")
    res_all = Result("Minari loop, every window of each sampled episode (not shuffled)", "minari-all")
    try:
        import gymnasium as gym
        gym.logger.min_level = 40
        import minari  # noqa: F401
        import jax  # noqa: F401  (DataCollector's episode buffers)
        import numpy as np
    except ImportError as exc:
        res.error = f"not importable ({exc}); pip install -r bench/requirements.txt"
        return [res]
    root = tempfile.mkdtemp(prefix="minari-load-bench-")
    old = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = root
    try:
        log(f"  building Minari hdf5 dataset with DataCollector, {a.minari_steps:,} steps "
            "(~1.5k steps/s on 2 cores)")
        ds, build_s, eps = build_minari(a.minari_steps, a.seed, root, "cartpole/load-bench-v0")
        res.extra.update(build_s=build_s, steps=int(ds.total_steps), episodes=int(ds.total_episodes))
        res_all.extra.update(res.extra)
        log(f"  built: {int(ds.total_steps):,} steps, {int(ds.total_episodes):,} episodes in {build_s:.1f}s")
        import minari
        ds = minari.load_dataset("cartpole/load-bench-v0")
        ds.set_seed(a.seed)
        rng = np.random.default_rng(a.seed)
        minari_loop(ds, a.clip, a.batch, 0.3, rng, False)  # warm-up
        for r, every in ((res, False), (res_all, True)):
            sampled_total = windows_total = 0
            for i in range(a.reps):
                w, secs, sampled = minari_loop(ds, a.clip, a.batch, a.minari_s, rng, every)
                r.rates.append(w / secs)
                r.windows.append(w)
                r.seconds.append(secs)
                sampled_total += sampled
                windows_total += w
                log(f"  minari ({'every' if every else 'one'} window/episode) rep {i + 1}: {w:,} "
                    f"windows ({sampled:,} episodes sampled) in {secs:.2f}s = "
                    f"{fmt_rate(w / secs)} windows/s")
            r.extra["sampled_per_window"] = sampled_total / max(windows_total, 1)
    except Exception as exc:  # noqa: BLE001
        res.error = f"{type(exc).__name__}: {exc}"
        log(f"  minari: FAILED: {res.error}")
    finally:
        if old is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = old
        shutil.rmtree(root, ignore_errors=True)
    return [r for r in (res, res_all) if r.rates or r.error] if res.rates else [res]


