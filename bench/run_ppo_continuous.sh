#!/usr/bin/env bash
# Issue 55: CleanRL's continuous PPO on rollway vs CleanRL's loop on Gymnasium's vector envs (bench/ppo_continuous.py).
# Usage: bench/run_ppo_continuous.sh [--env gym:HalfCheetah-v5] [--seeds 1,2] [--steps-total 20480] [--out FILE.md]
BENCH_SCRIPT=ppo_continuous.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
