"""Checks a `rollway export --to lerobot` dataset the way LeRobot reads one, with
pyarrow and PyAV only (no torch): the v3.0 layout and info.json, every Parquet
file's schema against the declared features, frame bookkeeping (timestamps,
indices, episode ranges), the videos (frame counts per file, timestamps that
LeRobot's `from_timestamp + timestamp` queries hit), and, against the source
rollway dataset, the numbers (exactly) and the frames (within a PSNR bound).

Usage: check_lerobot.py LEROBOT_DIR [ROLLWAY_DIR MIN_PSNR_DB MIN_MEAN_PSNR_DB]
ROLLWAY_DIR must store frames raw (`--frame-media raw`) so Python can read them.
Prints one summary line; exit 1 with a reason on the first mismatch.
"""
import glob
import json
import math
import os
import sys

import av
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TOL_S = 1e-4
DEFAULTS = {"timestamp": "float32", "frame_index": "int64", "episode_index": "int64", "index": "int64", "task_index": "int64"}
PATTERN = "chunk-{chunk_index:03d}/file-{file_index:03d}"
# The codecs rollway exports (`--video-codec`); LeRobot itself writes AV1 by default.
CODECS = ("av1", "h264")


def fail(msg):
    print(f"check_lerobot: {msg}", file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        fail(msg)


def arrow_type(feature):
    """The Arrow type `datasets` gives a feature: a value for shape [1], else a list."""
    dtype = pa.string() if feature["dtype"] == "string" else pa.from_numpy_dtype(np.dtype(feature["dtype"]))
    return dtype if feature["shape"] == [1] else pa.list_(dtype, math.prod(feature["shape"]))


def same_type(actual, want):
    if pa.types.is_fixed_size_list(want):
        return pa.types.is_fixed_size_list(actual) and actual.list_size == want.list_size and actual.value_type == want.value_type
    return actual == want


def check_meta(root):
    info = json.load(open(os.path.join(root, "meta/info.json")))
    expect(info["codebase_version"] == "v3.0", f"codebase_version {info['codebase_version']}")
    for k in ["fps", "features", "total_episodes", "total_frames", "total_tasks", "chunks_size", "data_path", "splits", "data_files_size_in_mb", "video_files_size_in_mb"]:
        expect(k in info, f"info.json has no `{k}`")
    expect(info["data_path"] == "data/" + PATTERN + ".parquet", f"data_path {info['data_path']}")
    feats = info["features"]
    for k, dt in DEFAULTS.items():
        expect(feats.get(k, {}).get("dtype") == dt and feats[k]["shape"] == [1], f"feature {k}: {feats.get(k)}")
    videos = [k for k, f in feats.items() if f["dtype"] == "video"]
    for k in videos:
        vi = feats[k]["info"]
        expect(feats[k]["shape"] == [vi["video.height"], vi["video.width"], 3], f"{k}: shape {feats[k]['shape']} vs info {vi}")
        expect(vi["video.codec"] in CODECS and vi["video.pix_fmt"] == "yuv420p" and vi["video.fps"] == info["fps"] and vi["has_audio"] is False, f"{k}: {vi}")
        expect(info["video_path"] == "videos/{video_key}/" + PATTERN + ".mp4", f"video_path {info['video_path']}")
    expect(info["splits"] == {"train": f"0:{info['total_episodes']}"}, f"splits {info['splits']}")
    tasks = pq.read_table(os.path.join(root, "meta/tasks.parquet"))
    expect(tasks.column_names == ["task_index", "task"] and tasks.schema.field("task_index").type == pa.int64(), f"tasks.parquet: {tasks.schema}")
    expect(tasks.schema.pandas_metadata["index_columns"] == ["task"], "tasks.parquet: `task` is not the pandas index")
    expect(tasks.num_rows == info["total_tasks"], "total_tasks")
    stats = json.load(open(os.path.join(root, "meta/stats.json")))
    for k, f in feats.items():
        if f["dtype"] == "string":
            continue
        s = stats.get(k)
        expect(s is not None and set(s) >= {"min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"}, f"stats.json: {k}: {s and list(s)}")
        shape = (3, 1, 1) if f["dtype"] == "video" else (math.prod(f["shape"]),)
        for stat in ["min", "max", "mean", "std", "q01", "q10", "q50", "q90", "q99"]:
            expect(np.array(s[stat]).shape == shape, f"stats.json: {k}/{stat} shape {np.array(s[stat]).shape}, expected {shape}")
    return info, videos


def check_episodes(root, info, videos):
    files = sorted(glob.glob(os.path.join(root, "meta/episodes/chunk-*/file-*.parquet")))
    expect(files, "no meta/episodes/…parquet")
    eps = pa.concat_tables([pq.read_table(f) for f in files]).to_pylist()
    expect([e["episode_index"] for e in eps] == list(range(info["total_episodes"])), "episode_index is not 0..N-1")
    fps = info["fps"]
    frame_in_file = {}
    at = 0
    for e in eps:
        expect(e["dataset_from_index"] == at and e["dataset_to_index"] - e["dataset_from_index"] == e["length"], f"episode {e['episode_index']}: range {e['dataset_from_index']}..{e['dataset_to_index']}, length {e['length']}")
        at = e["dataset_to_index"]
        expect(e["tasks"] and e["meta/episodes/chunk_index"] == 0, f"episode {e['episode_index']}: tasks {e['tasks']}")
        for k in videos:
            f = (k, e[f"videos/{k}/chunk_index"], e[f"videos/{k}/file_index"])
            start = frame_in_file.get(f, 0)
            frame_in_file[f] = start + e["length"]
            expect(abs(e[f"videos/{k}/from_timestamp"] - start / fps) < TOL_S and abs(e[f"videos/{k}/to_timestamp"] - (start + e["length"]) / fps) < TOL_S,
                   f"episode {e['episode_index']} {k}: timestamps {e[f'videos/{k}/from_timestamp']}..{e[f'videos/{k}/to_timestamp']}, expected frames {start}..{start + e['length']}")
        for k, feat in info["features"].items():
            if feat["dtype"] != "string":
                expect(e[f"stats/{k}/count"] == [e["length"]], f"episode {e['episode_index']}: stats/{k}/count {e[f'stats/{k}/count']}")
    expect(at == info["total_frames"], f"episodes cover {at} frames, total_frames is {info['total_frames']}")
    return eps, frame_in_file


def check_data(root, info, eps):
    feats = {k: f for k, f in info["features"].items() if f["dtype"] != "video"}
    by_file = {}
    for e in eps:
        by_file.setdefault((e["data/chunk_index"], e["data/file_index"]), []).append(e)
    found = sorted(glob.glob(os.path.join(root, "data/chunk-*/file-*.parquet")))
    expect(len(found) == len(by_file), f"{len(found)} data files, the episodes table names {len(by_file)}")
    tables = {}
    for (c, f), es in sorted(by_file.items()):
        path = os.path.join(root, info["data_path"].format(chunk_index=c, file_index=f))
        t = pq.read_table(path)
        expect(set(t.column_names) == set(feats), f"{path}: columns {sorted(t.column_names)} vs features {sorted(feats)}")
        for k, feat in feats.items():
            expect(same_type(t.schema.field(k).type, arrow_type(feat)), f"{path}: {k} is {t.schema.field(k).type}, info.json says {feat}")
        d = {k: t.column(k).to_numpy() for k in DEFAULTS}
        row = 0
        for e in es:
            n, sl = e["length"], slice(row, row + e["length"])
            expect((d["episode_index"][sl] == e["episode_index"]).all(), f"{path}: episode_index rows of episode {e['episode_index']}")
            expect((d["index"][sl] == np.arange(e["dataset_from_index"], e["dataset_to_index"])).all(), f"{path}: index of episode {e['episode_index']}")
            expect((d["frame_index"][sl] == np.arange(n)).all(), f"{path}: frame_index of episode {e['episode_index']}")
            expect(np.abs(d["timestamp"][sl].astype(np.float64) - np.arange(n) / info["fps"]).max() <= TOL_S, f"{path}: timestamps of episode {e['episode_index']}")
            tables[e["episode_index"]] = t.slice(row, n)
            row += n
        expect(row == t.num_rows, f"{path}: {t.num_rows} rows, its episodes have {row}")
        expect((d["task_index"] == 0).all(), f"{path}: task_index")
    return tables


def decode(path):
    """Every frame of an mp4 as (time in s, H×W×3 uint8), in presentation order."""
    with av.open(path) as c:
        s = c.streams.video[0]
        codec = s.codec_context.codec.canonical_name
        expect(codec in CODECS, f"{path}: codec {codec}")
        return [(float(fr.pts * s.time_base), fr.to_ndarray(format="rgb24")) for fr in c.decode(s)]


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * math.log10(255.0**2 / mse)


def rollway_frames(src, key, episode_id, leaf_bytes):
    """An episode's frames from a rollway dataset with raw frame media."""
    for idx in glob.glob(os.path.join(src, "index/shard-*.json")):
        for e in json.load(open(idx))["episodes"]:
            if e["episode_id"] == episode_id:
                ref = e["frames"][key]
                with open(os.path.join(src, "frames", key.replace("/", "."), f"shard-{e['shard']:06d}.raw"), "rb") as f:
                    f.seek(ref["start"] * leaf_bytes)
                    return np.frombuffer(f.read(ref["count"] * leaf_bytes), dtype=np.uint8)
    fail(f"episode {episode_id} not in {src}")


def check_videos(root, info, eps, videos, frame_in_file, src, min_psnr, min_mean):
    fps = info["fps"]
    rw = json.load(open(os.path.join(root, "meta/rollway.json")))
    key_of = {v: k for k, v in rw["columns"].items()}
    psnrs = []
    for k in videos:
        h, w, _ = info["features"][k]["shape"]
        for (vk, c, f), n in sorted(frame_in_file.items()):
            if vk != k:
                continue
            path = os.path.join(root, info["video_path"].format(video_key=k, chunk_index=c, file_index=f))
            frames = decode(path)
            expect(len(frames) == n, f"{path}: {len(frames)} frames, its episodes have {n}")
            for i, (t, img) in enumerate(frames):
                expect(abs(t - i / fps) < TOL_S and img.shape == (h, w, 3), f"{path}: frame {i} at {t} s, shape {img.shape}")
            if src is None:
                continue
            for e in eps:
                if (e[f"videos/{k}/chunk_index"], e[f"videos/{k}/file_index"]) != (c, f):
                    continue
                first = round(e[f"videos/{k}/from_timestamp"] * fps)
                ref = rollway_frames(src, key_of[k], rw["episodes"][e["episode_index"]]["episode_id"], h * w * 3).reshape(-1, h, w, 3)
                expect(len(ref) == e["length"], f"episode {e['episode_index']}: {len(ref)} source frames, length {e['length']}")
                for j in range(e["length"]):
                    p = psnr(frames[first + j][1], ref[j])
                    expect(p >= min_psnr, f"{path}: episode {e['episode_index']} frame {j}: PSNR {p:.1f} dB < {min_psnr}")
                    psnrs.append(min(p, 60.0))
    if psnrs:
        expect(np.mean(psnrs) >= min_mean, f"mean PSNR {np.mean(psnrs):.1f} dB < {min_mean}")
    return psnrs


def check_values(root, info, tables, src):
    """Observations, actions, rewards and flags equal the rollway dataset's, row for row."""
    rw = json.load(open(os.path.join(root, "meta/rollway.json")))
    shards = {}
    for p in glob.glob(os.path.join(src, "steps/shard-*.parquet")):
        t = pq.read_table(p)
        ids = t.column("episode_id").to_numpy()
        for eid in np.unique(ids):
            shards[int(eid)] = t.filter(pc.equal(t.column("episode_id"), eid))
    for k, meta in enumerate(rw["episodes"]):
        a, b = shards[meta["episode_id"]], tables[k]
        expect(a.num_rows == b.num_rows == meta["steps"] + 1, f"episode {k}: {a.num_rows} rollway rows, {b.num_rows} frames, {meta['steps']} steps")
        for col, feat in rw["columns"].items():
            if info["features"][feat]["dtype"] == "video":
                continue
            # The final observation's row has no action: null in rollway, zeros here.
            rows = meta["steps"] if col.startswith("actions") else meta["steps"] + 1
            dt = info["features"][feat]["dtype"]
            x = np.array(a.column(col).to_pylist()[:rows], dtype=dt).reshape(-1)
            y = np.array(b.column(feat).to_pylist()[:rows], dtype=dt).reshape(-1)
            expect(np.array_equal(x, y), f"episode {k}: {feat} differs from {col}")
        steps = slice(0, meta["steps"])
        expect(np.array_equal(np.array(a.column("rewards").to_pylist()[steps], dtype=np.float64), b.column("next.reward").to_numpy()[steps].astype(np.float64)), f"episode {k}: next.reward")
        for mine, theirs in [("terminations", "next.terminated"), ("terminations", "next.done"), ("truncations", "next.truncated")]:
            expect(a.column(mine).to_pylist()[steps] == b.column(theirs).to_pylist()[steps], f"episode {k}: {theirs}")
        final = b.column("rollway.final_observation").to_pylist()
        expect(final == [False] * meta["steps"] + [True], f"episode {k}: rollway.final_observation {final}")


def main():
    if len(sys.argv) not in (2, 5):
        fail(__doc__)
    root = sys.argv[1]
    src = sys.argv[2] if len(sys.argv) == 5 else None
    min_psnr, min_mean = (float(sys.argv[3]), float(sys.argv[4])) if src else (0.0, 0.0)
    info, videos = check_meta(root)
    eps, frame_in_file = check_episodes(root, info, videos)
    tables = check_data(root, info, eps)
    psnrs = check_videos(root, info, eps, videos, frame_in_file, src, min_psnr, min_mean)
    if src:
        check_values(root, info, tables, src)
    extra = f", frame PSNR min {min(psnrs):.1f} dB mean {np.mean(psnrs):.1f} dB" if psnrs else ""
    print(f"lerobot ok: {info['total_episodes']} episodes, {info['total_frames']} frames, {len(videos)} video keys{extra}")


if __name__ == "__main__":
    main()
