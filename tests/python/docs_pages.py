"""Runs the code blocks of a docs page as a reader would: every ```python and ```sh block, in page order,
in a fresh directory. Used by test_docs.py, and by hand while writing a page:

    python tests/python/docs_pages.py docs/guides/record.md [--keep DIR]

A page's Python blocks share one interpreter (a later block sees an earlier one's names, as in a notebook);
shell blocks run in bash, in the same directory, with this Python's bin/ first on PATH (so `rollway` and
`python` are the installed package's). Snippet lines (``--8<-- "python/rollway/examples/x.py:name"``) are expanded as
pymdownx.snippets expands them for the site, so the page runs the very code it shows.

HTML comments right before a block steer it; they are invisible on the site:

    <!-- test: skip WHY -->              the block is not run; WHY says why (install commands, CI itself)
    <!-- test: replace "OLD" "NEW" -->   run with OLD replaced by NEW (a smaller size); OLD must occur
    <!-- test: expect-fail -->           a shell block that must exit non-zero (an error the page shows)

and anywhere on the page:

    <!-- test: needs s3 -->              the page runs with a loopback S3 server (test_docs.py's fixture)
    <!-- test: timeout SECONDS -->       the page's time limit (default 300 s)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
DIRECTIVE = re.compile(r"<!--\s*test:\s*(?P<what>.*?)\s*-->")
SNIPPET = re.compile(r'^(?P<indent> *)--8<-- "(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"\s*$', re.M)
RUNNABLE = {"python": "python", "py": "python", "sh": "sh", "bash": "sh", "shell": "sh"}


@dataclasses.dataclass
class Block:
    lang: str  # "python" or "sh"
    code: str
    line: int
    skip: Optional[str] = None
    expect_fail: bool = False


@dataclasses.dataclass
class Page:
    path: Path
    blocks: List[Block]
    needs: List[str]
    timeout: float


def expand_snippets(text: str) -> str:
    """Replaces each ``--8<-- "path[:section]"`` line with the file's lines (or its section's, between
    ``--8<-- [start:NAME]`` and ``--8<-- [end:NAME]`` markers), as the site's pymdownx.snippets does."""

    def one(m: re.Match) -> str:
        lines = (ROOT / m["path"]).read_text(encoding="utf-8").splitlines()
        if m["section"]:
            start = next(i for i, s in enumerate(lines) if f"--8<-- [start:{m['section']}]" in s)
            end = next(i for i, s in enumerate(lines) if f"--8<-- [end:{m['section']}]" in s)
            lines = lines[start + 1:end]
        lines = [s for s in lines if "--8<-- [" not in s]
        return "\n".join(m["indent"] + s if s else s for s in lines)

    return SNIPPET.sub(one, text)


def parse(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    needs = [m["what"].split()[1] for m in DIRECTIVE.finditer(text) if m["what"].startswith("needs ")]
    timeouts = [float(m["what"].split()[1]) for m in DIRECTIVE.finditer(text) if m["what"].startswith("timeout ")]
    blocks: List[Block] = []
    for m in FENCE.finditer(text):
        lang = RUNNABLE.get(m["lang"])
        if lang is None:
            continue
        # The directives are the comment lines right above the fence (blank lines between allowed).
        before = text[:m.start()].rstrip("\n").split("\n")
        said = []
        while before and (DIRECTIVE.fullmatch(before[-1].strip()) or not before[-1].strip()):
            line = before.pop().strip()
            if line:
                said.append(DIRECTIVE.fullmatch(line)["what"])  # type: ignore[index]
        body = expand_snippets(_dedent(m["body"], len(m["indent"])))
        block = Block(lang, body, text.count("\n", 0, m.start()) + 1)
        for what in said:
            if what.startswith("skip"):
                block.skip = what[4:].strip() or "(no reason given)"
            elif what.startswith("replace "):
                old, new = shlex.split(what[len("replace "):])
                assert old in block.code, f"{path}:{block.line}: replace {old!r}: not in the block"
                block.code = block.code.replace(old, new)
            elif what == "expect-fail":
                block.expect_fail = True
        blocks.append(block)
    return Page(path, blocks, needs, timeouts[0] if timeouts else 300.0)


def _dedent(body: str, n: int) -> str:
    return "\n".join(s[n:] if s[:n].strip() == "" else s for s in body.split("\n"))


# The interpreter that runs a page's Python blocks: it reads one block at a time (a length line, then
# the code) and answers "ok" or the traceback, so each block's failure names the block.
SERVER = r"""
import sys, traceback
scope = {"__name__": "__main__"}
while True:
    n = sys.stdin.readline()
    if not n:
        break
    name, size = n.rsplit(" ", 1)
    code = sys.stdin.read(int(size))
    try:
        exec(compile(code, name, "exec"), scope)
        reply = "ok"
    except BaseException:
        reply = traceback.format_exc()
    sys.stdout.flush(); sys.stderr.flush()
    sys.__stdout__.write("\n\x00" + str(len(reply)) + "\n" + reply)
    sys.__stdout__.flush()
"""


class Python:
    """One interpreter for a page's Python blocks."""

    def __init__(self, cwd: str, env: Dict[str, str]):
        self.p = subprocess.Popen([sys.executable, "-c", SERVER], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def run(self, name: str, code: str) -> str:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.write(f"{name} {len(code)}\n{code}")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                return f"the interpreter exited (code {self.p.wait()})"
            if line.startswith("\x00"):
                return self.p.stdout.read(int(line[1:]))
            sys.stdout.write(line)

    def close(self) -> None:
        if self.p.stdin:
            self.p.stdin.close()
        self.p.wait(timeout=60)


def page_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ, **(extra or {}))
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    env.setdefault("MPLBACKEND", "Agg")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_page(page: Page, cwd: str, extra_env: Optional[Dict[str, str]] = None) -> List[str]:
    """Runs the page's blocks in order in `cwd`; returns one message per failed block (empty: all ran)."""
    env = page_env(extra_env)
    env.setdefault("MINARI_DATASETS_PATH", os.path.join(cwd, "minari"))
    failures: List[str] = []
    py: Optional[Python] = None
    rel = page.path.relative_to(ROOT) if page.path.is_relative_to(ROOT) else page.path
    try:
        for b in page.blocks:
            where = f"{rel}:{b.line}"
            if b.skip:
                print(f"-- {where}: skipped ({b.skip})")
                continue
            print(f"-- {where}: {b.lang}", flush=True)
            if b.lang == "python":
                py = py or Python(cwd, env)
                reply = py.run(where, b.code)
                if reply != "ok":
                    failures.append(f"{where} (python):\n{reply}")
                    break
            else:
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", b.code], cwd=cwd, env=env, timeout=page.timeout)
                if (r.returncode != 0) != b.expect_fail:
                    failures.append(f"{where} (sh): exit {r.returncode}" + (" (expected a failure)" if b.expect_fail else ""))
                    break
    finally:
        if py:
            py.close()
    return failures


def pages() -> List[Path]:
    return sorted(DOCS.rglob("*.md"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", type=Path, nargs="+")
    ap.add_argument("--keep", help="run in this directory (kept) instead of a temporary one")
    args = ap.parse_args()
    bad = 0
    for path in args.page:
        page = parse(path.resolve())
        if page.needs:
            print(f"-- {path} needs {page.needs}: run it under pytest (tests/python/test_docs.py)", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            cwd = args.keep or tmp
            os.makedirs(cwd, exist_ok=True)
            for f in run_page(page, cwd):
                bad += 1
                print(f"FAILED {f}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
