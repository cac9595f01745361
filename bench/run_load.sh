#!/usr/bin/env bash
# Training-loader throughput (shuffled 16-step windows, batch 256): rollway `load` vs numpy gather, TorchRL, Minari.
# Usage: bench/run_load.sh [--rollway PATH] [load_throughput.py args, e.g. --quick --out FILE.md]
EXTRA_REQS=requirements-torch.txt EXTRA_IMPORTS="torch, torchrl, tensordict" exec "$(dirname "${BASH_SOURCE[0]}")/_run.sh" load_throughput.py "numpy, pyarrow, gymnasium, minari, h5py, jax" "$@"
