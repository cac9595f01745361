#!/usr/bin/env bash
# Sample Factory's own venv for the PPO bench (bench/ppo_cartpole.py's sf-* systems): it pins
# gymnasium < 1 and numpy < 2, below the test venv's. torch is not downloaded again: the test
# venv's (.venv, same interpreter) is linked in, with its metadata, so pip sees it installed
# (torch 2.10 runs on numpy 1.26). Creates bench/.venv-sf (or $SF_VENV); prints its python.
# Usage: bash bench/sf_venv.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
base="${BENCH_BASE_VENV:-$here/../.venv}"
venv="${SF_VENV:-$here/.venv-sf}"
interp="$("$base/bin/python" -c 'import sys; print(sys.base_prefix)')/bin/python3"
[ -x "$venv/bin/python" ] || "$interp" -m venv "$venv"
from="$("$base/bin/python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')"
to="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
shopt -s nullglob
for p in "$from"/torch "$from"/torchgen "$from"/functorch "$from"/triton "$from"/nvidia "$from"/cuda \
         "$from"/torch-*.dist-info "$from"/triton-*.dist-info "$from"/nvidia_*.dist-info "$from"/cuda_*.dist-info; do
  ln -sfn "$p" "$to/$(basename "$p")"
done
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "sample-factory==2.1.1" psutil >&2
echo "$venv/bin/python"
