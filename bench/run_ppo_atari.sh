#!/usr/bin/env bash
# Issue 55: CleanRL's Atari PPO on rollway vs CleanRL's loop on EnvPool and Gymnasium (bench/ppo_atari.py).
# Usage: bench/run_ppo_atari.sh [--seeds 1] [--systems rollway,envpool] [--steps-total 16384] [--out FILE.md]
BENCH_SCRIPT=ppo_atari.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
