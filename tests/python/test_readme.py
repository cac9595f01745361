"""The README's Python example runs as written (in a fresh directory)."""

import os
import re

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def python_examples() -> list:
    text = open(README, encoding="utf-8").read()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 6, ("the package tour, the own-env-and-policy example, the Ray one, the training loop, its replay "
                              "buffer and its Ray form")
    return blocks


def test_the_readme_python_examples_run(tmp_path, monkeypatch):
    pytest.importorskip("minari")
    import sys

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    monkeypatch.setenv("ROLLWAY_PYTHON", sys.executable)
    tour, own, on_ray, training, replay, training_on_ray = python_examples()
    scope: dict = {}
    exec(compile(tour, "README.md (Python)", "exec"), scope)
    import rollway

    assert rollway.Dataset("data/cartpole").metadata["counts"]["steps"] >= 400_000
    assert len(rollway.Dataset("data/collected")) > 0
    assert scope["obs"].shape == (256, 4)

    exec(compile(own, "README.md (own env and policy)", "exec"), {})
    for name in ("data/hosted", "data/a", "data/mlp"):
        assert len(rollway.Dataset(name)) == 100
    assert rollway.Dataset("data/mlp").metadata["runs"][0]["config"]["agent"] == "python:policy"

    pytest.importorskip("torch")
    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(README), "examples"))
    scope = {}
    exec(compile(training, "README.md (training)", "exec"), scope)
    # 50 PPO updates: well past a random policy's ~22 (the example's 400 solve it).
    assert scope["frag"].finished["return"].mean() > 50 and (scope["frag"].version == 49).all()

    exec(compile(replay, "README.md (replay buffer)", "exec"), scope)
    recorded = rollway.Dataset("data/replay")
    # A batch once an episode is committed; none at a moment when every committed one is older than the bound.
    assert len(recorded) > 0 and scope["sampled"] > 0
    assert recorded[len(recorded) - 1].policy_version.max() <= 20 and "logprob" in recorded[0].extras

    pytest.importorskip("ray")
    exec(compile(training_on_ray, "README.md (training on Ray)", "exec"), scope)
    summary = scope["rollout"].summary()
    assert summary["fragments"] == 20 and max(summary["lag_histogram"]) <= 2 and scope["frag"].version.min() >= 17

    scope = {}
    exec(compile(on_ray, "README.md (Ray)", "exec"), scope)
    assert len(rollway.Dataset("data/ray-cp")) == 200 and scope["summary"].complete
    assert scope["steps"].count() == sum(e["length"] + 1 for e in rollway.Dataset("data/ray-cp").episodes)
