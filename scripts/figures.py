"""One source for the measured figures the README and the docs quote: bench/RESULTS.md.

A measurement in RESULTS.md declares the figure it stands for, right below the table it comes from, as an
HTML comment (invisible where the page is rendered):

    <!-- figure ppo-cartpole-vs-sync: 1.25–1.33× (2026-11-26, 2-core VM) -->

with its date and machine. RESULTS.md only grows, so a name's last declaration is its latest measurement.
A page quotes it between two markers, and the text between them must be the declaration's, word for word:

    ... at <!-- figure ppo-cartpole-vs-sync -->1.25–1.33× (2026-11-26, 2-core VM)<!-- /figure --> the steps/s ...

`python scripts/figures.py` lists what disagrees (exit 1), as tests/python/test_docs.py does;
`--write` rewrites every quote from the latest declarations. A declaration's every number must occur in
the text of its section above it, so a figure is read off a table, not typed anew.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
DECLARED = re.compile(r"<!-- figure (?P<name>[\w-]+): (?P<text>.+?) -->")
QUOTED = re.compile(r"<!-- figure (?P<name>[\w-]+) -->(?P<text>.*?)<!-- /figure -->")
NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def pages() -> List[Path]:
    """The pages that quote figures: the README and every docs page."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def declared(results: str) -> Tuple[Dict[str, str], List[str]]:
    """Each figure's latest declaration, and the declarations whose numbers their section lacks."""
    latest: Dict[str, str] = {}
    unread: List[str] = []
    for m in DECLARED.finditer(results):
        section = results[: m.start()].rsplit("\n## ", 1)[-1]
        value = m["text"].rsplit(" (", 1)[0]  # the figure, without its date and machine
        missing = [n for n in NUMBER.findall(value) if n not in section]
        if missing:
            unread.append(f"bench/RESULTS.md: figure {m['name']}: {missing} not in its section above it")
        latest[m["name"]] = m["text"]
    return latest, unread


def problems() -> List[str]:
    """Every quote that differs from its figure's latest declaration, names no declared figure, or lacks
    its date and machine; and every declaration not read off its section."""
    latest, out = declared(RESULTS.read_text(encoding="utf-8"))
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for m in QUOTED.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{page.relative_to(ROOT)}:{line}"
            if m["name"] not in latest:
                out.append(f"{where}: figure {m['name']} is declared nowhere in bench/RESULTS.md")
            elif m["text"] != latest[m["name"]]:
                out.append(f"{where}: figure {m['name']} says {m['text']!r}; bench/RESULTS.md's latest: {latest[m['name']]!r}")
    for name, text in latest.items():
        if not re.search(r"\(\d{4}-\d\d-\d\d[^)]*, [^)]+\)$", text):
            out.append(f"bench/RESULTS.md: figure {name} ({text!r}) must end with its (date, machine)")
    return out


def write() -> int:
    """Rewrites every quote from the latest declarations; returns how many changed."""
    latest, _ = declared(RESULTS.read_text(encoding="utf-8"))
    changed = 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = QUOTED.sub(lambda m: f"<!-- figure {m['name']} -->{latest.get(m['name'], m['text'])}<!-- /figure -->", text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="rewrite every quote from bench/RESULTS.md's latest declarations")
    args = ap.parse_args()
    if args.write:
        print(f"{write()} pages rewritten")
    found = problems()
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
