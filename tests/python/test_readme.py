"""The README is a landing page (issue 57): its examples run as written (in a fresh directory, as
docs_pages.py runs a docs page), every link in it resolves, and it stays short."""

import re

import docs_pages

README = docs_pages.ROOT / "README.md"


def test_the_readme_examples_run(tmp_path):
    page = docs_pages.parse(README)
    assert [b.lang for b in page.blocks if not b.skip] == ["sh", "python", "python", "python"], "record, load, train, Atari"
    failures = docs_pages.run_page(page, str(tmp_path))
    assert not failures, "\n".join(failures)
    assert (tmp_path / "data" / "replay" / "rollway.json").exists(), "the training example records its replay"


def slug(heading: str) -> str:
    """The anchor MkDocs (and GitHub) gives a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", text)


def anchors(path):
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def test_every_link_in_the_readme_resolves():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert len(links) >= 20, links
    for link in links:
        assert not link.startswith("http"), f"{link}: the README links into the repository and its docs only"
        target, _, anchor = link.partition("#")
        path = docs_pages.ROOT / target
        assert path.exists(), f"{link}: no such file"
        if anchor:
            assert anchor in anchors(path), f"{link}: {target} has no heading #{anchor}"


def test_the_readme_is_a_landing_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"{len(lines)} lines: the details belong on the docs site"
    first_screen = "\n".join(lines[:30])
    assert "make run" in first_screen and "make test" in first_screen
