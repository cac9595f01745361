#!/usr/bin/env bash
# Run by tests/wheel/bare.sh inside the bare root, as a user who is not root, in $HOME, with
# the wheel and tests/wheel/inside.py beside it: inside.sh WHEEL_FILE. No activation of the
# venv: `venv/bin/rollway` must work as it is.
set -euo pipefail
cd "$HOME"
now() { date +%s.%N; }
python3 -m venv venv
t0="$(now)"
venv/bin/pip install --quiet --disable-pip-version-check "./$1" numpy gymnasium
t1="$(now)"
venv/bin/rollway --version
mkdir job
(cd job && ../venv/bin/rollway run)
t2="$(now)"
venv/bin/rollway verify job/rollway-data/PixelMine-v0-000
venv/bin/python inside.py job/rollway-data/PixelMine-v0-000 src-data/PixelMine-v0-000
# The Getting started page, every block in order as a new user runs it, in this fresh venv (its
# `pip install` of the wheel is the one above): the page's commands work from the wheel alone.
venv/bin/python docs_pages.py getting-started.md
python3 -c "import sys; a, b, c = map(float, sys.argv[1:]); print(f'pip install: {b - a:.1f} s; pip install to the default job finished: {c - a:.1f} s')" \
    "$t0" "$t1" "$t2" | tee timing.txt
