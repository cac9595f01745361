#!/usr/bin/env bash
# Issue 32: PPO with a CNN on PixelMine-v0 pixels, rollway's rollout engine vs CleanRL's Gymnasium loops (bench/ppo_pixels.py).
# Usage: bench/run_ppo_pixels.sh [--seeds 1,2] [--systems ...] [--steps-total N] [--out FILE.md]
BENCH_SCRIPT=ppo_pixels.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
