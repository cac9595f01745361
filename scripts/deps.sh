#!/usr/bin/env bash
# Installs the native libraries rollway builds against, when missing (the README's
# `make run` / `make test` and CI run this first; it is quick when all is there):
# FFmpeg's (H.264 via libx264, mp4) through ffmpeg-next, whose bindings need
# libclang; libjpeg-turbo for JPEG frames; cmake builds HDF5 from source for the
# Minari export (Debian's libhdf5-dev can be uninstallable when libcurl's -dev lags
# its runtime); python3-venv makes the test venv (Debian splits it off); strace lets
# a test check which directories are fsynced before a commit. `deps.sh test` adds
# what only the tests use: Chromium, in which a test renders `rollway report`'s page.
# `deps.sh wheel` adds what `make wheel` and its bare-system test use: nasm and the
# development files of the codecs the wheel's own minimal FFmpeg is built against
# (scripts/build-ffmpeg.sh), and debootstrap (tests/wheel/bare.sh).
# Debian/Ubuntu: apt-get (with sudo unless root). Elsewhere: says what is missing.
set -euo pipefail

apt_pkgs=(make python3-venv pkg-config clang libclang-dev cmake libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libturbojpeg0-dev strace)
for what in "$@"; do
    case "$what" in
        test) apt_pkgs+=(chromium) ;;
        wheel) apt_pkgs+=(nasm libx264-dev libdav1d-dev libaom-dev libsvtav1enc-dev debootstrap) ;;
        *) echo "usage: scripts/deps.sh [test] [wheel]" >&2; exit 2 ;;
    esac
done

if command -v dpkg >/dev/null && command -v apt-get >/dev/null; then
    missing=()
    # Installed, not merely known: a removed package keeps its config files and `dpkg -s` still succeeds.
    installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'; }
    for p in "${apt_pkgs[@]}"; do installed "$p" || missing+=("$p"); done
    [ "${#missing[@]}" -eq 0 ] && exit 0
    echo "rollway: installing ${missing[*]} (apt-get)" >&2
    sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || { echo "rollway: not root and no sudo: install ${missing[*]} as root" >&2; exit 1; }
        sudo="sudo"
    fi
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
    exit 0
fi

# Not Debian: check what the build needs and say how to get it.
missing=()
for c in pkg-config cmake clang; do command -v "$c" >/dev/null || missing+=("$c"); done
if command -v pkg-config >/dev/null; then
    for l in libavcodec libavformat libavutil libswscale libturbojpeg; do pkg-config --exists "$l" || missing+=("$l (development files)"); done
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "rollway: the build needs: ${missing[*]}" >&2
    echo "  Fedora: dnf install pkgconf cmake clang-devel ffmpeg-devel turbojpeg-devel (FFmpeg from RPM Fusion)" >&2
    echo "  macOS:  brew install pkg-config cmake llvm ffmpeg jpeg-turbo" >&2
    exit 1
fi
