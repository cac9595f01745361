"""Reads a rollway dataset with pyarrow alone and checks it against FORMAT.md,
including each committed file's size and XXH3-64 (with the `xxhash` package, the
reference implementation's Python binding).

Usage: check_parquet.py DIR   (exit 0 = every shard reads with the documented schema)
"""
import glob
import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash


def fail(msg):
    print(f"check_parquet: {msg}", file=sys.stderr)
    sys.exit(1)


def main(root):
    meta = json.load(open(os.path.join(root, "rollway.json")))
    if meta["format"] != "rollway" or meta["format_version"] != 3:
        fail(f"unexpected format {meta['format']} v{meta['format_version']}")
    obs_space = json.loads(meta["env"]["observation_space"])  # Minari's space JSON, Python's json reads it
    act_space = json.loads(meta["env"]["action_space"])
    shards = sorted(glob.glob(os.path.join(root, "index", "shard-*.json")))
    if not shards:
        fail("no committed shards")
    total = 0
    for idx_path in shards:
        idx = json.load(open(idx_path))
        for f in idx.get("files", []):
            data = open(os.path.join(root, f["path"]), "rb").read()
            if len(data) != f["bytes"] or xxhash.xxh3_64_hexdigest(data) != f["xxh3"]:
                fail(f"{f['path']}: {len(data)} bytes, XXH3 {xxhash.xxh3_64_hexdigest(data)}; the index says {f['bytes']}, {f['xxh3']}")
        if idx["rows"] > 0 and not idx.get("files"):
            fail(f"shard {idx['shard']}: no files listed (format 2 lists them)")
        if idx["rows"] == 0:
            continue
        table = pq.read_table(os.path.join(root, "steps", "shard-%06d.parquet" % idx["shard"]))
        if table.num_rows != idx["rows"]:
            fail(f"shard {idx['shard']}: {table.num_rows} rows, index says {idx['rows']}")
        schema = table.schema
        for name, typ in [("episode_id", pa.int64()), ("step", pa.int64()), ("rewards", pa.float64()), ("terminations", pa.bool_()), ("truncations", pa.bool_())]:
            if schema.field(name).type != typ:
                fail(f"column {name} is {schema.field(name).type}, FORMAT.md says {typ}")
        if schema.metadata.get(b"rollway:format_version") != b"3":
            fail("schema lacks rollway:format_version")
        obs_cols = [f for f in schema if f.name == "observations" or f.name.startswith("observations/")]
        act_cols = [f for f in schema if f.name == "actions" or f.name.startswith("actions/")]
        if not act_cols:
            fail("no action column")
        for f in obs_cols + act_cols:
            shape = json.loads(f.metadata[b"rollway:shape"])
            count = max(1, int(__import__("math").prod(shape)))
            dtype = __import__("numpy").dtype(f.metadata[b"rollway:dtype"].decode())
            # Observation leaves of 1 KiB or more are one binary cell a row (FORMAT.md).
            if shape and f in obs_cols and dtype.kind != "b" and count * dtype.itemsize >= 1024:
                if not pa.types.is_fixed_size_binary(f.type) or f.type.byte_width != count * dtype.itemsize:
                    fail(f"{f.name}: leaf {shape} of {dtype} is {f.type}, not fixed_size_binary({count * dtype.itemsize})")
                continue
            if shape and not pa.types.is_fixed_size_list(f.type):
                fail(f"{f.name}: shaped leaf {shape} is {f.type}, not a fixed-size list")
            if shape and f.type.list_size != count:
                fail(f"{f.name}: list size {f.type.list_size} for shape {shape}")
        d = table.to_pydict()
        for ep in idx["episodes"]:
            if ep["status"] == "given_up":
                continue
            s, n = ep["row_start"], ep["rows"]
            if d["episode_id"][s:s + n] != [ep["episode_id"]] * n:
                fail(f"episode {ep['episode_id']}: wrong episode_id rows")
            if d["step"][s:s + n] != list(range(n)):
                fail(f"episode {ep['episode_id']}: steps are not 0..T")
            rewards = d["rewards"][s:s + n]
            if rewards[-1] is not None or any(r is None for r in rewards[:-1]):
                fail(f"episode {ep['episode_id']}: reward nulls are not exactly the final row")
            if sum(rewards[:-1]) != ep["return"] and abs(sum(rewards[:-1]) - ep["return"]) > 1e-9 * max(1.0, abs(ep["return"])):
                fail(f"episode {ep['episode_id']}: rewards sum {sum(rewards[:-1])} != return {ep['return']}")
            last = n - 2
            if ep["status"] == "terminated" and not d["terminations"][s + last]:
                fail(f"episode {ep['episode_id']}: terminated but the flag is not set")
            total += 1
        # Frames: one per row, readable as raw bytes or LZ4 blocks.
        for key in meta["frame_keys"]:
            fdir = os.path.join(root, "frames", key.replace("/", "."))
            files = glob.glob(os.path.join(fdir, "shard-%06d.*" % idx["shard"]))
            if len(files) != 1:
                fail(f"shard {idx['shard']}: expected one frame file for {key}, found {files}")
    print(f"check_parquet: ok, {len(shards)} shards, {total} episodes, observation space {obs_space['type']}, action space {act_space['type']}")


if __name__ == "__main__":
    main(sys.argv[1])
