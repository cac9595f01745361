"""Summaries for scripts/measure-clone.sh (issue 46), as markdown:

    python scripts/timings-summary.py CARGO_TIMING.html [PYTEST_JUNIT.xml|- [LOG]]

- the crates that cost the most unit-seconds in a cargo --timings page, grouped by family
  (tract-*, arrow-*, ...), with the build's total and its wall time;
- pytest's wall time per test file, from the junit XML (PYTEST_ADDOPTS=--junitxml=...);
- cargo test's wall time per test binary, from a log of `cargo test`'s output.
"""

import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def cargo_units(page):
    text = open(page, encoding="utf-8").read()
    start = text.index("const UNIT_DATA = ") + len("const UNIT_DATA = ")
    units, _ = json.JSONDecoder().raw_decode(text[start:])
    return units


def family(name):
    if name.startswith("rollway-"):
        return name
    return re.split(r"[-_]", name)[0] + ("-*" if "-" in name or "_" in name else "")


def cargo_table(page, top=12):
    units = cargo_units(page)
    total = sum(u["duration"] for u in units)
    wall = max(u["start"] + u["duration"] for u in units)
    by = defaultdict(float)
    for u in units:
        by[family(u["name"])] += u["duration"]
    print(f"{len(units)} units, {total:.0f} unit-seconds, {wall / 60:.1f} min wall")
    print()
    print("| crates | unit-seconds | share |")
    print("|---|---|---|")
    for name, d in sorted(by.items(), key=lambda kv: -kv[1])[:top]:
        print(f"| {name} | {d:.0f} | {d / total:.0%} |")


def pytest_table(xml):
    by = defaultdict(lambda: [0.0, 0])
    for case in ET.parse(xml).getroot().iter("testcase"):
        parts = case.get("classname", "?").split(".")  # tests.python.test_x[.Class]
        f = case.get("file") or next((p for p in parts if p.startswith("test_")), parts[-1]) + ".py"
        by[f][0] += float(case.get("time", 0))
        by[f][1] += 1
    total = sum(t for t, _ in by.values())
    print(f"pytest: {sum(n for _, n in by.values())} tests, {total:.0f} s in tests")
    print()
    print("| file | tests | seconds |")
    print("|---|---|---|")
    for f, (t, n) in sorted(by.items(), key=lambda kv: -kv[1][0]):
        print(f"| {f.split('/')[-1]} | {n} | {t:.0f} |")


def cargo_test_table(log, top=12):
    rows, current = [], None
    for line in open(log, encoding="utf-8", errors="replace"):
        m = re.match(r"\s+Running (.+?) \((\S+)\)", line)  # a test binary: by its name, not its source
        if m:
            current = ("unit tests " if m.group(1).startswith("unittests") else "") + re.sub(r"-[0-9a-f]{16}$", "", m.group(2).split("/")[-1])
        m = re.match(r"\s+Doc-tests (\S+)", line)
        if m:
            current = "doctests " + m.group(1)
        m = re.search(r"test result: \w+\. (\d+) passed.*finished in ([\d.]+)s", line)
        if m and current:
            rows.append((current, int(m.group(1)), float(m.group(2))))
            current = None
    total = sum(t for _, _, t in rows)
    print(f"cargo test: {len(rows)} test binaries, {sum(n for _, n, _ in rows)} tests passed, {total:.0f} s running them")
    print()
    print("| test binary | tests | seconds |")
    print("|---|---|---|")
    for name, n, t in sorted(rows, key=lambda r: -r[2])[:top]:
        print(f"| {name} | {n} | {t:.0f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    cargo_table(args[0])
    if len(args) > 1 and args[1] != "-":
        print()
        pytest_table(args[1])
    if len(args) > 2:
        print()
        cargo_test_table(args[2])
