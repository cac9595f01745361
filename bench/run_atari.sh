#!/usr/bin/env bash
# Issue 55: Atari Pong with the standard preprocessing, rollway vs EnvPool and Gymnasium, with ALE's floor (bench/atari.py).
# Usage: bench/run_atari.sh [--envs 8,32,64] [--reps 3] [--seconds 10] [--out FILE.md]
BENCH_SCRIPT=atari.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
