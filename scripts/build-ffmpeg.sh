#!/usr/bin/env bash
# Builds the FFmpeg the wheel links statically (make wheel; scripts/wheel.sh calls this), into
# PREFIX (default: $CARGO_TARGET_DIR/ffmpeg, else target/ffmpeg). Prints PREFIX. Quick when
# PREFIX already holds this version built with these flags.
#
# Why not Debian's FFmpeg: its libavcodec links ~130 libraries (166 MB: every codec, VA-API,
# VDPAU, X11), and X11 is one a manylinux wheel may not carry, so a wheel repaired around it
# would not load on a machine without X. rollway needs a few parts of FFmpeg: H.264 (x264 to
# encode, FFmpeg's decoder), AV1 (SVT-AV1 and libaom to encode, dav1d to decode: LeRobot's
# videos), HEVC decoding (LeRobot datasets written with it), mp4 in and out, and swscale. This
# builds just those, static and position-independent, from Debian's own source package of the
# FFmpeg the developer build uses (`apt-get source`, signature-checked by apt, with Debian's
# patches), against Debian's x264, SVT-AV1, libaom and dav1d, which auditwheel then copies into
# the wheel (they link only the C library). Same FFmpeg version and the same x264 as the
# source build: the default job's frames decode to the same pixels (tests/wheel/bare.sh checks it).
#
# Needs: what scripts/deps.sh wheel installs (nasm and the codecs' development files).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$here/target}"
prefix="${1:-$target/ffmpeg}"
jobs="$(nproc)"

# The FFmpeg of the developer build (libavcodec-dev), so both builds run one version.
version="$(dpkg-query -W -f='${source:Version}' libavcodec-dev)"
flags=(
    --prefix="$prefix" --enable-static --disable-shared --enable-pic
    --disable-programs --disable-doc --disable-network --disable-autodetect --disable-everything
    --disable-avdevice --disable-avfilter --disable-swresample --disable-postproc
    --enable-gpl --enable-libx264 --enable-libdav1d --enable-libaom --enable-libsvtav1
    --enable-encoder=libx264,libaom_av1,libsvtav1
    --enable-decoder=h264,hevc,libdav1d
    --enable-parser=h264,hevc,av1
    --enable-demuxer=mov --enable-muxer=mp4,mov --enable-protocol=file
    --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,av1_frame_merge,av1_frame_split,av1_metadata,extract_extradata
)
stamp="$version ${flags[*]}"
if [ -f "$prefix/.stamp" ] && [ "$(cat "$prefix/.stamp")" = "$stamp" ] && [ -f "$prefix/lib/libavcodec.a" ]; then
    echo "$prefix"
    exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
apt_dir="$work/apt"
mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
# The system's own archives, as source entries, in a private apt state: nothing of the
# system's apt configuration changes.
for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt_dir/parts/$(basename "$f")"
done
if [ -f /etc/apt/sources.list ]; then
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' >"$apt_dir/parts/main.list" || true
fi
apt_opts=(-q -o "Dir::Etc::SourceList=$apt_dir/none" -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
echo "rollway: fetching FFmpeg $version's source (apt-get source)" >&2
apt-get "${apt_opts[@]}" update >&2
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only "ffmpeg=$version" >&2)
# apt checked the .dsc against the signed Sources index and the tarballs against the .dsc,
# so dpkg-source need not check a signature again (no keyring of Debian developers here).
(cd "$work" && dpkg-source --no-check -x ffmpeg_*.dsc src >&2)

echo "rollway: building FFmpeg $version (static, minimal) into $prefix" >&2
rm -rf "$prefix"
(cd "$work/src" && ./configure "${flags[@]}" >&2 && make -j"$jobs" >&2 && make install >&2)
# Its notices, for the wheel (scripts/wheel-notices.sh): built with x264, it is GPL-2.0-or-later.
mkdir -p "$prefix/share/licenses/ffmpeg"
for f in LICENSE.md COPYING.GPLv2 COPYING.LGPLv2.1; do cp "$work/src/$f" "$prefix/share/licenses/ffmpeg/FFmpeg-$f"; done
cp "$work/src/debian/copyright" "$prefix/share/licenses/ffmpeg/FFmpeg-debian-copyright"
echo "$stamp" >"$prefix/.stamp"
echo "$prefix"
