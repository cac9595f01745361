#!/usr/bin/env bash
# Makes (or brings up to date) a venv with the real Python peers the tests check our output
# against: tests/python/venv.sh VENV. Idempotent: does nothing when VENV was made from the same
# requirement files. Used by tests/run.sh (./.venv), .ci/run (.ci-venv) and bench/run_interop.sh.
#
# The venv is ~9 GB, most of it torch's CUDA wheels (the only torch PyPI has for Linux). pip
# keeps no cache, which would be a second copy of every wheel, and installs torch on its own
# first, so its 4 GB of downloaded wheels are gone before the rest arrive: the disk holds one
# copy plus the largest batch of downloads. lerobot comes last, without its own dependencies
# (requirements-nodeps.txt says why).
set -euo pipefail
venv="${1:?usage: tests/python/venv.sh VENV}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
reqs=("$here/requirements.txt" "$here/requirements-nodeps.txt")
if cat "${reqs[@]}" | cmp -s - "$venv/.installed-requirements" 2>/dev/null; then
    exit 0
fi
mkdir -p "$venv"
df -h "$venv" | tail -1 | awk '{print "installing the Python peers; disk free: " $4}' >&2
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir)
"${pip[@]}" "$(grep -E '^torch==' "${reqs[0]}")"
"${pip[@]}" -r "${reqs[0]}"
"${pip[@]}" --no-deps -r "${reqs[1]}"
cat "${reqs[@]}" >"$venv/.installed-requirements"
