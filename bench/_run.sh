#!/usr/bin/env bash
# Shared launcher for the bench scripts: bench/_run.sh SCRIPT "IMPORTS" [script args…]
#
# Creates/uses the venv bench/.venv, installs bench/requirements.txt into it when one of
# IMPORTS (a Python import list) is missing (and bench/$EXTRA_REQS when one of $EXTRA_IMPORTS
# is), builds nothing (build rollway first: cargo build --release), passes --rollway
# target/release/rollway unless given, and runs SCRIPT from the repo root; the markdown
# report goes to stdout, progress to stderr.
set -euo pipefail

script="$1"
imports="$2"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3}"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "creating venv $venv" >&2
    "$py" -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import $imports" >/dev/null 2>&1; then
    echo "installing $here/requirements.txt into $venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
fi
# Optional extras (run_load.sh: EXTRA_REQS=requirements-torch.txt EXTRA_IMPORTS="torch, …"),
# installed only when one of EXTRA_IMPORTS is missing; a failed install only warns (the
# script then reports that peer as skipped).
if [[ -n "${EXTRA_REQS:-}" ]] && ! "$venv/bin/python" -c "import ${EXTRA_IMPORTS:?}" >/dev/null 2>&1; then
    echo "installing $here/$EXTRA_REQS into $venv (large download)" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/$EXTRA_REQS" >&2 \
        || echo "warning: installing $EXTRA_REQS failed; continuing without it" >&2
fi

# Default binary path, resolved against the repo root so the script can be run from anywhere.
args=("${@:3}")
has_rollway=0
for a in "${args[@]+"${args[@]}"}"; do
    [[ "$a" == --rollway || "$a" == --rollway=* ]] && has_rollway=1
done
if [[ $has_rollway -eq 0 ]]; then
    args=(--rollway "${ROLLWAY:-$repo/target/release/rollway}" "${args[@]+"${args[@]}"}")
fi

cd "$repo"
exec "$venv/bin/python" "$here/$script" "${args[@]}"
