#!/usr/bin/env bash
# Issue 45: a following loader's commit-to-first-sample time on s3:// (moto's server on loopback) vs local disk.
# Usage: bench/run_s3_follow.sh [--reps 15] [--out FILE.md]
BENCH_SCRIPT=s3_follow.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
