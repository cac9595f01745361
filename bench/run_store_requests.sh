#!/usr/bin/env bash
# Issue 54: requests per committed shard of many writers on s3:// and per follower-hour, priced (moto's server on loopback).
# Usage: bench/run_store_requests.sh [--members 8] [--episodes 4000] [--shard-s 10] [--out FILE.md]
BENCH_SCRIPT=store_requests.py exec "$(dirname "${BASH_SOURCE[0]}")/run_python.sh" "$@"
