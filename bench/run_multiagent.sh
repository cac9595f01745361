#!/usr/bin/env bash
# Issue 68: PettingZoo envs, rollway vs SuperSuit and PufferLib 3 (bench/multiagent.py).
# Usage: bench/run_multiagent.sh [--envs 8,32] [--reps 3] [--seconds 10] [--games pistonball,simple_spread,kaz] [--out FILE.md]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements-multiagent.txt"
# pufferlib-core without its dependencies: its vector module needs numpy, gymnasium and psutil only.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps pufferlib-core==3.0.23
"$venv/bin/pip" install --quiet --disable-pip-version-check "$here/.."
# The dataset writer alone, the cap of recording (benchlib.writer_ceiling runs it).
(cd "$here/.." && cargo build --release --locked --quiet -p rollway-store --example writer_ceiling)
cd "$here" && exec "$venv/bin/python" multiagent.py "$@"
