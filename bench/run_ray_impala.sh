#!/usr/bin/env bash
# Issue 34: an IMPALA-style learner fed by rollway.ray.Rollout vs a plain MineStudio-style Ray actor pool,
# slow Python env, two-node local cluster (bench/ray_impala.py), with the CI's peers (bench/_peers.sh).
# Usage: bench/run_ray_impala.sh [--reps 3] [--seconds 20] [--envs 8] [--lag 2] [--env-ms 2] [--out FILE.md]
exec bash "$(dirname "${BASH_SOURCE[0]}")/_peers.sh" ray_impala.py "$@"
