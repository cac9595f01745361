"""Checks a rollway dataset's frame files with the real peers: every h264 shard opens in
PyAV with exactly the frame count the index promises and decodes within a PSNR bound of
the same frames recorded raw; every jpeg blob opens with Pillow.

usage: check_video.py DATASET RAW_DATASET MIN_PSNR
"""

import glob
import io
import json
import os
import sys

import av
import numpy as np
from PIL import Image


def shards(d):
    for idx in sorted(glob.glob(os.path.join(d, "index", "shard-*.json"))):
        s = json.load(open(idx))
        yield s["shard"], s["episodes"]


def raw_frames(d, shape):
    out = []
    for n, eps in shards(d):
        data = np.fromfile(os.path.join(d, "frames", "observations.rgb", f"shard-{n:06d}.raw"), dtype=np.uint8).reshape(-1, *shape)
        for e in eps:
            f = e["frames"]["observations/rgb"]
            out.extend(data[f["start"]:f["start"] + f["count"]])
    return out


def psnr(a, b):
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return 99.0 if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def main():
    d, raw, floor = sys.argv[1], sys.argv[2], float(sys.argv[3])
    meta = json.load(open(os.path.join(d, "rollway.json")))
    media = meta["frame_media"]
    got = []
    for n, eps in shards(d):
        want = sum(e["frames"]["observations/rgb"]["count"] for e in eps)
        if media == "h264":
            path = os.path.join(d, "frames", "observations.rgb", f"shard-{n:06d}.mp4")
            with av.open(path) as c:
                st = c.streams.video[0]
                assert st.codec_context.name == "h264", st.codec_context.name
                assert st.frames == want, f"{path}: container says {st.frames} frames, index {want}"
                frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
                assert len(frames) == want, f"{path}: decoded {len(frames)} frames, index {want}"
                # timestamps: frame i at i / fps
                got.extend(frames)
        elif media == "jpeg":
            b = open(os.path.join(d, "frames", "observations.rgb", f"shard-{n:06d}.jpg"), "rb").read()
            assert b[-8:] == b"RWJPGv1\0", "jpeg container magic"
            k = int.from_bytes(b[-16:-8], "little")
            offs = np.frombuffer(b[-16 - 8 * (k + 1):-16], dtype="<u8")
            assert k == want, f"shard {n}: {k} jpegs, index {want}"
            for i in range(k):
                img = Image.open(io.BytesIO(b[offs[i]:offs[i + 1]]))
                assert img.format == "JPEG", img.format
                got.append(np.asarray(img.convert("RGB")))
        else:
            sys.exit(f"unexpected media {media}")
    ref = raw_frames(raw, got[0].shape)
    assert len(ref) == len(got), f"{len(got)} frames decoded, {len(ref)} recorded raw"
    ps = [min(99.0, psnr(a, b)) for a, b in zip(got, ref)]
    mean = sum(ps) / len(ps)
    assert mean >= floor, f"mean PSNR {mean:.2f} dB < {floor}"
    print(f"{media}: {len(got)} frames, mean PSNR {mean:.2f} dB, min {min(ps):.2f} dB")


if __name__ == "__main__":
    main()
