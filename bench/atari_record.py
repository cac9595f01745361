"""Issue 55: recording Atari episodes, agent steps/s from start to a closed dataset, side by side:

- ``rollway.run("atari:Pong-v5")``, 2 env processes × 4 envs, the stacked frames only (parquet);
- the same with ``render_mode="rgb_array"``: each observation also carries the 210×160 RGB screen,
  stored as H.264 video (``image_media="h264"``), at the default x264 preset (``fast``) and at
  ``ultrafast`` (x264's trellis quantization, its costliest step here, is off);
- Minari's own ``DataCollector`` around Gymnasium's ``AtariPreprocessing`` + ``FrameStackObservation``,
  one env in a Python loop, the stacks only (Minari records observations as arrays: no video), then
  ``create_dataset`` (hdf5).

Random actions, each figure in a fresh process, the systems alternating; medians of the reps.

    bench/run_python.sh-style: BENCH_SCRIPT=atari_record.py bench/run_python.sh [--steps 30000] [--reps 3] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from benchlib import alternating_medians, fresh_process_rate, ratio_report

GAME = "Pong-v5"


def rollway_rate(steps: int, render: bool, preset: str = "fast") -> float:
    import rollway

    params = {"render_mode": "rgb_array"} if render else {}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        s = rollway.run(env=f"atari:{GAME}", agent="random", seed=1, steps=steps, workers=2, envs_per_worker=4,
                        env_params=params, image_media="h264", preset=preset, out=os.path.join(tmp, "ds"), progress=False)
        return s.steps / (time.perf_counter() - t0)


def minari_rate(steps: int) -> float:
    import ale_py
    import gymnasium as gym
    import minari
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gym.register_envs(ale_py)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MINARI_DATASETS_PATH"] = tmp
        t0 = time.perf_counter()
        env = FrameStackObservation(AtariPreprocessing(gym.make(f"ALE/{GAME}", frameskip=1)), 4)
        env = minari.DataCollector(env, record_infos=False)
        env.action_space.seed(1)
        episode = 0
        env.reset(seed=1)
        for _ in range(steps):
            _o, _r, terminated, truncated, _i = env.step(env.action_space.sample())
            if terminated or truncated:
                episode += 1
                env.reset(seed=1 + episode)
        env.create_dataset(dataset_id="atari/pong-bench-v0", algorithm_name="random")
        rate = steps / (time.perf_counter() - t0)
        env.close()
        return rate


SYSTEMS = {
    "rollway run, stacks": lambda n: rollway_rate(n, False),
    "rollway run, stacks + RGB screen as H.264": lambda n: rollway_rate(n, True),
    "the same, x264 preset ultrafast": lambda n: rollway_rate(n, True, "ultrafast"),
    "Minari DataCollector, stacks": minari_rate,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=30000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out")
    p.add_argument("--one", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        import json

        print(json.dumps(SYSTEMS[a.one](a.n)))
        return
    load_start = os.getloadavg()
    med = alternating_medians(SYSTEMS, a.reps, lambda s: fresh_process_rate(__file__, s, a.steps, 0))
    title = (f"Recording Atari {GAME} ({a.steps:,} random-action steps, start to closed dataset): agent steps/s, "
             f"median of {a.reps}, each in a fresh process.")
    ratio_report(title, med, "Minari DataCollector, stacks", ["", "vs Minari"], ["rollway", "ale_py", "gymnasium", "minari", "cv2"],
                 load_start, a.out, digits=1)

if __name__ == "__main__":
    main()
