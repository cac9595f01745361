#!/usr/bin/env bash
# The Python package vs the CLI and the Python peers: Loader (numpy, torch) vs `rollway load`, np.take and
# TorchRL; DataCollector vs Minari's; make_vec vs EnvPool and Gymnasium. Needs `pip install .` in bench/.venv
# (done here); BENCH_SCRIPT picks another script (run_hosted.sh). Usage: bench/run_python.sh [python_api.py args, e.g. --reps 3 --out FILE.md]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" -r "$here/requirements-torch.txt"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$here/.."
cd "$here/.." && exec "$venv/bin/python" "bench/${BENCH_SCRIPT:-python_api.py}" "$@"
