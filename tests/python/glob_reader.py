"""Reads a rollway dataset's steps/ the way third-party tools do — a glob over the
Parquet files, knowing nothing of rollway's index — and checks that every row read
belongs to a committed episode, complete and once (issue 16).

DIR may be an `s3://bucket/prefix` URL (issue 45): then pyarrow reads the store named by
AWS_ENDPOINT_URL and the AWS_* keys, the way a user's job would, and DuckDB (whose httpfs
extension is a download) is left out.

Usage: glob_reader.py DIR [--watch PID]
  once (default): one read; prints JSON {"episodes": {id: [rows, reward_sum]}, ...}
  --watch PID:    reads in a loop until process PID exits; prints JSON with counts.
Exit 1 (with the offending rows named) on any row of an uncommitted episode: one whose index
entry was not there by the moment just after the glob was listed. The index is read just before
the listing too: an episode committed by then is proven committed before its rows were seen
(counted as "proven"); one committed between the two reads ("gap") raced the listing, so its
rows alone could not show a publish that came before its commit. The gap is one LIST request.
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
        # A store busy with eight writers answers slowly: patience, not a false verdict.
        connect_timeout=10,
        retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=10),
    )
    return s3, root[len("s3://") :]


def listed(root, folder, suffix):
    """Files of `root/folder` ending in `suffix`, as a glob sees them."""
    fs, base = filesystem(root)
    infos = fs.get_file_info(pafs.FileSelector(f"{base}/{folder}", allow_not_found=True))
    return fs, sorted(i.path for i in infos if i.type == pafs.FileType.File and i.base_name.endswith(suffix))


class Index:
    """The episodes whose index entry exists, read as often as asked: an index object is created
    once and never changed, so each is fetched once and kept."""

    # Tries to read a listed index object before the check gives up on the store (not the protocol).
    TRIES = 8

    def __init__(self, root):
        self.root, self.seen, self.errors = root, {}, []

    def read(self):
        """{episode id: index entry} of every shard committed now."""
        fs, paths = listed(self.root, "index", ".json")
        for p in paths:
            if p not in self.seen and os.path.basename(p).startswith("shard-"):
                self.seen[p] = self.fetch(fs, p)
        return {e["episode_id"]: e for p in paths for e in self.seen.get(p, [])}

    def fetch(self, fs, path):
        """The episodes of the listed index object `path`. An index object is whole once listed
        (an atomic PUT, or a rename locally): one that is no JSON fails the check; one the store
        does not answer for is tried again, and never taken as absent, which would blame the
        protocol for a row of a shard whose index could not be read."""
        for attempt in range(self.TRIES):
            try:
                with fs.open_input_stream(path) as f:
                    text = f.read()
            except OSError as e:
                self.errors.append(f"{path}: {e!r}")
                time.sleep(min(0.1 * 2**attempt, 5))
                continue
            try:
                return json.loads(text)["episodes"]
            except (ValueError, KeyError) as e:
                fail(f"index object {path} is listed but is no whole index: {e!r}")
        fail(f"index object {path} is listed, but the store did not answer {self.TRIES} reads of it "
             f"(not a verdict on the commit protocol): {self.errors[-3:]}")


WHERE = {}  # root and Index of this run, for the diagnosis a failure prints


def diagnose(episode):
    """Where episode's rows are and what the store's index says of their shards, for the failure."""
    root, index = WHERE["root"], WHERE["index"]
    fs, files = listed(root, "steps", ".parquet")
    out = []
    for f in files:
        t = pads.dataset([f], format="parquet", filesystem=fs).to_table(columns=["episode_id"])
        if episode in set(t.column("episode_id").to_pylist()):
            name = os.path.basename(f).split(".")[0] + ".json"
            ipath = f.rsplit("/steps/", 1)[0] + "/index/" + name
            try:
                with fs.open_input_stream(ipath) as h:
                    idx = json.loads(h.read())
                said = f"index {name}: episodes {[e['episode_id'] for e in idx['episodes']]}, files {idx['files']}"
            except (OSError, ValueError) as e:
                said = f"index {name} unreadable: {e!r}"
            out.append(f"  in {f} ({fs.get_file_info(f).size} bytes); {said}; cached: {ipath in index.seen}")
    return "\n".join(out + [f"  index read errors: {index.errors[-10:]}"])


def fail(msg, episode=None):
    if episode is not None and WHERE:
        msg += "\n" + diagnose(episode)
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


def read_arrow(root, index):
    """The steps/ glob's episodes, with the index read just before the glob is listed and just after."""
    before = index.read()
    fs, files = listed(root, "steps", ".parquet")
    after = index.read()
    if not files:
        return {}, before, after
    t = pads.dataset(files, format="parquet", filesystem=fs).to_table(columns=["episode_id", "step", "rewards"])
    t = t.set_column(2, "rewards", t.column("rewards").cast(pa.float64()))
    g = t.group_by("episode_id").aggregate([("step", "count"), ("step", "count_distinct"), ("rewards", "sum")])
    cols = [g.column(c).to_pylist() for c in ("episode_id", "step_count", "step_count_distinct", "rewards_sum")]
    return per_episode("pyarrow", zip(*cols)), before, after


def read_duckdb(root, index):
    if duckdb is None or root.startswith("s3://") or not glob.glob(os.path.join(root, "steps", "*.parquet")):
        return None
    before = index.read()
    rows = duckdb.sql(f"SELECT episode_id, count(*), count(DISTINCT step), sum(CAST(rewards AS DOUBLE)) "
                      f"FROM read_parquet('{root}/steps/*.parquet') GROUP BY episode_id").fetchall()
    return per_episode("duckdb", rows), before, index.read()


def same(a, b):
    """The two readers' episodes agree: the same rows, and sums equal up to their summation order."""
    return a.keys() == b.keys() and all(a[i][0] == b[i][0] and math.isclose(a[i][1], b[i][1], rel_tol=1e-9, abs_tol=1e-9) for i in a)


def check(eps, before, after, who):
    """Fails on a row of an episode not committed by the time the glob was listed; returns how many
    episodes were committed before it was (proven so) and how many only by just after it (the gap:
    their commit and the listing raced, so these alone cannot show a publish that came first)."""
    proven = gap = 0
    for i, (rows, total) in eps.items():
        e = before.get(i)
        proven += e is not None
        if e is None and (e := after.get(i)) is not None:
            gap += 1
        if e is None:
            fail(f"{who} read {rows} rows of episode {i}, which has no index entry", i)
        if rows != e["rows"]:
            fail(f"{who} read {rows} rows of episode {i}, its index entry has {e['rows']}")
        if not math.isclose(total, e["return"], rel_tol=1e-9, abs_tol=1e-9):
            fail(f"{who}: episode {i} rewards sum to {total}, the index says {e['return']}")
    return proven, gap


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
    root, index = sys.argv[1], Index(sys.argv[1])
    WHERE.update(root=root, index=index)
    if "--watch" not in sys.argv:
        eps, before, after = read_arrow(root, index)
        check(eps, before, after, "pyarrow")
        db = read_duckdb(root, index)
        if db is not None:
            check(*db, "duckdb")
            if not same(db[0], eps):
                fail("duckdb and pyarrow read different rows")
        print(json.dumps({"episodes": {str(i): list(v) for i, v in eps.items()}}))
        return
    pid = int(sys.argv[sys.argv.index("--watch") + 1])
    counts = dict(samples=0, nonempty=0, duckdb_samples=0, most_episodes=0, proven=0, gap=0)
    while alive(pid):
        eps, before, after = read_arrow(root, index)
        proven, gap = check(eps, before, after, "pyarrow")
        counts["samples"] += 1
        counts["nonempty"] += bool(eps)
        counts["most_episodes"] = max(counts["most_episodes"], len(eps))
        counts["proven"] += proven
        counts["gap"] += gap
        if duckdb is not None and counts["samples"] % 4 == 0:
            db = read_duckdb(root, index)
            if db is not None:
                check(*db, "duckdb")
                counts["duckdb_samples"] += 1
        time.sleep(0.01)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
