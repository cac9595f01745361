"""Frame encoding: rollway's h264/jpeg frame media vs PyAV and Pillow on the same frames.

The frames are 128×128 RGB observations of PixelMine-v0 episodes (random agent, fixed
seed). A `--frame-media raw` run records them once; PyAV then encodes every episode the
way MineStudio's generator does (one mp4 per episode, `add_stream("h264", rate=30)`,
rgb24 frames, PyAV's default libx264 settings) and Pillow writes one JPEG per frame
(`Image.fromarray(f).save(p)`, its default quality 75). rollway records the very same
frames (same seed) with `--frame-media h264` / `jpeg`: its time is the whole `rollway run`
process (stepping the env, writing Parquet, encoding, committing), so it is charged for
more work than the peers. Bytes/frame = encoded files' sizes / frames; PSNR = mean over
frames of each decoded frame (PyAV / Pillow decode everything) against the raw frame.
"""

from __future__ import annotations

import glob
import io
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

SIZE = 128


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else min(99.0, 10 * np.log10(255.0 ** 2 / mse))


def raw_episodes(d: str) -> list[np.ndarray]:
    """Every committed episode's frames from a `raw` dataset, in episode order."""
    eps = []
    for idx in sorted(glob.glob(os.path.join(d, "index", "shard-*.json"))):
        shard = json.load(open(idx))
        n = shard["shard"]
        data = np.fromfile(os.path.join(d, "frames", "observations.rgb", f"shard-{n:06d}.raw"), dtype=np.uint8)
        frames = data.reshape(-1, SIZE, SIZE, 3)
        for e in shard["episodes"]:
            f = e["frames"]["observations/rgb"]
            eps.append(frames[f["start"]:f["start"] + f["count"]])
    return eps


def rollway_run(binary: str, out: str, media_args: list[str], episodes: int, steps: int, seed: int) -> float:
    cmd = [binary, "run", "--env", "PixelMine-v0", "--env-opt", f"size={SIZE},max_steps={steps}", "--agent", "random",
           "--episodes", str(episodes), "--seed", str(seed), "--out", out, "-q", *media_args]
    return bl.run_proc(cmd, timeout=900)


def dir_bytes(pattern: str) -> int:
    return sum(os.path.getsize(p) for p in glob.glob(pattern))


def pyav_encode(eps: list[np.ndarray], out: str) -> float:
    t = time.perf_counter()
    for i, frames in enumerate(eps):
        pyav_write(os.path.join(out, f"ep{i}.mp4"), frames)
    return time.perf_counter() - t


def pyav_write(path, frames, rate: int = 30, options=None, threads=None) -> None:
    """One episode's RGB frames (a [T, H, W, 3] array or a list of [H, W, 3]) as an mp4 at
    `path` (a file name or a binary file object), the way MineStudio's generator (seed 000)
    writes them: PyAV's h264 with its defaults, unless libx264 `options` (e.g. a preset) or
    a number of encoder `threads` are given."""
    import av

    with av.open(path, mode="w", format="mp4") as container:
        stream = container.add_stream("h264", rate=rate)
        stream.width = frames[0].shape[1]
        stream.height = frames[0].shape[0]
        if options:
            stream.options = dict(options)
        if threads is not None:
            stream.codec_context.thread_count = threads
        for image in frames:
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def decode_mp4s(paths: list[str]) -> list[np.ndarray]:
    import av
    out = []
    for p in paths:
        with av.open(p) as c:
            out.extend(f.to_ndarray(format="rgb24") for f in c.decode(video=0))
    return out


def pillow_encode(eps: list[np.ndarray], out: str) -> float:
    from PIL import Image
    t = time.perf_counter()
    for i, frames in enumerate(eps):
        d = os.path.join(out, f"images_{i}")
        os.makedirs(d, exist_ok=True)
        for k, image in enumerate(frames):
            Image.fromarray(image).save(f"{d}/{k}.jpeg")
    return time.perf_counter() - t


def jpeg_blobs(d: str) -> list[bytes]:
    """The per-frame JPEGs of a rollway `jpeg` dataset (FORMAT.md: blobs + offsets footer)."""
    blobs = []
    for p in sorted(glob.glob(os.path.join(d, "frames", "observations.rgb", "shard-*.jpg"))):
        b = open(p, "rb").read()
        n = int.from_bytes(b[-16:-8], "little")
        offs = np.frombuffer(b[-16 - 8 * (n + 1):-16], dtype="<u8")
        blobs.extend(b[offs[i]:offs[i + 1]] for i in range(n))
    return blobs


def mean_psnr(decoded: list[np.ndarray], ref: np.ndarray) -> float:
    if len(decoded) != len(ref):
        raise RuntimeError(f"{len(decoded)} decoded frames for {len(ref)} recorded")
    return statistics.fmean(psnr(a, b) for a, b in zip(decoded, ref))


def render_table(rows: list[tuple]) -> list[str]:
    """One line per system: (name, frames/s, frames/s of each rep, bytes/frame, mean PSNR), the
    first row the base of the last column."""
    base = rows[0][1]
    return bl.md_table(["system", "frames/s (median)", "min – max", "bytes/frame", "mean PSNR (dB)", "vs PyAV h264 frames/s"],
                       [[name, bl.fmt_rate(fps), bl.fmt_spread(all_fps), f"{bpf:,.0f}", f"{q:.2f}", f"{fps / base:.2f}×"]
                        for name, fps, all_fps, bpf, q in rows], "-rrrrr")


def main() -> None:
    p = bl.common_parser(__doc__, quick_help="fewer, shorter episodes", reps_help="timed repetitions per system")
    p.add_argument("--episodes", type=int, default=8)
    p.add_argument("--steps", type=int, default=500, help="max_steps per episode (episodes end earlier on death)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.quick:
        a.episodes, a.steps, a.reps = 4, 150, 1
    binary = bl.resolve_binary(a.rollway)
    if not binary:
        sys.exit(f"rollway binary not found at {a.rollway}: cargo build --release first")
    load0 = os.getloadavg()
    t_script = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "raw")
        raw_wall = rollway_run(binary, raw, ["--frame-media", "raw"], a.episodes, a.steps, a.seed)
        eps = raw_episodes(raw)
        ref = np.concatenate(eps)
        nframes = len(ref)
        bl.log(f"{len(eps)} episodes, {nframes} frames of {SIZE}×{SIZE}")

        def measure(name: str, run, decode, files: str):
            walls = []
            for r in range(a.reps):
                d = os.path.join(tmp, f"{name}-{r}".replace(" ", "_"))
                os.makedirs(d, exist_ok=True)
                walls.append(run(d))
                bl.log(f"  {name} rep {r}: {walls[-1]:.2f}s")
            size = dir_bytes(os.path.join(d, files))
            q = mean_psnr(decode(d), ref)
            rows.append((name, nframes / statistics.median(walls), [nframes / w for w in walls], size / nframes, q))

        measure("PyAV h264 (seed 000's writer, defaults)", lambda d: pyav_encode(eps, d),
                lambda d: decode_mp4s(sorted(glob.glob(os.path.join(d, "*.mp4")), key=lambda s: int(s.rsplit("ep", 1)[1][:-4]))), "*.mp4")
        def h264_mp4s(d):
            return decode_mp4s(sorted(glob.glob(os.path.join(d, "frames", "observations.rgb", "shard-*.mp4"))))

        measure("rollway `--frame-media h264` (defaults)", lambda d: rollway_run(binary, os.path.join(d, "ds"), ["--frame-media", "h264"], a.episodes, a.steps, a.seed),
                lambda d: h264_mp4s(os.path.join(d, "ds")), "ds/frames/observations.rgb/*.mp4")
        from PIL import Image

        def pil_decode(d):
            return [np.asarray(Image.open(p).convert("RGB")) for i in range(len(eps)) for p in sorted(glob.glob(f"{d}/images_{i}/*.jpeg"), key=lambda s: int(os.path.basename(s)[:-5]))]
        measure("Pillow JPEG (seed 000's writer, quality 75)", lambda d: pillow_encode(eps, d), pil_decode, "images_*/*.jpeg")
        for q in (75, 95):
            measure(f"rollway `--frame-media jpeg --jpeg-quality {q}`",
                    lambda d, q=q: rollway_run(binary, os.path.join(d, "ds"), ["--frame-media", "jpeg", "--jpeg-quality", str(q)], a.episodes, a.steps, a.seed),
                    lambda d: [np.asarray(Image.open(io.BytesIO(b)).convert("RGB")) for b in jpeg_blobs(os.path.join(d, "ds"))], "ds/frames/observations.rgb/*.jpg")
    load1 = os.getloadavg()
    lines = ["## Frame encoding: 128×128 PixelMine frames, rollway vs PyAV and Pillow (`bench/run_video.sh`)", ""]
    lines += bl.machine_note(binary, load0, load1, packages=", ".join(f"{k} {v}" for k, v in bl.module_versions(["av", "PIL", "numpy"]).items()))
    lines += [f"- Data: {len(eps)} PixelMine-v0 episodes (random agent, seed {a.seed}, max_steps {a.steps}), {nframes} frames; "
              f"recording them with `--frame-media raw` took {raw_wall:.2f}s whole-process (the stepping + writing share of rollway's times below).",
              f"- Method: median of {a.reps} repetitions; script wall time {time.perf_counter() - t_script:.0f}s.", "",
              *render_table(rows)]
    bl.write_report("\n".join(lines) + "\n", a.out)


if __name__ == "__main__":
    main()
