"""Loads a `rollway export --to minari` dataset with Minari itself and compares
every episode, exactly, with what pyarrow reads from the rollway dataset's Parquet
shards (and, for image leaves, the raw frame files).

Usage: check_minari.py ROLLWAY_DIR MINARI_ROOT DATASET_ID
(exit 0 = minari.load_dataset(DATASET_ID) under MINARI_DATASETS_PATH=MINARI_ROOT
returns the same episodes, values and dtypes)
"""
import glob
import json
import os
import sys


def fail(msg):
    print(f"check_minari: {msg}", file=sys.stderr)
    sys.exit(1)


def leaf_paths(space, prefix):
    """Column names of a space's leaves, rollway's (and Minari's) `a/b`, `_index_k` naming."""
    t = space["type"]
    if t == "Dict":
        return [p for k in sorted(space["subspaces"]) for p in leaf_paths(space["subspaces"][k], f"{prefix}/{k}")]
    if t == "Tuple":
        return [p for i, s in enumerate(space["subspaces"]) for p in leaf_paths(s, f"{prefix}/_index_{i}")]
    return [(prefix, space)]


def leaf_dtype_shape(space):
    import numpy as np

    t = space["type"]
    if t == "Box":
        return np.dtype(space["dtype"]), tuple(space["shape"])
    if t == "Discrete":
        return np.dtype("int64"), ()
    if t == "MultiDiscrete":
        return np.dtype("int64"), (len(space["nvec"]),)
    if t == "MultiBinary":
        n = space["n"]
        return np.dtype("int8"), tuple(n) if isinstance(n, list) else (n,)
    fail(f"unexpected leaf space {t}")


def get(value, path):
    """Minari returns Dict observations as dicts and Tuples as tuples."""
    for part in path.split("/")[1:]:
        value = value[int(part[len("_index_"):])] if part.startswith("_index_") else value[part]
    return value


def rollway_episodes(root, meta):
    """Episode id → {column: array[rows, ...]} from the Parquet shards and raw/lz4 frames."""
    import numpy as np
    import pyarrow.parquet as pq

    obs_space = json.loads(meta["env"]["observation_space"])
    act_space = json.loads(meta["env"]["action_space"])
    leaves = leaf_paths(obs_space, "observations") + leaf_paths(act_space, "actions")
    out = {}
    for idx_path in sorted(glob.glob(os.path.join(root, "index", "shard-*.json"))):
        idx = json.load(open(idx_path))
        table = pq.read_table(os.path.join(root, "steps", "shard-%06d.parquet" % idx["shard"])).to_pydict()
        for ep in idx["episodes"]:
            if ep["status"] == "given_up":
                continue
            s, n = ep["row_start"], ep["rows"]
            d = {"seed": ep["seed"]}
            for name, space in leaves:
                dtype, shape = leaf_dtype_shape(space)
                rows = n if name.startswith("observations") else n - 1
                if name in meta["frame_keys"]:
                    d[name] = read_frames(root, meta, name, idx["shard"], ep["frames"][name], shape)
                else:
                    vals = table[name][s:s + rows]
                    d[name] = np.array(vals, dtype=dtype).reshape((rows,) + shape)
            d["rewards"] = np.array(table["rewards"][s:s + n - 1], dtype=np.float64)
            d["terminations"] = np.array(table["terminations"][s:s + n - 1], dtype=bool)
            d["truncations"] = np.array(table["truncations"][s:s + n - 1], dtype=bool)
            out[ep["episode_id"]] = d
    return out, leaves


def read_frames(root, meta, key, shard, ref, shape):
    import numpy as np

    size = int(np.prod(shape))
    d = os.path.join(root, "frames", key.replace("/", "."))
    if meta["frame_media"] == "raw":
        buf = open(os.path.join(d, "shard-%06d.raw" % shard), "rb").read()
        frames = [buf[(ref["start"] + i) * size:(ref["start"] + i + 1) * size] for i in range(ref["count"])]
    elif meta["frame_media"] == "lz4":
        import struct

        import lz4.block

        buf = open(os.path.join(d, "shard-%06d.lz4" % shard), "rb").read()
        n = struct.unpack("<Q", buf[-16:-8])[0]
        offs = struct.unpack("<%dQ" % (n + 1), buf[-16 - 8 * (n + 1):-16])
        frames = [lz4.block.decompress(buf[offs[i]:offs[i + 1]], uncompressed_size=size) for i in range(ref["start"], ref["start"] + ref["count"])]
    else:
        fail(f"frame media {meta['frame_media']} is not lossless; compare it another way")
    return np.frombuffer(b"".join(frames), dtype=np.uint8).reshape((ref["count"],) + shape)


def same(name, want, got):
    import numpy as np

    got = np.asarray(got)
    if got.dtype != want.dtype:
        fail(f"{name}: dtype {got.dtype}, rollway has {want.dtype}")
    if got.shape != want.shape:
        fail(f"{name}: shape {got.shape}, rollway has {want.shape}")
    if not np.array_equal(got, want):
        fail(f"{name}: values differ")


def main(rollway_dir, minari_root, dataset_id):
    os.environ["MINARI_DATASETS_PATH"] = minari_root
    import minari

    meta = json.load(open(os.path.join(rollway_dir, "rollway.json")))
    want, leaves = rollway_episodes(rollway_dir, meta)
    ds = minari.load_dataset(dataset_id)
    ids = sorted(want)
    if ds.total_episodes != len(ids):
        fail(f"{ds.total_episodes} episodes, rollway has {len(ids)}")
    steps = sum(len(want[i]["rewards"]) for i in ids)
    if ds.total_steps != steps:
        fail(f"{ds.total_steps} steps, rollway has {steps}")
    if str(ds.spec.minari_version) != "0.5.4":
        fail(f"minari_version {ds.spec.minari_version}")
    seeds = [m.get("seed") for m in ds.storage.get_episode_metadata(range(ds.total_episodes))]
    for k, ep in enumerate(ds.iterate_episodes()):
        w = want[ids[k]]
        if ep.id != k:
            fail(f"episode {k} has id {ep.id}")
        if seeds[k] != w["seed"]:
            fail(f"episode {k}: seed {seeds[k]}, rollway has {w['seed']}")
        for name, _ in leaves:
            top, _, rest = name.partition("/")
            value = ep.observations if top == "observations" else ep.actions
            same(f"episode {k} {name}", w[name], get(value, "x/" + rest) if rest else value)
        for key in ["rewards", "terminations", "truncations"]:
            same(f"episode {k} {key}", w[key], getattr(ep, key))
    env_note = ""
    if ds.env_spec is not None:
        env = ds.recover_environment()
        env_note = f", recover_environment() -> {env.spec.id}"
        env.close()
    print(f"check_minari: ok, {len(ids)} episodes, {steps} steps, dataset {dataset_id}{env_note}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
