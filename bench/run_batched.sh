#!/usr/bin/env bash
# Issue 69: JAX envs (gymnax, Craftax) stepped as a batch by rollway, against the env's own jitted,
# vmapped step and Minari's DataCollector (bench/batched.py).
# Usage: bench/run_batched.sh [--envs gymnax:Breakout-MinAtar=256,1024 craftax:Craftax-Classic-Symbolic-v1=256] [--reps 2] [--seconds 10] [--out FILE.md]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements-batched.txt"
# gymnax pins gymnasium<1.4 and brings plotting; flax is needed for flax.struct only.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps gymnax==1.0.1 craftax==1.6.1 flax==0.12.8 seaborn==0.13.2
"$venv/bin/pip" install --quiet --disable-pip-version-check "$here/.."
# The dataset writer alone, the cap of recording (benchlib.writer_ceiling runs it).
(cd "$here/.." && cargo build --release --locked --quiet -p rollway-store --example writer_ceiling)
cd "$here" && exec "$venv/bin/python" batched.py "$@"
