"""Reads a rollway dataset's steps/ the way third-party tools do — a glob over the
Parquet files, knowing nothing of rollway's index — and checks that every row read
belongs to a committed episode, complete and once (issue 16).

DIR may be an `s3://bucket/prefix` URL (issue 45): then pyarrow reads the store named by
AWS_ENDPOINT_URL and the AWS_* keys, the way a user's job would, and DuckDB (whose httpfs
extension is a download) is left out.

Usage: glob_reader.py DIR [--watch PID]
  once (default): one read; prints JSON {"episodes": {id: [rows, reward_sum]}, ...}
  --watch PID:    reads in a loop until process PID exits; prints JSON with counts.
Exit 1 (with the offending rows named) on any row of an uncommitted episode.
"""
import glob
import json
import math
import os
import sys
import time

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

try:
    import duckdb
except ImportError:  # the check runs with pyarrow alone where DuckDB is missing
    duckdb = None


def filesystem(root):
    """pyarrow's filesystem for `root` and the path inside it."""
    if not root.startswith("s3://"):
        return pafs.LocalFileSystem(), root
    endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
    scheme, _, host = endpoint.partition("://")
    s3 = pafs.S3FileSystem(
        endpoint_override=host or None,
        scheme=scheme or "https",
        access_key=os.environ.get("AWS_ACCESS_KEY_ID"),
        secret_key=os.environ.get("AWS_SECRET_ACCESS_KEY"),
        region=os.environ.get("AWS_REGION", "us-east-1"),
    )
    return s3, root[len("s3://") :]


def listed(root, folder, suffix):
    """Files of `root/folder` ending in `suffix`, as a glob sees them."""
    fs, base = filesystem(root)
    infos = fs.get_file_info(pafs.FileSelector(f"{base}/{folder}", allow_not_found=True))
    return fs, sorted(i.path for i in infos if i.type == pafs.FileType.File and i.base_name.endswith(suffix))


def committed(root):
    """Episode ids whose index entry exists now (read after the glob: "at that moment or later")."""
    ids = {}
    fs, paths = listed(root, "index", ".json")
    for p in paths:
        if not (os.path.basename(p).startswith("shard-")):
            continue
        try:
            with fs.open_input_stream(p) as f:
                idx = json.loads(f.read())
        except (OSError, ValueError):
            continue  # renamed into place atomically: a partial read is an OS-level race only
        for e in idx["episodes"]:
            ids[e["episode_id"]] = e
    return ids


def fail(msg):
    print(f"glob_reader: {msg}", file=sys.stderr)
    sys.exit(1)


def per_episode(who, groups):
    """{id: (rows, reward sum)} from (id, rows, distinct steps, reward sum) per episode, failing on
    a step read twice. The grouping runs inside pyarrow or DuckDB, as a user's query would: a row-by-row
    loop in Python was most of the Rust suite's time (issue 66)."""
    out = {}
    for i, rows, distinct, total in groups:
        if rows != distinct:
            fail(f"{who} read {rows} rows of episode {i} but {distinct} distinct steps: a step read twice")
        out[i] = (rows, 0.0 if total is None else total)
    return out


def read_arrow(root):
    fs, files = listed(root, "steps", ".parquet")
    if not files:
        return {}
    t = pads.dataset(files, format="parquet", filesystem=fs).to_table(columns=["episode_id", "step", "rewards"])
    t = t.set_column(2, "rewards", t.column("rewards").cast(pa.float64()))
    g = t.group_by("episode_id").aggregate([("step", "count"), ("step", "count_distinct"), ("rewards", "sum")])
    cols = [g.column(c).to_pylist() for c in ("episode_id", "step_count", "step_count_distinct", "rewards_sum")]
    return per_episode("pyarrow", zip(*cols))


def read_duckdb(root):
    if duckdb is None or root.startswith("s3://") or not glob.glob(os.path.join(root, "steps", "*.parquet")):
        return None
    rows = duckdb.sql(f"SELECT episode_id, count(*), count(DISTINCT step), sum(CAST(rewards AS DOUBLE)) "
                      f"FROM read_parquet('{root}/steps/*.parquet') GROUP BY episode_id").fetchall()
    return per_episode("duckdb", rows)


def same(a, b):
    """The two readers' episodes agree: the same rows, and sums equal up to their summation order."""
    return a.keys() == b.keys() and all(a[i][0] == b[i][0] and math.isclose(a[i][1], b[i][1], rel_tol=1e-9, abs_tol=1e-9) for i in a)


def check(root, eps, who):
    index = committed(root)
    for i, (rows, total) in eps.items():
        e = index.get(i)
        if e is None:
            fail(f"{who} read {rows} rows of episode {i}, which has no index entry")
        if rows != e["rows"]:
            fail(f"{who} read {rows} rows of episode {i}, its index entry has {e['rows']}")
        if not math.isclose(total, e["return"], rel_tol=1e-9, abs_tol=1e-9):
            fail(f"{who}: episode {i} rewards sum to {total}, the index says {e['return']}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by the test) is gone for our purposes.
    try:
        return open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def main():
    root = sys.argv[1]
    if "--watch" not in sys.argv:
        eps = read_arrow(root)
        check(root, eps, "pyarrow")
        db = read_duckdb(root)
        if db is not None:
            check(root, db, "duckdb")
            if not same(db, eps):
                fail("duckdb and pyarrow read different rows")
        print(json.dumps({"episodes": {str(i): list(v) for i, v in eps.items()}}))
        return
    pid = int(sys.argv[sys.argv.index("--watch") + 1])
    samples = nonempty = duck = 0
    most = 0
    while alive(pid):
        eps = read_arrow(root)
        check(root, eps, "pyarrow")
        samples += 1
        nonempty += bool(eps)
        most = max(most, len(eps))
        if duckdb is not None and samples % 4 == 0:
            db = read_duckdb(root)
            if db is not None:
                check(root, db, "duckdb")
                duck += 1
        time.sleep(0.01)
    print(json.dumps({"samples": samples, "nonempty": nonempty, "duckdb_samples": duck, "most_episodes": most}))


if __name__ == "__main__":
    main()
