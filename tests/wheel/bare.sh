#!/usr/bin/env bash
# Issue 33's proof (`make test-wheel`, and CI): the wheel on a bare system. Usage:
#   tests/wheel/bare.sh dist/rollway-*.whl
#
# Builds a minimal Debian root with debootstrap (from the system's own apt archive: no network
# beyond the package registries) holding python3 and python3-venv and nothing of FFmpeg,
# libjpeg-turbo, HDF5, a compiler or cmake (checked), and, inside it as a user who is not root,
# runs tests/wheel/inside.sh: a fresh venv, `pip install` of the wheel with numpy and gymnasium
# from PyPI, the default job and `rollway verify`, the Getting started page's every block in that
# venv (tests/python/docs_pages.py), and tests/wheel/inside.py (import, a hosted
# Gymnasium run, the H.264 frames read back, a Minari export, and the default job's episodes
# against the source build's: target/release/rollway runs the same job with the same seed
# outside, and every episode array must match, the decoded frames' match printed). Prints the
# wheel's size and the time from `pip install` to the first finished job. Needs root
# (debootstrap, chroot) and a built target/release/rollway. Bounded: 15 min for debootstrap, 15 for
# what runs inside.
set -euo pipefail
wheel="$(cd "$(dirname "${1:?usage: tests/wheel/bare.sh WHEEL}")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
case "$target" in /*) ;; *) target="$here/$target" ;; esac
[ "$(id -u)" = 0 ] || { echo "tests/wheel/bare.sh needs root (debootstrap and chroot)" >&2; exit 2; }

# The pristine root, made once per target dir (debootstrap: ~2 min) and unpacked fresh for each run.
suite="$(. /etc/os-release && echo "$VERSION_CODENAME")"
mirror="$(grep -h -m1 -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}')"
mirror="${mirror:-http://deb.debian.org/debian}"
pristine="$target/bare-$suite.tar"
if [ ! -f "$pristine" ]; then
    build="$(mktemp -d)" && chmod 755 "$build"
    echo "== debootstrap $suite (minbase + python3, python3-venv) from $mirror" >&2
    timeout 900 debootstrap --variant=minbase --include=python3,python3-venv "$suite" "$build" "$mirror" >&2
    tar -C "$build" -cf "$pristine.part" . && mv "$pristine.part" "$pristine"
    rm -rf "$build"
fi

root="$(mktemp -d)"
cleanup() {
    # Processes the user left behind would keep the mounts busy: kill them, then unmount (lazily
    # if need be), and delete the root only when nothing is mounted in it any more.
    pkill -KILL -u 4242 2>/dev/null || true
    for m in dev/shm proc; do umount "$root/$m" 2>/dev/null || umount -l "$root/$m" 2>/dev/null || true; done
    if grep -q " $root/" /proc/mounts; then echo "left $root in place: still mounted" >&2; else rm -rf "$root"; fi
}
trap cleanup EXIT
tar -C "$root" -xf "$pristine"
# mktemp makes 0700 directories: the user inside must be able to enter its own "/".
chmod 755 "$root"

echo "== the root is bare" >&2
bare_lib="$root/usr/lib/x86_64-linux-gnu"
for lib in libavcodec libavformat libswscale libx264 libturbojpeg libjpeg libhdf5 libSvtAv1Enc libaom libdav1d; do
    if compgen -G "$bare_lib/$lib*" >/dev/null; then echo "the bare root has $lib" >&2; exit 1; fi
done
for tool in cc gcc clang cmake pkg-config; do
    if chroot "$root" sh -c "command -v $tool" >/dev/null; then echo "the bare root has $tool" >&2; exit 1; fi
done

mount -t proc proc "$root/proc"
mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This machine reaches PyPI through a TLS-inspecting proxy whose CA pip is pointed at
# ($PIP_CERT); the bare root gets that one file, no package.
pip_env=()
for v in PIP_CERT PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_DEFAULT_TIMEOUT; do
    [ -n "${!v:-}" ] || continue
    pip_env+=("$v=${!v}")
    if [ "$v" = PIP_CERT ]; then mkdir -p "$root$(dirname "$PIP_CERT")" && cp "$PIP_CERT" "$root$PIP_CERT"; fi
done
chroot "$root" useradd --create-home --uid 4242 user
home="$root/home/user"
cp "$wheel" "$here/tests/wheel/inside.sh" "$here/tests/wheel/inside.py" "$here/crates/onnx/tests/data/mlp.onnx" "$home/"
# Issue 70: the Getting started page, walked as a reader would (tests/python/docs_pages.py runs its blocks).
cp "$here/tests/python/docs_pages.py" "$here/docs/getting-started.md" "$home/"
# The source build's default job (same job, same seed), for inside.py to compare with the wheel's.
mkdir "$home/src-data-run" && (cd "$home/src-data-run" && "$target/release/rollway" run --quiet >/dev/null)
mv "$home/src-data-run/rollway-data" "$home/src-data" && rmdir "$home/src-data-run"
chown -R 4242:4242 "$home"

echo "== inside the bare root, as a user: tests/wheel/inside.sh" >&2
timeout 900 chroot --userspec=4242:4242 "$root" env -i HOME=/home/user PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    "${pip_env[@]}" bash /home/user/inside.sh "$(basename "$wheel")"

echo "wheel: $(basename "$wheel") $(du -k "$wheel" | cut -f1) KiB"
