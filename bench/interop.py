"""Issue 15: import and export throughput against the libraries' own paths, on the same
datasets, side by side in one run (bench/run_interop.sh).

- LeRobot, reading: `rollway.import_lerobot` (decode + write a rollway dataset) vs iterating
  `LeRobotDataset` (pyav backend) over every frame, on datasets LeRobot writes with its
  defaults: arrays only, and two AV1 cameras.
- LeRobot, writing: `Dataset.export("lerobot")` (AV1, and H.264) vs LeRobot's
  `LeRobotDataset.create` + `add_frame` + `save_episode` of the same episodes.
- Minari: `rollway.import_minari` and `Dataset.export("minari")` vs Minari's re-write,
  `iterate_episodes` + `create_dataset_from_buffers`, on a dataset its DataCollector made.

Episodes/s and MB/s (of the source dataset's files); medians of --reps.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from benchlib import fmt_rate, log, machine_note, md_table, module_versions  # noqa: E402

import rollway  # noqa: E402

CAMS = {"front": (96, 128), "wrist": (64, 64)}


def dir_mb(p: Path) -> float:
    return sum(f.stat().st_size for f in Path(p).rglob("*") if f.is_file()) / 1e6


def timed(fn, reps):
    """Median seconds of `fn(rep)` over `reps` runs."""
    times = []
    for r in range(reps):
        t = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def fresh(tmp, name, fn):
    """`fn(out)` for a run `r` into an emptied `tmp/name-r`: what `timed` calls."""

    def run(r):
        out = tmp / f"{name}-{r}"
        shutil.rmtree(out, ignore_errors=True)
        fn(out)

    return run


def frames_of(ep, n):
    out = []
    for t in range(n):
        f = {}
        for cam, (h, w) in CAMS.items():
            img = np.zeros((h, w, 3), np.uint8)
            img[:, :, 0] = np.linspace(0, 255, w, dtype=np.uint8)
            img[h // 4 : h // 2, (4 * t + 7 * ep) % (w - 8) :][:, :8] = (240, 200, 30)
            f[cam] = img
        out.append(f)
    return out


def lerobot_features(video):
    features = {
        "observation.state": {"dtype": "float32", "shape": (8,), "names": None},
        "action": {"dtype": "float32", "shape": (4,), "names": None},
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    }
    if video:
        for cam, (h, w) in CAMS.items():
            features[f"observation.images.{cam}"] = {"dtype": "video", "shape": (h, w, 3), "names": ["height", "width", "channels"]}
    return features


def lerobot_write(root, episodes, frames, video):
    """LeRobot's own write path, with its defaults (AV1)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset.create("bench/made", fps=30, features=lerobot_features(video), root=root)
    rng = np.random.default_rng(0)
    for ep in range(episodes):
        imgs = frames_of(ep, frames) if video else None
        for t in range(frames):
            f = {
                "observation.state": rng.standard_normal(8).astype(np.float32),
                "action": rng.standard_normal(4).astype(np.float32),
                "next.reward": np.array([0.1 * t], np.float32),
                "next.done": np.array([t == frames - 1]),
                "task": "reach",
            }
            if video:
                for cam in CAMS:
                    f[f"observation.images.{cam}"] = imgs[t][cam]
            ds.add_frame(f)
        ds.save_episode()
    ds.finalize()


def lerobot_read(root):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset("bench/made", root=root, video_backend="pyav")
    for i in range(len(ds)):
        item = ds[i]
        for v in item.values():
            if hasattr(v, "numpy"):
                v.numpy()


def bench_lerobot(tmp, episodes, frames, video, reps, rows):
    what = "two AV1 cameras" if video else "arrays only"
    src = tmp / f"lr-{'video' if video else 'arrays'}"
    log(f"lerobot {what}: writing {episodes}×{frames} with LeRobot")
    t_write, _ = timed(lambda r: (shutil.rmtree(src, ignore_errors=True), lerobot_write(src, episodes, frames, video)), 1)
    mb = dir_mb(src)
    log("  reading with LeRobotDataset")
    t_theirs, _ = timed(lambda r: lerobot_read(src), reps)

    log("  importing with rollway")
    t_ours, _ = timed(fresh(tmp, "back", lambda out: rollway.import_lerobot(src, out, progress=False)), reps)
    rows.append((f"LeRobot v3 read ({what}, {episodes}×{frames} frames, {mb:.1f} MB)", "`rollway.import_lerobot`", "`LeRobotDataset` iteration (pyav)", episodes, mb, t_ours, t_theirs))
    # Writing: the same episodes, exported by rollway from its import.
    back = tmp / "back-0"
    ours_ds = rollway.Dataset(back)
    codecs = ["av1", "h264"] if video else ["av1"]
    for codec in codecs:
        log(f"  exporting with rollway ({codec})")
        export = fresh(tmp, f"exp-{codec}", lambda out, c=codec: ours_ds.export("lerobot", out, video_codec=c, fps=30, progress=False))
        t_exp, _ = timed(export, reps)
        label = "`Dataset.export(\"lerobot\")`" + (f", {codec}" if video else "")
        rows.append((f"LeRobot v3 write ({what})", label, "`LeRobotDataset.create` + `add_frame` + `save_episode` (AV1)", episodes, mb, t_exp, t_write))


def minari_make(root, episodes):
    import gymnasium as gym
    import minari

    os.environ["MINARI_DATASETS_PATH"] = str(root)
    env = minari.DataCollector(gym.make("CartPole-v1"))
    rng = np.random.default_rng(1)
    for i in range(episodes):
        env.reset(seed=i)
        done = False
        while not done:
            _, _, term, trunc, _ = env.step(int(rng.integers(2)))
            done = term or trunc
    env.create_dataset(dataset_id="bench/cartpole-v0", algorithm_name="random")
    return root / "bench" / "cartpole-v0"


def bench_minari(tmp, episodes, reps, rows):
    import minari

    log(f"minari: {episodes} CartPole episodes by DataCollector")
    src = minari_make(tmp / "minari", episodes)
    mb = dir_mb(src)

    from minari.data_collector import EpisodeBuffer

    def theirs(r):
        ds = minari.load_dataset("bench/cartpole-v0")
        buffers = [
            EpisodeBuffer(id=e.id, observations=e.observations, actions=e.actions, rewards=list(e.rewards),
                          terminations=list(e.terminations), truncations=list(e.truncations))
            for e in ds.iterate_episodes()
        ]
        minari.create_dataset_from_buffers(f"bench/rewrite{r}-v0", buffers, env=ds.recover_environment(), algorithm_name="random")

    log("  minari re-write (iterate_episodes + create_dataset_from_buffers)")
    t_theirs, _ = timed(theirs, reps)

    log("  rollway import")
    t_imp, _ = timed(fresh(tmp, "m-back", lambda out: rollway.import_minari(src, out, progress=False)), reps)
    back = rollway.Dataset(tmp / "m-back-0")

    def export(r):
        out = tmp / "minari" / "bench" / f"exp{r}-v0"
        shutil.rmtree(out, ignore_errors=True)
        back.export("minari", out, dataset_id=f"bench/exp{r}-v0", progress=False)

    log("  rollway export")
    t_exp, _ = timed(export, reps)
    peer = "`iterate_episodes` + `create_dataset_from_buffers`"
    rows.append((f"Minari hdf5 read ({episodes} CartPole episodes, {mb:.1f} MB)", "`rollway.import_minari`", peer, episodes, mb, t_imp, t_theirs))
    rows.append(("Minari hdf5 write (same episodes)", "`Dataset.export(\"minari\")`", peer, episodes, mb, t_exp, t_theirs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=20, help="LeRobot episodes (video and arrays)")
    ap.add_argument("--frames", type=int, default=100, help="frames per LeRobot episode")
    ap.add_argument("--minari-episodes", type=int, default=500)
    ap.add_argument("--only", choices=["lerobot", "minari"], help="run one library's rows")
    ap.add_argument("--out", help="write the markdown report here too")
    a = ap.parse_args()
    rows = []
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if a.only in (None, "lerobot"):
            bench_lerobot(tmp, a.episodes * 5, a.frames, False, a.reps, rows)
            bench_lerobot(tmp, a.episodes, a.frames, True, a.reps, rows)
        if a.only in (None, "minari"):
            bench_minari(tmp, a.minari_episodes, a.reps, rows)
    only = f" --only {a.only}" if a.only else ""
    lines = [f"## Interop (issue 15): import and export vs the libraries' own paths (`bench/run_interop.sh --reps {a.reps}{only} --minari-episodes {a.minari_episodes}`)", ""]
    versions = ", ".join(f"{k} {v}" for k, v in module_versions(["numpy", "lerobot", "minari", "av", "torch"]).items())
    lines += machine_note(None, load0, os.getloadavg(), packages=versions)
    lines[-1] = "- rollway: the package installed from this checkout, in-process"
    lines += ["", *md_table(["workload", "rollway", "peer", "rollway episodes/s", "peer episodes/s", "rollway MB/s",
                             "peer MB/s", "rollway / peer"],
                            [[what, ours, peer, fmt_rate(eps / t_ours), fmt_rate(eps / t_theirs), f"{mb / t_ours:.1f}",
                              f"{mb / t_theirs:.1f}", f"**{t_theirs / t_ours:.1f}×**"]
                             for what, ours, peer, eps, mb, t_ours, t_theirs in rows],
                            "---rrrrr")]
    report = "\n".join(lines) + "\n"
    print(report)
    if a.out:
        Path(a.out).write_text(report)


if __name__ == "__main__":
    main()
