"""The README's Python example runs as written (in a fresh directory)."""

import os
import re

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def python_example() -> str:
    text = open(README, encoding="utf-8").read()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "one Python example in the README's Python section"
    return blocks[0]


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    pytest.importorskip("minari")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    scope: dict = {}
    exec(compile(python_example(), "README.md (Python)", "exec"), scope)
    import rollway

    assert rollway.Dataset("data/cartpole").metadata["counts"]["steps"] >= 400_000
    assert len(rollway.Dataset("data/collected")) > 0
    assert scope["obs"].shape == (256, 4)
