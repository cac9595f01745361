# The README's two commands. Both first install the native libraries the build needs
# when they are missing (scripts/deps.sh: apt-get on Debian/Ubuntu, else a list).
#   make run [ARGS="--env CartPole-v1 --episodes 100"]   build, then `rollway run` (the default job)
#   make test                                             every test: Rust, then Python (tests/run.sh);
#                                                         also installs Chromium, which renders the report in a test
#   make test-rust / make test-python                     one half of it (the second uses target/release/rollway)
#   ROLLWAY_FEATURES=tract make test                      with the optional features built and tested, as CI does
#   make wheel                                            the self-contained wheel and the sdist, in dist/
#                                                         (scripts/wheel.sh; installs nasm and codec headers)
#   make test-wheel                                       that wheel on a bare Debian root, as a user (needs
#                                                         root: debootstrap, chroot; tests/wheel/bare.sh)
#   make fmt                                              rustfmt the workspace, ruff's fixes on the Python
#   make lint                                             checks only: rustfmt, clippy -D warnings (lint-rust);
#                                                         ruff, mypy over the package, and the stubs against
#                                                         the installed extension, stubtest (lint-python)
#   make docs                                             the docs site, strictly (a broken link or reference
#                                                         fails it), into site/: cargo doc + mkdocs build
#   make docs-serve                                       the same, served on 127.0.0.1:8000, rebuilt on edits
#   make bench [BENCH=run_record] [BENCH_ARGS=--quick]    a benchmark against its peers, bench/$(BENCH).sh
#                                                         (default run_all: CartPole throughput; bench/README.md
#                                                         lists them); its markdown report goes to stdout
.PHONY: docs docs-env docs-serve run test test-rust test-python deps test-deps fmt lint lint-rust lint-python bench wheel test-wheel

deps:
	@bash scripts/deps.sh

test-deps:
	@bash scripts/deps.sh test

run: deps
	cargo run --release --bin rollway -- run $(ARGS)

test: test-deps
	bash tests/run.sh

test-rust: test-deps
	bash tests/run.sh rust

test-python: test-deps
	bash tests/run.sh python

wheel:
	bash scripts/wheel.sh dist

# The bare-system test compares the wheel's default job with the source build's binary.
test-wheel: wheel
	cargo build --release --locked --bin rollway
	bash tests/wheel/bare.sh $$(ls dist/rollway-*.whl)

# Developer tools for the Python side go into the test venv (tests/run.sh makes ./.venv), or $ROLLWAY_PYTHON's.
PY ?= $(if $(ROLLWAY_PYTHON),$(ROLLWAY_PYTHON),.venv/bin/python)
PY_SOURCES = python tests/python tests/wheel scripts bench
# The ruff CI runs (.ci/run reads this line).
RUFF = ruff==0.17.6
# The mypy whose stubtest checks the extension's stubs (scripts/stubtest.sh reads this line).
MYPY = mypy==2.4.1

BENCH ?= run_all
bench: deps
	cargo build --release --locked --bin rollway
	bash bench/$(BENCH).sh $(BENCH_ARGS)

fmt:
	cargo fmt --all
	@$(PY) -m ruff --version >/dev/null 2>&1 || $(PY) -m pip install --quiet $(RUFF)
	$(PY) -m ruff check --fix $(PY_SOURCES)

# The style checks, defined once (CI runs both halves: lint-rust while its venv is made,
# lint-python once the package is installed). ROLLWAY_FEATURES=tract lints the optional
# features too, as CI does.
CLIPPY_FEATURES = $(if $(ROLLWAY_FEATURES),--features $(shell echo $(ROLLWAY_FEATURES) | sed 's/tract/rollway-onnx\/tract,rollway-cli\/tract/'))
lint: lint-rust lint-python

lint-rust:
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets --locked --no-deps $(CLIPPY_FEATURES) -- -D warnings

lint-python:
	@$(PY) -m ruff --version >/dev/null 2>&1 || $(PY) -m pip install --quiet $(RUFF)
	$(PY) -m ruff check $(PY_SOURCES)
	@$(PY) -m mypy --version >/dev/null 2>&1 || $(PY) -m pip install --quiet $(MYPY)
	$(PY) -m mypy
	@if $(PY) -c "import rollway._rollway" 2>/dev/null; then bash scripts/stubtest.sh $(abspath $(PY)); \
	else echo "stubtest skipped: rollway is not installed in $(PY) (pip install .)"; fi

# The docs site (mkdocs.yml; scripts/docs_hooks.py generates the reference pages from the installed package,
# so it is built by $(PY), which must have rollway and the docs tools). From a clean clone this makes ./.venv,
# installs docs/requirements.txt and the package from the checkout (a few minutes: the extension's build);
# with the test venv (after make test) both are there already. A rustdoc warning (a broken intra-doc link)
# fails the Rust half too.
docs-env: deps
	@[ -x "$(PY)" ] || python3 -m venv .venv
	@$(PY) -c "import mkdocs, material, mkdocstrings, gymnasium" 2>/dev/null || $(PY) -m pip install --quiet --disable-pip-version-check -r docs/requirements.txt
	@$(PY) -c "import rollway._rollway" 2>/dev/null || $(PY) -m pip install --quiet --disable-pip-version-check .

docs: docs-env
	RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps --locked
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve: docs-env
	NO_MKDOCS_2_WARNING=1 ROLLWAY_DOCS_NO_RUST=1 $(PY) -m mkdocs serve --strict
