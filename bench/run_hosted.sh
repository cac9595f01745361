#!/usr/bin/env bash
# Issue 12: Python envs and policies in rollway vs Gymnasium's vector envs and PyAV (bench/hosted_envs.py).
# Usage: bench/run_hosted.sh [hosted_envs.py args, e.g. --reps 3 --out FILE.md]
BENCH_SCRIPT=hosted_envs.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
