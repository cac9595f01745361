#!/usr/bin/env bash
# Issue 13: rollway on Ray vs rollway local, and vs a MineStudio-shaped Ray actor pool
# (bench/ray_backend.py), with the CI's peers (bench/_peers.sh).
# Usage: bench/run_ray.sh [--reps 3 --episodes 2000 --per-worker 16]
exec bash "$(dirname "${BASH_SOURCE[0]}")/_peers.sh" ray_backend.py "$@"
