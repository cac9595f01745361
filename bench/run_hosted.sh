#!/usr/bin/env bash
# Issue 12: Python envs and policies in rollway vs Gymnasium's vector envs and PyAV. Needs the package
# in bench/.venv (installed here). Usage: bench/run_hosted.sh [hosted_envs.py args, e.g. --reps 3 --out FILE.md]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" -r "$here/requirements-torch.txt"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$here/.."
cd "$here/.." && exec "$venv/bin/python" bench/hosted_envs.py "$@"
