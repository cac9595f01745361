"""Regenerates the docs' pictures of reports: docs/report.png (the default job, run fresh by the
installed rollway, its `rollway report` page) and, with `--training`, docs/training-report.png and
docs/tensorboard.png (the replay's report and the TensorBoard scalars of a pixel PPO run killed once and
resumed: `python -m rollway.examples.ppo_pixels --run DIR`, about 3 minutes on 2 cores), each shot by
headless Chromium at the size the docs show.

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
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Tuple, Union

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
    """Episodes the replay has committed (0 before it exists), as rollway's own reader counts them."""
    import rollway

    try:
        return len(rollway.Dataset(replay))
    except (rollway.RollwayError, OSError):
        return 0


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


# TensorBoard on the same run's logs, 1400 × 900 at scale 1: its Scalars tab, filtered to what the Long
# runs guide points at (the return, the rollout's lag, policy version and pace).
TB_WIDTH, TB_HEIGHT, TB_TAGS = 1400, 900, "episodic_return|steps_per_s|policy_version|lag"
REPORT_READY = "document.readyState === 'complete' && document.querySelector('h1') !== null"


def tensorboard(work: Path, logdir: str) -> Tuple[subprocess.Popen, str]:
    """TensorBoard (the installed package) serving `logdir` (relative to `work`, as the page then names it) on
    a free loopback port, once it answers, and the URL of its Scalars tab filtered to TB_TAGS. The caller
    stops it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tb = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1",
                           "--port", str(port)], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).close()
            break
        except OSError:
            if tb.poll() is not None or time.monotonic() > deadline:
                tb.kill()
                raise RuntimeError(f"TensorBoard did not answer on port {port}") from None
            time.sleep(0.5)
    return tb, f"http://127.0.0.1:{port}/#scalars&tagFilter={urllib.parse.quote(TB_TAGS)}"


def shoot(page: Union[Path, str], out: Path, chrome: str = "chromium", width: int = WIDTH, height: int = HEIGHT,
          scale: float = SCALE, sections: tuple = (), ready: str = REPORT_READY, settle: float = 0.5) -> str:
    """`page` (a file, or a URL) in headless Chromium, a `width` × `height` window at `scale` (the README's
    picture by default), saved as `out` `settle` seconds after `ready` holds; with `sections`, the page keeps
    only those sections (by id). Returns the page's text."""
    # Chromium may still be writing its profile as it exits: what it leaves there is not worth failing over.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        b = Browser(chrome, profile)
        try:
            b.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": False},
                   session=True)
            b.call("Emulation.setScrollbarsHidden", {"hidden": True}, session=True)
            b.open(page.resolve().as_uri() if isinstance(page, Path) else page)
            assert b.wait_for(ready), f"{page} did not load"
            if sections:
                keep = json.dumps(list(sections))
                b.evaluate(f"document.querySelectorAll('section').forEach(s => {{ if (!{keep}.includes(s.id)) s.remove(); }})")
            time.sleep(settle)  # a report's frames decode after the load event; TensorBoard draws its charts after it
            b.screenshot(str(out))
            return str(b.evaluate("document.body.innerText"))
        finally:
            b.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--training", action="store_true",
                    help="docs/training-report.png and docs/tensorboard.png: a pixel PPO run's replay and logs (~3 min)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--chrome", default="chromium")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        if args.training:
            args.out = args.out or ROOT / "docs" / "training-report.png"
            text = shoot(report_of_a_killed_training_run(Path(work)), args.out, args.chrome, TRAINING_WIDTH, TRAINING_HEIGHT, 1.0,
                         TRAINING_SECTIONS)
            # The same run's TensorBoard scalars, beside the report picture.
            tb, url = tensorboard(Path(work), "run/tb")
            try:
                board = args.out.with_name("tensorboard.png")
                shoot(url, board, args.chrome, TB_WIDTH, TB_HEIGHT, 1.0, ready="document.readyState === 'complete'", settle=8.0)
                print(f"wrote {board} ({board.stat().st_size // 1024} kB)")
            finally:
                tb.terminate()
                tb.wait()
        else:
            args.out = args.out or ROOT / "docs" / "report.png"
            text = shoot(report_of_the_default_job(Path(work)), args.out, args.chrome)
    version = re.search(r"rollway v(\d+)", text)
    says = f"; the report says format v{version[1]}" if version else ""
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} kB{says})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
