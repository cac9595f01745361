#!/usr/bin/env bash
# Issue 15: import/export vs LeRobot's and Minari's own paths (bench/interop.py), with the CI's peers
# (bench/_peers.sh). Usage: bench/run_interop.sh [--reps 3 --out FILE.md]
exec bash "$(dirname "${BASH_SOURCE[0]}")/_peers.sh" interop.py "$@"
