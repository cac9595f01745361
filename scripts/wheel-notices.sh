#!/usr/bin/env bash
# The notices of what the wheel ships (scripts/wheel.sh): wheel-notices.sh UNPACKED_WHEEL FFMPEG_PREFIX DEST.
# Writes into DEST: rollway's LICENSE; FFmpeg's (built by scripts/build-ffmpeg.sh, statically
# linked: GPL-2.0-or-later with x264); HDF5's (built from the hdf5-metno-src crate, statically
# linked); the Debian copyright file of each library auditwheel copied into rollway.libs/
# (found from the file it was copied from); and the licenses of the Rust crates compiled in,
# as `cargo metadata` states them. Fails when a bundled library's notice cannot be found, so
# no library ships without one.
set -euo pipefail
root="${1:?unpacked wheel}" prefix="${2:?ffmpeg prefix}" dest="${3:?destination}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$dest"
cp "$here/LICENSE" "$dest/LICENSE"
cp "$prefix/share/licenses/ffmpeg/"* "$dest/" 2>/dev/null || { echo "no FFmpeg notices in $prefix" >&2; exit 1; }

# HDF5: the source crate the build compiled (its version from Cargo.lock).
hdf5_src="$(awk '/^name = "hdf5-metno-src"/{getline; gsub(/"/,"",$3); print $3}' "$here/Cargo.lock")"
copying="$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"hdf5-metno-src-$hdf5_src"/ext/hdf5/COPYING 2>/dev/null | head -1)"
[ -n "$copying" ] || { echo "HDF5's COPYING not found (hdf5-metno-src $hdf5_src)" >&2; exit 1; }
cp "$copying" "$dest/HDF5-COPYING"

# Each bundled library: auditwheel names it after the file it copied, <name>-<hash>.so.<version>;
# that file belongs to a Debian package, whose copyright file is the notice.
for lib in "$root"/rollway.libs/*; do
    [ -e "$lib" ] || continue
    name="$(basename "$lib" | sed -E 's/-[0-9a-f]{8}(\.so)/\1/')"
    pkg="$(dpkg -S "*/$name" 2>/dev/null | head -1 | cut -d: -f1)"
    [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ] || { echo "no notice found for $name" >&2; exit 1; }
    cp "/usr/share/doc/$pkg/copyright" "$dest/$pkg.copyright"
done

# The Rust crates linked into the extension (normal dependencies reachable from rollway-python,
# not test or build-only ones), with their declared licenses.
cargo metadata --locked --format-version 1 --manifest-path "$here/crates/python/Cargo.toml" \
    | python3 "$here/scripts/linked_crates.py" >"$dest/RUST-CRATES.txt"
ls "$dest" >&2
