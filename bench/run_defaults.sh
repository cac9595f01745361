#!/usr/bin/env bash
# rollway's default flags (calibrated) vs the best hand-tuned flags on CartPole and PixelMine (issue 14).
# Usage: bench/run_defaults.sh [--rollway PATH] [defaults.py args, e.g. --reps 3 --out FILE.md]
exec "$(dirname "${BASH_SOURCE[0]}")/_run.sh" defaults.py "json" "$@"
