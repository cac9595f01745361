#!/usr/bin/env bash
# Issue 32: hosted Python envs at small N in a rollout, inline and in a process, vs a SyncVectorEnv loop (bench/rollout_hosted.py).
# Usage: bench/run_hosted_rollout.sh [--envs 1,4,8,16,64] [--reps 5] [--out FILE.md]
BENCH_SCRIPT=rollout_hosted.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
