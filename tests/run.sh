#!/usr/bin/env bash
# The tests (the README's test command): the Rust workspace (cargo test), then the
# Python package, installed from this checkout, under pytest — both checked against
# the real Python peers (tests/python/requirements.txt). Uses $ROLLWAY_PYTHON when set
# (CI's venv); otherwise makes ./.venv with the peers. Reuses $CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

py="${ROLLWAY_PYTHON:-}"
if [ -z "$py" ]; then
    venv="$PWD/.venv"
    bash tests/python/venv.sh "$venv"
    py="$venv/bin/python"
fi
export ROLLWAY_PYTHON="$py"

echo "== rust: cargo test"
cargo test --release --workspace --locked

echo "== python: pip install . && pytest"
"$py" -m pip install --quiet --disable-pip-version-check .
"$py" -m pytest -q tests/python
