#!/usr/bin/env bash
# Issue 56: the wheels bench/gpu.sh installs on the device machine, into .whl/ (ignored by git; the
# device tool carries it: `carry: [".whl"]`). The machine has Python 3.12, torch, numpy, OpenCV and
# cloudpickle but no network, no gymnasium and no rollway: this fetches gymnasium, its one missing
# need and ale-py (ROMs inside) for CPython 3.12, and builds rollway's self-contained abi3 wheel
# (scripts/wheel.sh: FFmpeg static; about 30 MB of the 64 MiB a device call may carry).
#
#   bash bench/gpu_wheels.sh            # then, on the device: bash bench/gpu.sh
#
# The device tool's call (the command is at most 2,000 characters; .whl travels as a carried path):
#   run(command="bash bench/gpu.sh", carry=[".whl"], timeout_s=540)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rm -rf .whl && mkdir -p .whl
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    gymnasium==1.4.0 farama-notifications==0.0.4 ale-py==0.12.1
# ROLLWAY_WHEEL: a wheel already built from this checkout (make wheel, CI's dist/), instead of building one.
if [ -n "${ROLLWAY_WHEEL:-}" ]; then
    cp "$ROLLWAY_WHEEL" .whl/
else
    bash scripts/wheel.sh dist >&2
    cp "$(ls -t dist/rollway-*-abi3-*.whl | head -1)" .whl/
fi
du -ch .whl/* | tail -1
