#!/usr/bin/env bash
# Runs a bench script against the CI's Python peers (tests/python/requirements.txt: lerobot pins
# numpy and torch below bench/.venv's; ray), in their own venv, bench/.venv-interop, or the one
# BENCH_VENV names (e.g. .ci-venv), with this checkout's package installed.
# Usage: bench/_peers.sh SCRIPT.py [ARGS…]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${BENCH_VENV:-$here/.venv-interop}"
bash "$here/../tests/python/venv.sh" "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$here/.."
script="$1"
shift
cd "$here/.." && exec "$venv/bin/python" "bench/$script" "$@"
