#!/usr/bin/env bash
# CartPole-v1 generation throughput: rollway vs Gymnasium vector envs vs EnvPool.
# Usage: bench/run_all.sh [--rollway PATH] [cartpole_throughput.py args, e.g. --quick --out FILE.md]
exec "$(dirname "${BASH_SOURCE[0]}")/_run.sh" cartpole_throughput.py "gymnasium, envpool, numpy" "$@"
