"""One source for the measured figures the README and the docs quote: bench/RESULTS.md.

A measurement in RESULTS.md declares the figure it stands for, right below the table it comes from, as an
HTML comment (invisible where the page is rendered):

    <!-- figure ppo-cartpole-vs-sync: 1.25–1.33× (2026-11-26, 2-core VM) -->

with its date and machine. RESULTS.md only grows, so a name's last declaration is its latest measurement.
A page quotes it between two markers, and the text between them must be the declaration's, word for word:

    ... at <!-- figure ppo-cartpole-vs-sync -->1.25–1.33× (2026-11-26, 2-core VM)<!-- /figure --> the steps/s ...

The Benchmarks page (docs/benchmarks.md) gathers many tables; it is not quotes through and through, but
every figure it states must be read off RESULTS.md: a number with its unit (`11.29M`, `1.03×`, `65%`,
`26.9 µs`) must be, at the page's precision, a number RESULTS.md states in the same unit, or bare (a
table's header may hold the unit): `179×` reads `179.4×`, `2.0k` reads `1,979`, `34.63 dB` a PSNR column's
`34.63`. A figure typed anew, or one left behind by a remeasurement that never
reached RESULTS.md, fails.

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


# Pages whose every figure must be read off RESULTS.md (see the module docs).
MEASURED_PAGES = ["docs/benchmarks.md"]
# A figure: digits (commas and a point allowed) and a unit. Counts (none, k, M, G) compare with one
# another; the other units only with themselves.
FIGURE = re.compile(r"(?<![\w.\-/])(\d[\d,]*(?:\.\d+)?)(?: ?(k|M|G|×|%|µs|ms|dB)(?!\w))?")
SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def _figures(text: str) -> List[Tuple[str, float, str, int]]:
    """Each figure of `text` as (as written, value in its base unit, unit kind, decimals written)."""
    out = []
    for m in FIGURE.finditer(text):
        digits, unit = m[1].rstrip(",").replace(",", ""), m[2] or ""
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        out.append((m[0], float(digits) * SCALE.get(unit, 1.0), "count" if unit in SCALE else unit, decimals))
    return out


def unread(page_text: str, results: str) -> List[Tuple[int, str]]:
    """The figures of a measurements page (outside code and comments) that no figure of `results` gives at
    the page's precision: (line, figure). Plain numbers under 10 (counts of things, N = 8) are not checked."""
    known: Dict[str, List[float]] = {}
    for _, value, kind, _ in _figures(results):
        known.setdefault(kind, []).append(value)
    out = []
    for no, line in enumerate(page_text.splitlines(), 1):
        if line.lstrip().startswith(("<!--", "```")):
            continue
        for written, value, kind, decimals in _figures(re.sub(r"`[^`]*`|\d{4}-\d\d-\d\d(T[\d:]+)?", "", line)):
            if kind == "count" and value < 10:
                continue
            unit = SCALE.get(written.rstrip()[-1:], 1.0) if kind == "count" else 1.0
            step = unit * 10.0 ** -decimals
            # A unit may stand in a table's header, its cells bare numbers: those read as any unit.
            candidates = known.get(kind, []) + (known.get("count", []) if kind != "count" else [])
            if not any(abs(v - value) <= step / 2 + 1e-9 * step for v in candidates):
                out.append((no, written))
    return out


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
    results = RESULTS.read_text(encoding="utf-8")
    for rel in MEASURED_PAGES:
        text = re.sub(r"```.*?```", lambda m: "\n" * m[0].count("\n"), (ROOT / rel).read_text(encoding="utf-8"), flags=re.S)
        out += [f"{rel}:{no}: {fig} is no figure of bench/RESULTS.md" for no, fig in unread(text, results)]
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
