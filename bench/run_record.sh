#!/usr/bin/env bash
# Run the CartPole-v1 episode-recording comparison (rollway `run --out` vs Minari DataCollector).
#
# Usage: bench/run_record.sh [--rollway PATH] [any other record_throughput.py args, e.g. --quick --out bench/RECORD_RESULTS.md]
#
# Creates/uses the venv bench/.venv, installs bench/requirements.txt into it if missing,
# builds nothing (build rollway first: cargo build --release), and prints the markdown
# report on stdout (progress goes to stderr).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "creating venv $venv" >&2
    "$py" -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import gymnasium, minari, h5py, pyarrow, jax, numpy' >/dev/null 2>&1; then
    echo "installing $here/requirements.txt into $venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
fi

# Default binary path, resolved against the repo root so the script can be run from anywhere.
args=("$@")
has_rollway=0
for a in "${args[@]+"${args[@]}"}"; do
    [[ "$a" == --rollway || "$a" == --rollway=* ]] && has_rollway=1
done
if [[ $has_rollway -eq 0 ]]; then
    args=(--rollway "${ROLLWAY:-$repo/target/release/rollway}" "${args[@]+"${args[@]}"}")
fi

cd "$repo"
exec "$venv/bin/python" "$here/record_throughput.py" "${args[@]}"
