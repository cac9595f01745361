#!/usr/bin/env bash
# Issue 32: the same PPO on rollway's rollout engine and on CleanRL's Gymnasium loops (bench/ppo_cartpole.py).
# Usage: bench/run_ppo.sh [--seeds 1,2,3,4,5] [--systems ...] [--steps-total N] [--out FILE.md]
BENCH_SCRIPT=ppo_cartpole.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
