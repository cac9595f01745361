# The README's two commands. Both first install the native libraries the build needs
# when they are missing (scripts/deps.sh: apt-get on Debian/Ubuntu, else a list).
#   make run [ARGS="--env CartPole-v1 --episodes 100"]   build, then `rollway run` (the default job)
#   make test                                             every test: Rust, then Python (tests/run.sh);
#                                                         also installs Chromium, which renders the report in a test
.PHONY: run test deps test-deps

deps:
	@bash scripts/deps.sh

test-deps:
	@bash scripts/deps.sh test

run: deps
	cargo run --release --bin rollway -- run $(ARGS)

test: test-deps
	bash tests/run.sh
