"""The roles of a distributed run on a store, as scripts for ``python -c`` (test_store_fence.py,
test_store_stress.py, bench/store_requests.py): the primitives ``rollway.ray`` drives, without Ray.

DRIVER URL WANT [CONFIG_JSON]: takes the dataset's lease (``WANT`` "new", with the run's config to
record, or "resume"), prints "ready", and holds the lease until a line on stdin says finish (then
prints "finished") or it is killed.

MEMBER URL RUN:START:END:ID[,RUN:START:END:ID…] [HOST]: runs those parts of the prepared run, one after
the other, as one of its many writers (one process, however many parts).

``fingerprints(ds)`` is what such a run must equal a local run's in, episode by episode.
"""

DRIVER = r"""
import sys
from rollway import _rollway
url, want = sys.argv[1], sys.argv[2]
hold = _rollway.HeldDataset(url, want)
if want == "new":
    _rollway.run(sys.argv[3], out=str(hold.work_dir), prepare=True, progress=False, python=sys.executable)
    hold.flush()
print("ready", flush=True)
sys.stdin.readline()
hold.finish()
print("finished", flush=True)
"""

MEMBER = r"""
import sys
from rollway import _rollway
host = sys.argv[3] if len(sys.argv) > 3 else "auto"
for part in sys.argv[2].split(","):
    _rollway.run(None, join=(sys.argv[1], part), progress=False, python=sys.executable, host=host)
"""


def fingerprints(ds):
    """Each episode of dataset ``ds`` as the values a run written by many writers must share with a
    local run of the same config: sorted, so an episode written twice shows."""
    return sorted((e["run_index"], e["id"], e["seed"], e["length"], e["return"], e["status"]) for e in ds.episodes)
