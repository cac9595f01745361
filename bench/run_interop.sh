#!/usr/bin/env bash
# Issue 15: import/export vs LeRobot's and Minari's own paths (bench/interop.py). Its peers are the CI's
# (tests/python/requirements.txt: lerobot pins numpy and torch below bench/.venv's), in their own venv,
# bench/.venv-interop, or the one BENCH_VENV names (e.g. .ci-venv). Usage: bench/run_interop.sh [--reps 3 --out FILE.md]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${BENCH_VENV:-$here/.venv-interop}"
bash "$here/../tests/python/venv.sh" "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$here/.."
cd "$here/.." && exec "$venv/bin/python" bench/interop.py "$@"
