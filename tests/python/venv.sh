#!/usr/bin/env bash
# Makes (or brings up to date) a venv with the real Python peers the tests check our output
# against: tests/python/venv.sh VENV. Idempotent: does nothing when VENV was made from the same
# requirement files. Used by tests/run.sh (./.venv), .ci/run (.ci-venv) and bench/run_interop.sh.
#
# The venv is ~9 GB, most of it torch's CUDA wheels (the only torch PyPI has for Linux). uv (from
# PyPI, pinned below) installs it: it downloads many wheels at once where pip takes one after the
# other, which took the venv from 15 min 41 s with pip to 6 min here (bench/RESULTS.md, "From clone
# to green"). Its cache sits inside the venv and files are hard-linked from it, so deleting the cache
# afterwards leaves one copy on disk. lerobot comes last, without its own dependencies
# (requirements-nodeps.txt says why).
set -euo pipefail
venv="${1:?usage: tests/python/venv.sh VENV}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# docs/requirements.txt is included by requirements.txt: listed here so that a change to it remakes the venv too.
reqs=("$here/requirements.txt" "$here/requirements-nodeps.txt" "$here/../../docs/requirements.txt")
uv_version="0.13.9"
if cat "${reqs[@]}" | cmp -s - "$venv/.installed-requirements" 2>/dev/null; then
    exit 0
fi
mkdir -p "$venv"
df -h "$venv" | tail -1 | awk '{print "installing the Python peers; disk free: " $4}' >&2
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "uv==$uv_version"
cache="$venv/.uv-cache"
# --compile-bytecode, as pip does: without the .pyc files every new Python (a Ray worker, a hosted env's
# process) compiles what it imports, and the tests that time a restart get slower than they allow.
uv=("$venv/bin/uv" pip install --quiet --python "$venv/bin/python" --cache-dir "$cache" --link-mode hardlink --compile-bytecode)
"${uv[@]}" -r "${reqs[0]}"
"${uv[@]}" --no-deps -r "${reqs[1]}"
rm -rf "$cache"
cat "${reqs[@]}" >"$venv/.installed-requirements"
