#!/usr/bin/env bash
# CartPole-v1 recording throughput: rollway `run --out` vs Minari's DataCollector (hdf5, arrow).
# Usage: bench/run_record.sh [--rollway PATH] [record_throughput.py args, e.g. --quick --out FILE.md]
exec "$(dirname "${BASH_SOURCE[0]}")/_run.sh" record_throughput.py "gymnasium, minari, h5py, pyarrow, jax, numpy" "$@"
