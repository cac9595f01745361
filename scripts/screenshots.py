"""Regenerates the docs' pictures of reports: docs/report.png (the default job, run fresh by the
installed rollway, its `rollway report` page) and, with `--training`, docs/training-report.png (the
replay of a pixel PPO run killed once and resumed: `python -m rollway.examples.ppo_pixels --run DIR`,
about 4 minutes on 2 cores), each shot by headless Chromium at the size the docs show.

    python scripts/screenshots.py [--out docs/report.png]
    python scripts/screenshots.py --training [--out docs/training-report.png]

A picture is output the docs quote: taken by this script from what the current build prints (its
format version, its sections), never edited by hand. tests/python/test_docs.py runs it into a temporary
file and checks the page it shot. Needs Chromium (scripts/deps.sh test installs it) and the package's
test peers (`websockets`, for tests/python/cdp.py).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
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


# The training picture, 1120 × 1480 pixels at scale 1: the page cut to its training sections.
TRAINING_WIDTH, TRAINING_HEIGHT, TRAINING_SECTIONS = 1120, 1480, ("training", "training-time")
# The PPO run: 102 updates of 8 envs × 128 steps; killed once the replay holds KILL_AT episodes (200 steps each).
TRAINING_STEPS, KILL_AT = 104_448, 190


def committed(replay: Path) -> int:
    """Episodes the replay has committed (0 before it exists): its index entries."""
    index = replay / "index"
    return sum(len(json.loads(f.read_text())["episodes"]) for f in index.glob("shard-*.json")) if index.is_dir() else 0


def report_of_a_killed_training_run(work: Path) -> Path:
    """The report of `rollway.examples.ppo_pixels`'s replay, the run SIGKILLed once the replay holds KILL_AT
    episodes and run again to its end (it resumes from its checkpoint into the same replay)."""
    run = [sys.executable, "-m", "rollway.examples.ppo_pixels", "--run", str(work / "run"), "--steps-total", str(TRAINING_STEPS)]
    first = subprocess.Popen(run, cwd=work, stdout=subprocess.DEVNULL)
    while committed(work / "run" / "replay") < KILL_AT and first.poll() is None:
        time.sleep(0.5)
    first.send_signal(signal.SIGKILL)
    first.wait()
    subprocess.run(run, cwd=work, check=True, stdout=subprocess.DEVNULL)
    page = work / "report.html"
    replay = (work / "run" / "replay").relative_to(work)
    subprocess.run([sys.executable, "-m", "rollway", "report", str(replay), "--out", str(page)], cwd=work, check=True,
                   stdout=subprocess.DEVNULL)
    return page


def shoot(page: Path, out: Path, chrome: str = "chromium", width: int = WIDTH, height: int = HEIGHT, scale: float = SCALE,
          sections: tuple = ()) -> str:
    """`page` in headless Chromium, a `width` × `height` window at `scale` (the README's picture by default),
    saved as `out`; with `sections`, the page keeps only those sections (by id). Returns the page's text."""
    with tempfile.TemporaryDirectory() as profile:
        b = Browser(chrome, profile)
        try:
            b.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": False},
                   session=True)
            b.call("Emulation.setScrollbarsHidden", {"hidden": True}, session=True)
            b.open(page.resolve().as_uri())
            assert b.wait_for("document.readyState === 'complete' && document.querySelector('h1') !== null"), "the report did not load"
            if sections:
                keep = json.dumps(list(sections))
                b.evaluate(f"document.querySelectorAll('section').forEach(s => {{ if (!{keep}.includes(s.id)) s.remove(); }})")
            time.sleep(0.5)  # the frames' images decode after the load event
            b.screenshot(str(out))
            return str(b.evaluate("document.body.innerText"))
        finally:
            b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--training", action="store_true", help="docs/training-report.png: a pixel PPO run's replay (~4 min)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--chrome", default="chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        if args.training:
            args.out = args.out or ROOT / "docs" / "training-report.png"
            text = shoot(report_of_a_killed_training_run(Path(work)), args.out, args.chrome, TRAINING_WIDTH, TRAINING_HEIGHT, 1.0,
                         TRAINING_SECTIONS)
        else:
            args.out = args.out or ROOT / "docs" / "report.png"
            text = shoot(report_of_the_default_job(Path(work)), args.out, args.chrome)
    version = re.search(r"rollway v(\d+)", text)
    says = f"; the report says format v{version[1]}" if version else ""
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} kB{says})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
