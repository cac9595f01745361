"""Regenerates the docs' picture of a report (docs/report.png): the default job, run fresh by the
installed rollway, its `rollway report` page, shot by headless Chromium at the size the README shows.

    python scripts/screenshots.py [--out docs/report.png]

A picture is output the docs quote: taken by this script from what the current build prints (its
format version, its sections), never edited by hand. tests/python/test_docs.py runs it into a temporary
file and checks the page it shot. Needs Chromium (scripts/deps.sh test installs it) and the package's
test peers (`websockets`, for tests/python/cdp.py).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from cdp import Browser  # noqa: E402

# The README's picture, 660 × 1230 pixels: the top of the page as a 1050-pixel-wide window shows it (its
# charts two abreast), at 0.6286.
WIDTH, HEIGHT, SCALE = 1050, 1957, 0.6286


def report_of_the_default_job(work: Path) -> Path:
    """The default job's report, made in `work` by the installed rollway (`python -m rollway`)."""
    rollway = [sys.executable, "-m", "rollway"]
    subprocess.run([*rollway, "run", "--quiet"], cwd=work, check=True)
    data = next((work / "rollway-data").iterdir()).relative_to(work)  # the page names it as the README's job does
    page = work / "report.html"
    subprocess.run([*rollway, "report", str(data), "--out", str(page)], cwd=work, check=True, stdout=subprocess.DEVNULL)
    return page


def shoot(page: Path, out: Path, chrome: str = "chromium") -> str:
    """`page` in headless Chromium, a WIDTH × HEIGHT window at SCALE, saved as `out`; returns the page's text."""
    with tempfile.TemporaryDirectory() as profile:
        b = Browser(chrome, profile)
        try:
            b.call("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": SCALE, "mobile": False},
                   session=True)
            b.call("Emulation.setScrollbarsHidden", {"hidden": True}, session=True)
            b.open(page.resolve().as_uri())
            assert b.wait_for("document.readyState === 'complete' && document.querySelector('h1') !== null"), "the report did not load"
            time.sleep(0.5)  # the frames' images decode after the load event
            b.screenshot(str(out))
            return str(b.evaluate("document.body.innerText"))
        finally:
            b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    ap.add_argument("--chrome", default="chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        text = shoot(report_of_the_default_job(Path(work)), args.out, args.chrome)
    version = re.search(r"rollway v(\d+)", text)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} kB; the report says format v{version[1] if version else '?'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
