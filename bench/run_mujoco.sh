#!/usr/bin/env bash
# Issue 55: MuJoCo HalfCheetah, rollway vs EnvPool and Gymnasium's vector envs (bench/halfcheetah.py).
# Usage: bench/run_mujoco.sh [--envs 8,32] [--reps 3] [--seconds 10] [--out FILE.md]
BENCH_SCRIPT=halfcheetah.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
