#!/usr/bin/env bash
# The extension's stubs (python/rollway/_rollway.pyi) checked against the extension installed in
# $1 (a Python with the package installed from this tree) by mypy's stubtest: a signature, class
# or export that drifted is an error. The stub is checked alone (the package's own modules are not
# type-checked here), from this tree rather than the installed copy.
set -euo pipefail
py="${1:?usage: scripts/stubtest.sh PYTHON}"
here="$(cd "$(dirname "$0")/.." && pwd)"
mypy_pin="$(grep -o 'mypy==[0-9.]*' "$here/Makefile")"
"$py" -m mypy --version >/dev/null 2>&1 || "$py" -m pip install --quiet --disable-pip-version-check "$mypy_pin"
stubs="$(mktemp -d)"
trap 'rm -rf "$stubs"' EXIT
mkdir "$stubs/rollway"
: > "$stubs/rollway/__init__.pyi"
cp "$here/python/rollway/_rollway.pyi" "$stubs/rollway/"
cd "$stubs"
MYPYPATH="$stubs" "$py" -m mypy.stubtest rollway._rollway
