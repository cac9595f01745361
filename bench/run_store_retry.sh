#!/usr/bin/env bash
# Issue 72: how long one request to s3:// keeps trying (16 retries, jittered backoff) before it gives up.
# Usage: bench/run_store_retry.sh [--reps 10] [--out FILE.md]
BENCH_SCRIPT=store_retry.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
