#!/usr/bin/env bash
# The tests (the README's test command): the Rust workspace (cargo test), then the
# Python package, installed from this checkout, under pytest — both checked against
# the real Python peers (tests/python/requirements.txt). Uses $ROLLWAY_PYTHON when set
# (CI's venv); otherwise makes ./.venv with the peers. Reuses $CARGO_TARGET_DIR.
#
#   tests/run.sh          both parts (make test)
#   tests/run.sh rust     the Rust workspace only (make test-rust)
#   tests/run.sh python   the Python package only (make test-python)
#   tests/run.sh build    the Rust build the tests run, and nothing else (no venv: CI runs it while
#                         its venv downloads)
#
# $ROLLWAY_CLIPPY=1 (CI) lints as it builds: clippy's driver wraps rustc for the workspace's crates
# (what `cargo clippy` does) with -D warnings, and every target is built, benches and examples too, as
# `make lint-rust` checks them. The dependencies are compiled once, for the tests, instead of once more
# in clippy's check mode; the wrapper is part of the crates' fingerprints, so every cargo call of a run
# sets it alike (tests/run.sh does).
#
# $ROLLWAY_FEATURES (e.g. `tract`, as CI sets it) builds the cargo tests, the binary and the extension
# with those optional features; tests of a feature that is not built check its refusal instead.
#
# Each phase's wall time is printed at the end, under "== times" (scripts/measure-clone.sh
# collects them into bench/RESULTS.md's breakdown), after the 20 slowest tests of each half;
# set $ROLLWAY_TIMINGS=1 for cargo's --timings page of the test build as well.
#
# pytest runs in $ROLLWAY_TEST_PROCESSES processes (pytest-xdist; default twice the cores, at most 8):
# most Python tests wait on child processes, servers and pipes, so two a core keep the cores busy
# (issue 66). conftest.py starts the heavy tests first and keeps a module's Ray cluster on one worker.
set -euo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
case "$part" in all | rust | python | build) ;; *) echo "usage: tests/run.sh [rust|python|build]" >&2; exit 2 ;; esac

times=()
phase() { # phase NAME CMD…: runs CMD, noting its wall time
    local name="$1" t0=$SECONDS rc=0
    shift
    "$@" || rc=$?
    times+=("$(printf '%-28s %4d s' "$name" $((SECONDS - t0)))")
    return "$rc"
}
report() { printf '== times\n'; printf '  %s\n' "${times[@]}"; }
# A failing test phase does not stop the next one: one CI run shows
# every failure, Rust and Python, and the script still exits non-zero at the end.
failed=()
check() { # check NAME CMD…: a phase whose failure is noted, not fatal
    local name="$1"
    if ! phase "$@"; then
        failed+=("$name")
    fi
}
venv_done="" rust_log="$(mktemp)"
trap 'report; rm -f "$venv_done" "$rust_log"' EXIT

features=()
for f in ${ROLLWAY_FEATURES:-}; do
    case "$f" in
        tract) features+=(--features rollway-onnx/tract,rollway-cli/tract) ;;
        *) echo "ROLLWAY_FEATURES: unknown feature $f (known: tract)" >&2; exit 2 ;;
    esac
done

targets=()
if [ -n "${ROLLWAY_CLIPPY:-}" ]; then
    driver="$(command -v clippy-driver)" || { echo "ROLLWAY_CLIPPY: no clippy-driver (rustup component add clippy)" >&2; exit 2; }
    # `cargo clippy -- -D warnings` hands the driver its arguments so, split by this marker.
    export RUSTC_WORKSPACE_WRAPPER="$driver" CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
    targets=(--all-targets)
fi
build() { cargo test --release --workspace --locked "${features[@]}" "${targets[@]}" --no-run ${ROLLWAY_TIMINGS:+--timings}; }
if [ "$part" = build ]; then
    phase "rust: build" build
    exit
fi

py="${ROLLWAY_PYTHON:-}"
venv_pid=""
if [ -z "$py" ]; then
    # The venv's ~9 GB of wheels wait on the network and the Rust build on the CPU: they overlap
    # (issue 46), and the tests wait for the venv only when they need it.
    venv="$PWD/.venv"
    py="$venv/bin/python"
    venv_t0=$SECONDS venv_done="$(mktemp)"
    { bash tests/python/venv.sh "$venv"; echo "$SECONDS" >"$venv_done"; } &
    venv_pid=$!
fi
export ROLLWAY_PYTHON="$py"
wait_venv() {
    [ -n "$venv_pid" ] || return 0
    local t0=$SECONDS
    wait "$venv_pid"
    venv_pid=""
    times+=("$(printf '%-28s %4d s (beside the build; %d s waited for)' "venv (tests/python/venv.sh)" $(($(cat "$venv_done") - venv_t0)) $((SECONDS - t0)))")
}

# The tests with each one's time (libtest's --report-time, unstable: RUSTC_BOOTSTRAP is given to the
# test binaries alone, through cargo's runner setting, so no crate is compiled again), then the doc
# tests, whose harness (rustdoc's) gets no runner and so no times; then the 20 slowest.
rust_tests() {
    local rc=0
    cargo test --release --workspace --locked --no-fail-fast "$@" --lib --bins --tests \
        --config "target.'cfg(all())'.runner = ['env', 'RUSTC_BOOTSTRAP=1']" -- -Zunstable-options --report-time \
        2>&1 | tee "$rust_log" || rc=$?
    cargo test --release --workspace --locked --no-fail-fast "$@" --doc || rc=$?
    echo "== the 20 slowest Rust tests"
    sed -n 's/^test \(.*\) \.\.\. \([a-zA-Z]*\) <\([0-9.]*\)s>$/\3 s  \1 (\2)/p' "$rust_log" | sort -rn | head -20
    return "$rc"
}

if [ "$part" != python ]; then
    echo "== rust: cargo test ${features[*]}"
    phase "rust: build" build
    wait_venv
    check "rust: run" rust_tests "${features[@]}"
fi

if [ "$part" != rust ]; then
    wait_venv
    echo "== python: pip install . && pytest"
    export MATURIN_PEP517_ARGS="${ROLLWAY_FEATURES:+--features ${ROLLWAY_FEATURES// /,}}"
    phase "python: pip install ." "$py" -m pip install --quiet --disable-pip-version-check .
    procs="${ROLLWAY_TEST_PROCESSES:-$(( $(nproc) * 2 > 8 ? 8 : $(nproc) * 2 ))}"
    check "python: pytest" "$py" -m pytest -q --durations=20 -n "$procs" --dist loadgroup tests/python
fi
if [ "${#failed[@]}" -gt 0 ]; then
    echo "== failed: ${failed[*]}" >&2
    exit 1
fi
