#!/usr/bin/env bash
# What a new contributor waits for, measured (issue 46): the README's two commands, verbatim, on a
# fresh clone of HEAD with an empty target dir, phase by phase, as markdown on stdout (bench/RESULTS.md's
# "From clone to green" section is made of its output).
#
#   scripts/measure-clone.sh [--cold-venv] [--edit FILE] [--rev REV]
#
#   --cold-venv   the clone makes its own ./.venv (downloads included); otherwise the venv
#                 at $ROLLWAY_PYTHON (default ./.venv of this checkout) is reused, as CI's cache does
#   --rev REV     a clone of REV instead of HEAD (an earlier commit's figures, for a before/after)
#   --edit FILE   afterwards, append a comment to FILE (e.g. crates/store/src/writer.rs) and time
#                 `make test-rust` again: the warm rebuild after a one-file change
#
# `make run`'s build is run first as `cargo build --release --bin rollway --timings` (the same
# artifacts `cargo run` builds), so cargo's per-crate timings page comes with it; then `make run` and
# `make test` run verbatim, and tests/run.sh's "== times" lines give the phases of the second.
# The system packages are not removed: scripts/deps.sh's time is whatever it finds to install.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cold_venv=0 edit="" rev=HEAD
while [ $# -gt 0 ]; do
    case "$1" in
        --cold-venv) cold_venv=1 ;;
        --edit) edit="$2"; shift ;;
        --rev) rev="$2"; shift ;;
        *) echo "usage: scripts/measure-clone.sh [--cold-venv] [--edit FILE] [--rev REV]" >&2; exit 2 ;;
    esac
    shift
done

work="$(mktemp -d /tmp/rollway-measure.XXXXXX)"
log="$work/log"
git clone -q "$here" "$work/clone"
cd "$work/clone"
git checkout -q "$(git -C "$here" rev-parse "$rev")"
export CARGO_TARGET_DIR="$work/target"
if [ "$cold_venv" = 0 ]; then
    export ROLLWAY_PYTHON="${ROLLWAY_PYTHON:-$here/.venv/bin/python}"
    [ -x "$ROLLWAY_PYTHON" ] || { echo "no venv at $ROLLWAY_PYTHON: make one (tests/python/venv.sh) or pass --cold-venv" >&2; exit 2; }
else
    unset ROLLWAY_PYTHON
fi
export PYTEST_ADDOPTS="--junitxml=$work/pytest.xml"

rows=()
timed() { # timed NAME CMD…: runs CMD with its output in the log, notes its wall time
    local name="$1" t0=$SECONDS
    shift
    echo "== $name" >>"$log"
    "$@" >>"$log" 2>&1 || { echo "failed: $name (log: $log)" >&2; tail -n 40 "$log" >&2; exit 1; }
    rows+=("| $name | $(mmss $((SECONDS - t0))) |")
}
mmss() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }

timed "scripts/deps.sh test (apt, when missing)" bash scripts/deps.sh test
timed "make run: cargo build --release --bin rollway" cargo build --release --locked --bin rollway --timings
timed "make run: the default job (warm)" make run
timed "make test" env ROLLWAY_TIMINGS=1 make test
if [ -n "$edit" ]; then
    echo "// measure-clone.sh: a one-line change" >>"$edit"
    timed "make test-rust after editing $edit" make test-rust
fi

echo "### $(date -u +%Y-%m-%d), $(git rev-parse --short HEAD), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo
echo "| phase | wall time |"
echo "|---|---|"
printf '%s\n' "${rows[@]}"
if grep -q '^== times' "$log"; then
    echo
    echo "make test's phases (tests/run.sh):"
    echo
    echo '```'
    awk '/^== times/ { n++; next } n == 1 && /^  / { print } n == 1 && !/^  / { exit }' "$log"
    echo '```'
fi
echo
echo "The slowest crates of make run's build (cargo --timings, unit-seconds):"
echo
page="$(ls -t "$CARGO_TARGET_DIR"/cargo-timings/cargo-timing-*.html | tail -n 1)"
"${ROLLWAY_PYTHON:-$work/clone/.venv/bin/python}" "$here/scripts/timings-summary.py" "$page" "$work/pytest.xml" "$log"
echo
echo "(log and timings pages kept in $work)"
