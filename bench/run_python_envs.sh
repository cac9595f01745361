#!/usr/bin/env bash
# Issue 67: Python envs in a rollout with host="auto" vs Gymnasium's Sync/AsyncVectorEnv (bench/python_envs.py).
# Usage: bench/run_python_envs.sh [--reps 3] [--cartpole 1,4,16,64,256] [--atari 8,32] [--out FILE.md]
BENCH_SCRIPT=python_envs.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
