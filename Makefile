# The README's two commands. Both first install the native libraries the build needs
# when they are missing (scripts/deps.sh: apt-get on Debian/Ubuntu, else a list).
#   make run [ARGS="--env CartPole-v1 --episodes 100"]   build, then `rollway run` (the default job)
#   make test                                             every test: Rust, then Python (tests/run.sh)
.PHONY: run test deps

deps:
	@bash scripts/deps.sh

run: deps
	cargo run --release --bin rollway -- run $(ARGS)

test: deps
	bash tests/run.sh
