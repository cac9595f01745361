"""Issue 13: rollway on Ray, side by side in one run (bench/run_ray.sh).

1. **Overhead**: one workload (built-in PixelMine-v0, 64×64 frames to lz4) run by rollway
   locally (``rollway.run``, 2 workers) and by ``rollway.ray.run`` on a local Ray cluster
   (2 actors × 1 worker, the cluster started before timing): wall seconds, ratio.
2. **MineStudio-shaped**: 2 workers × N episodes × 500 steps of a Python 128×128 pixel env,
   H.264 output, an info filter — ``rollway.ray.run`` vs a plain Ray actor pool written the
   way MineStudio's generator is (each actor steps its env with random actions, encodes the
   episode with PyAV's libx264 into an mp4, returns the path and the final info; the driver
   applies the filter). Episodes/s.

Medians of --reps; every rollway dataset is checked to hold the target episodes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import pixel_env  # noqa: E402
from benchlib import log, module_versions  # noqa: E402

import rollway  # noqa: E402
import rollway.ray  # noqa: E402

LENGTH = 500
FILTER = "key=events,val=bright.*,num=1,label=bright"


class InfoFrames(pixel_env.GradientFrames):
    """The bench's pixel env, with a MineStudio-like count map in its info for the filter."""

    def step(self, action):
        obs, r, term, trunc, _ = super().step(action)
        return obs, r, term, trunc, {"events": {"bright": int(self.dx % 17 == 0)}}


def make_env():
    return InfoFrames(LENGTH)


def timed(fn, reps):
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def fresh(tmp, name):
    p = os.path.join(tmp, name)
    shutil.rmtree(p, ignore_errors=True)
    return p


def overhead(tmp, episodes, reps):
    job = dict(env="PixelMine-v0", agent="random", env_params={"size": 64, "max_steps": 200}, episodes=episodes,
               seed=1, envs_per_worker=8, mode="sync", progress=False)

    def local():
        s = rollway.run(**job, workers=2, out=fresh(tmp, "local"))
        assert s.episodes == episodes

    def on_ray():
        s = rollway.ray.run(**job, workers=1, num_workers=2, out=fresh(tmp, "ray"))
        assert s.episodes == episodes and s.complete

    return timed(local, reps), timed(on_ray, reps)


_GENERATOR = None


def _pool_actor():
    """The baseline's actor class, made once Ray is imported."""
    global _GENERATOR
    if _GENERATOR is not None:
        return _GENERATOR
    import ray

    @ray.remote(num_cpus=1)
    class Generator:
        """MineStudio's shape: an env per actor; each episode stepped, encoded with PyAV, saved."""

        def __init__(self, outdir):
            self.env, self.outdir = make_env(), outdir

        def rollout(self, seed):
            import av

            rng = np.random.default_rng(seed)
            obs, info = self.env.reset(seed=seed)
            frames = [obs]
            while True:
                obs, _, term, trunc, info = self.env.step(int(rng.integers(4)))
                frames.append(obs)
                if term or trunc:
                    break
            path = os.path.join(self.outdir, f"episode-{seed}.mp4")
            with av.open(path, "w") as c:
                s = c.add_stream("libx264", rate=20)
                s.width, s.height, s.pix_fmt = pixel_env.SIZE, pixel_env.SIZE, "yuv420p"
                s.options = {"crf": "23", "preset": "veryfast"}
                for f in frames:
                    c.mux(s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
                c.mux(s.encode())
            return path, info

    _GENERATOR = Generator
    return Generator


def minestudio(tmp, per_worker, reps):
    import ray
    from ray.util import ActorPool

    n = 2 * per_worker

    def pool():
        out = fresh(tmp, "pool")
        os.makedirs(out)
        actors = [_pool_actor().remote(out) for _ in range(2)]
        results = list(ActorPool(actors).map_unordered(lambda a, s: a.rollout.remote(s), range(n)))
        kept = [p for p, info in results if info["events"]["bright"] >= 1]
        assert len(results) == n and len(kept) <= n
        for a in actors:
            ray.kill(a)

    def on_ray():
        s = rollway.ray.run(env=make_env, agent="random", episodes=n, workers=1, envs_per_worker=4,
                            frame_media="h264", filters=[FILTER], num_workers=2, out=fresh(tmp, "rw"), progress=False)
        assert s.complete and s.episodes == n

    return timed(pool, reps), timed(on_ray, reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--episodes", type=int, default=600, help="overhead workload (≥ 30 s of work on 2 cores)")
    ap.add_argument("--per-worker", type=int, default=8, help="MineStudio-shaped episodes per worker")
    a = ap.parse_args()
    import cloudpickle
    import ray

    cloudpickle.register_pickle_by_value(pixel_env)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, logging_level="ERROR", log_to_driver=False)
    tmp = tempfile.mkdtemp(prefix="rollway-ray-bench-")
    try:
        log("overhead: local vs Ray")
        loc, on = overhead(tmp, a.episodes, a.reps)
        log("MineStudio-shaped: Ray actor pool + PyAV vs rollway.ray")
        pool, rw = minestudio(tmp, a.per_worker, a.reps)
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
    med = statistics.median
    n = 2 * a.per_worker
    print(f"## Ray backend (issue 13): `bench/run_ray.sh --reps {a.reps} --episodes {a.episodes} --per-worker {a.per_worker}`\n")
    print(f"{os.cpu_count()} cores; {module_versions(['ray', 'av', 'numpy', 'gymnasium'])}\n")
    print("| workload | run | median s | all s | ratio |\n|---|---|---|---|---|")
    print(f"| PixelMine 64×64, {a.episodes} episodes, lz4 | rollway local, 2 workers | {med(loc):.2f} | "
          f"{', '.join(f'{x:.2f}' for x in loc)} | |")
    print(f"| | rollway.ray, 2 actors × 1 worker | {med(on):.2f} | {', '.join(f'{x:.2f}' for x in on)} | "
          f"overhead {100 * (med(on) / med(loc) - 1):+.1f}% |")
    print(f"| Python 128×128 env, {n} × {LENGTH} steps, H.264, info filter | Ray actor pool + PyAV (MineStudio's shape) | "
          f"{med(pool):.2f} ({n / med(pool):.2f} episodes/s) | {', '.join(f'{x:.2f}' for x in pool)} | |")
    print(f"| | rollway.ray, 2 actors | {med(rw):.2f} ({n / med(rw):.2f} episodes/s) | "
          f"{', '.join(f'{x:.2f}' for x in rw)} | {med(pool) / med(rw):.2f}× |")


if __name__ == "__main__":
    main()
