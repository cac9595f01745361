"""Shared fixtures of the Python package's tests (run by the README's test command)."""

import os

import pytest

import rollway


@pytest.fixture(scope="session")
def cartpole(tmp_path_factory):
    """A small recorded CartPole dataset (random agent, 40 episodes)."""
    out = tmp_path_factory.mktemp("data") / "cartpole"
    rollway.run(env="CartPole-v1", agent="random", episodes=40, seed=3, out=out, progress=False)
    return os.fspath(out)


@pytest.fixture(scope="session")
def pixels(tmp_path_factory):
    """A small recorded PixelMine dataset: image observations in frame files."""
    out = tmp_path_factory.mktemp("data") / "pixels"
    rollway.run(episodes=4, env_params={"size": 32, "max_steps": 50}, out=out, progress=False)
    return os.fspath(out)


def rollway_cli():
    exe = os.environ.get("ROLLWAY_BIN")
    if exe:
        return [exe]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "target"))
    path = os.path.join(target, "release", "rollway")
    if not os.path.exists(path):
        pytest.skip("the rollway binary is not built (cargo build --release)")
    return [path]
