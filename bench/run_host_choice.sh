#!/usr/bin/env bash
# Issue 48: where a run's Python envs step (process, inline, auto) vs a SyncVectorEnv loop (bench/host_choice.py).
# Usage: bench/run_host_choice.sh [--ns 1,4,8,16,64] [--reps 3] [--steps 100000] [--out FILE.md]
BENCH_SCRIPT=host_choice.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
