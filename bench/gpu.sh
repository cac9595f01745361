#!/usr/bin/env bash
# Issue 56, on the device machine (one GPU, 16 cores, Python 3.12 with torch; no network): installs
# the wheels bench/gpu_wheels.sh put in .whl/ into a target directory (nothing is built there), then
# runs bench/gpu.py, which writes one JSON ($OUT/gpu.json) in at most 8 minutes. Arguments go to
# bench/gpu.py (e.g. --parts checks,inference). Rehearse here first: python bench/gpu.py --cpu.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
site="${TMPDIR:-/tmp}/rollway-gpu-site"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-.}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 || true
timeout 480 python3 bench/gpu.py --out "$out/gpu.json" "$@" 2>&1 | tee "$out/gpu.log"
