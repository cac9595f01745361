#!/usr/bin/env bash
# Issue 45: recording and loading on s3:// (moto's server on loopback) vs local disk (bench/s3.py).
# Usage: bench/run_s3.sh [--reps 3] [--cartpole-episodes 20000] [--pixel-episodes 200] [--out FILE.md]
BENCH_SCRIPT=s3.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
