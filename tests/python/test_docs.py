"""Issue 57: the docs site. Every page's examples run as written (docs_pages.py), the site builds
strictly (a broken link, anchor or reference fails it), its reference names every public setting,
field and flag, and it works in a real browser: headless Chromium finds "resume" and "final_obs"
with the site's own search, with no console error."""

import functools
import json
import http.server
import inspect
import os
import re
import shutil
import subprocess
import sys
import threading

import pytest

import docs_pages
import rollway
from conftest import chromium

ROOT = docs_pages.ROOT
PAGES = [p for p in docs_pages.pages() if any(not b.skip for b in docs_pages.parse(p).blocks)]


# The pages whose examples take longest (a Ray cluster, a long run killed and resumed, training): the
# suite starts them first (the `heavy` mark, conftest.py), so that no worker is left finishing one alone.
HEAVY_PAGES = {"guides/ray.md", "guides/long-runs.md", "concepts/dataset.md", "guides/own-env.md", "guides/s3.md",
               "guides/atari-mujoco.md"}


def page_param(path):
    name = str(path.relative_to(docs_pages.DOCS))
    return pytest.param(path, id=name, marks=[pytest.mark.heavy] if name in HEAVY_PAGES else [])


@pytest.mark.parametrize("path", [page_param(p) for p in PAGES])
def test_every_example_on_the_page_runs(path, tmp_path, request):
    """Each page's blocks in one interpreter, in order: up to half a minute for the pages that start a
    Ray cluster, kill and resume a long run, or train."""
    page = docs_pages.parse(path)
    for need in page.needs:
        assert need == "s3", f"{path}: unknown need {need!r}"
        request.getfixturevalue("s3_store")  # sets AWS_* for the page's processes
    failures = docs_pages.run_page(page, str(tmp_path))
    assert not failures, "\n".join(failures)


def test_the_heavy_pages_are_pages():
    assert HEAVY_PAGES <= {str(p.relative_to(docs_pages.DOCS)) for p in PAGES}


def test_a_skipped_block_says_why():
    for path in docs_pages.pages():
        for b in docs_pages.parse(path).blocks:
            assert b.skip is None or len(b.skip) > 10, f"{path}:{b.line}: skip needs a reason"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built strictly as `make docs` builds it (without the cargo doc pages)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, ROLLWAY_DOCS_NO_RUST="1", NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def text_of(site, page):
    return (site / page).read_text(encoding="utf-8")


def public_settings():
    import rollway.ray

    for name, f in [("run", rollway.run), ("Rollout", rollway.Rollout), ("Loader", rollway.Loader),
                    ("ray.Rollout", rollway.ray.Rollout)]:
        target = f.__init__ if inspect.isclass(f) else f
        for p in inspect.signature(target).parameters.values():
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                yield name, p.name


def test_the_reference_names_every_setting_field_and_flag(site):
    settings = text_of(site, "reference/settings.html")
    for owner, name in public_settings():
        assert f"<code>{name}</code>" in settings, f"{owner}({name}=...) is missing from the settings reference"
    fields = text_of(site, "reference/fields.html")
    frag_fields = [n for n in rollway.Fragment.__slots__ if not n.startswith("_")]
    frag_fields += [n for n, v in vars(rollway.Fragment).items() if isinstance(v, property)]
    for name in frag_fields:
        assert f"<code>{name}</code>" in fields, f"Fragment.{name} is missing from the fields reference"
    for key in ("observations", "index", "mask", "episode_id", "policy_version", "next_observations"):
        assert f"<code>{key}</code>" in fields, f"the batch key {key!r} is missing from the fields reference"
    cli = text_of(site, "reference/cli.html")
    commands = re.findall(r"^  (\w+) ", subprocess.run([sys.executable, "-m", "rollway", "--help"], capture_output=True,
                                                       text=True).stdout.split("Commands:", 1)[1], flags=re.M)
    assert "run" in commands and "export" in commands
    for command in (c for c in commands if c != "help"):
        help_text = subprocess.run([sys.executable, "-m", "rollway", command, "--help"], capture_output=True, text=True).stdout
        for flag in set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", help_text)):
            assert flag in cli, f"rollway {command} {flag} is missing from the command-line reference"
    assert "EXIT STATUS" in cli


def cli_flags():
    """Each command's long flags, from its own --help: (command, flag)."""
    top = subprocess.run([sys.executable, "-m", "rollway", "--help"], capture_output=True, text=True).stdout
    for command in re.findall(r"^  (\w+) ", top.split("Commands:", 1)[1], flags=re.M):
        if command != "help":
            text = subprocess.run([sys.executable, "-m", "rollway", command, "--help"], capture_output=True, text=True).stdout
            for flag in sorted(set(re.findall(r"^ {2,6}(?:-\w, )?(--[a-z][a-z0-9-]+)", text, flags=re.M))):
                yield command, flag


def test_issue70_every_flag_and_setting_has_its_own_anchor_and_the_search_index_lands_on_flags(site):
    cli = text_of(site, "reference/cli.html")
    flags = list(cli_flags())
    assert ("run", "--resume") in flags and ("load", "--clip") in flags, flags
    for command, flag in flags:
        assert f'id="{command}{flag}"' in cli, f"rollway {command} {flag} has no anchor #{command}{flag}"
    settings = text_of(site, "reference/settings.html")
    for owner, name in public_settings():
        assert f'id="{owner.replace(".", "-")}-{name}"' in settings, f"{owner}({name}=...) has no anchor"
    # A flag as the README and the guides write it is a section of its own in the search index, titled by the flag.
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    titled = {d["location"]: d["title"] for d in index}
    pages = [ROOT / "README.md", *docs_pages.DOCS.rglob("*.md")]
    prose = "\n".join(p.read_text(encoding="utf-8") for p in pages)
    written = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", prose)) & {f for _, f in flags})
    assert "--resume" in written and "--commit-every" in written, written
    for flag in written:
        at = [loc for loc, title in titled.items() if loc.startswith("reference/cli.html#") and re.search(rf"{flag}\b", title)]
        assert at, f"the search index has no section titled {flag}"


def test_issue70_every_example_runs_from_the_installed_package_as_the_docs_call_it(tmp_path):
    """The guides' `python -m rollway.examples.NAME` works from a pip install: each example is a module
    of the package, run here away from the checkout; no page runs a file of the repository's instead."""
    pytest.importorskip("torch")
    import pkgutil

    import rollway.examples

    names = [m.name for m in pkgutil.iter_modules(rollway.examples.__path__)]
    assert "ppo_cartpole" in names and len(names) >= 7, names
    for name in names:
        r = subprocess.run([sys.executable, "-m", f"rollway.examples.{name}", "--help"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0 and "usage:" in r.stdout, f"python -m rollway.examples.{name} --help: {r.stderr[-2000:]}"
    for page in [ROOT / "README.md", *docs_pages.DOCS.rglob("*.md")]:
        runs_a_file = re.findall(r"python3? (?:\S*/)?examples/\w+\.py", page.read_text(encoding="utf-8"))
        assert not runs_a_file, f"{page} runs {runs_a_file}: a file of the checkout; write python -m rollway.examples.NAME"


def test_issue70_every_quoted_figure_is_bench_results_latest_with_its_date_and_machine():
    """scripts/figures.py: a page quotes a measured figure from bench/RESULTS.md's latest declaration of it,
    word for word, date and machine included; the figures the pages once disagreed on are such quotes."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import figures
    finally:
        sys.path.pop(0)
    assert not figures.problems(), "\n".join(figures.problems()) + "\n(python scripts/figures.py --write rewrites the quotes)"
    quoted = {("README.md", "ppo-cartpole-vs-sync"), ("docs/guides/train.md", "ppo-cartpole-vs-sync"),
              ("docs/concepts/hosts.md", "cartpole-random-rate"), ("README.md", "make-run-cold"),
              ("README.md", "make-test-after-run"), ("docs/contributing.md", "make-run-cold")}
    for page, name in sorted(quoted):
        assert f"<!-- figure {name} -->" in (ROOT / page).read_text(encoding="utf-8"), f"{page} does not quote {name}"
    # The README's table against the peers is quotes through and through.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = readme.split("## Against the peers", 1)[1].split("\n\n")[2].splitlines()[2:]
    assert len(rows) >= 5 and all("<!-- figure " in r.split("|")[2] for r in rows), rows
    # What a page shows rollway print names the format version this rollway writes.
    for page in figures.pages():
        for v in re.findall(r"rollway format v(\d+)", page.read_text(encoding="utf-8")):
            assert int(v) == rollway.FORMAT_VERSION, f"{page}: rollway format v{v}; this rollway writes v{rollway.FORMAT_VERSION}"


def test_issue70_every_figure_of_the_benchmarks_page_is_read_off_bench_results():
    """The Benchmarks page is tables, not quotes: each figure on it must be one bench/RESULTS.md states, at the
    page's precision and in its unit (scripts/figures.py, MEASURED_PAGES); a figure typed anew is caught."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import figures
    finally:
        sys.path.pop(0)
    assert "docs/benchmarks.md" in figures.MEASURED_PAGES
    results = "| rollway | 11.29M | 179.4× | 1,979 | 26.94 µs | 34.63 |\n"
    page = "rollway made 11.29M (179×); 2.0k frames/s, 26.9 µs a batch at 34.63 dB, on 2026-11-22 with N = 8"
    assert figures.unread(page, results) == []
    typed_anew = "rollway made 11.39M (180×); 2.1k frames/s, 26.9 ms a batch"
    assert [f for _, f in figures.unread(typed_anew, results)] == ["11.39M", "180×", "2.1k", "26.9 ms"]


def test_issue70_the_report_picture_is_made_by_its_script_from_the_current_build(tmp_path):
    """scripts/screenshots.py shoots docs/report.png from the default job this rollway runs: the page it
    shoots names the format version this rollway writes, at the picture's size."""
    chrome = chromium()
    if chrome is None:
        pytest.skip("no chromium")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import screenshots
    finally:
        sys.path.pop(0)
    out = tmp_path / "report.png"
    text = screenshots.shoot(screenshots.report_of_the_default_job(tmp_path), out, chrome)
    assert f"rollway v{rollway.FORMAT_VERSION}" in text, text[:2000]
    def size(png):  # width and height, from the PNG's IHDR
        head = png.read_bytes()[16:24]
        return int.from_bytes(head[:4], "big"), int.from_bytes(head[4:], "big")

    assert size(out) == size(ROOT / "docs" / "report.png") == (660, 1230)


def test_the_front_page_reaches_every_reference_page_in_one_click(site):
    front = text_of(site, "index.html")
    for page in ("reference/settings.html", "reference/fields.html", "reference/cli.html", "reference/python.html",
                 "getting-started.html", "concepts/failures.html"):
        assert f'href="{page}' in front, f"the front page does not link {page}"


@pytest.fixture(scope="module")
def served(site):
    """The built site on a loopback HTTP server (the search runs in a web worker, which file:// pages may
    not start)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture
def browser(tmp_path):
    from cdp import Browser

    chrome = chromium()
    if chrome is None:
        pytest.skip("no chromium")
    b = Browser(chrome, str(tmp_path / "profile"))
    yield b
    b.close()


@pytest.mark.parametrize("query, pages", [("resume", ("long-runs.html", "dataset.html", "record.html")),
                                          ("final_obs", ("fragments.html", "fields.html", "train.html")),
                                          # Issue 70: a flag as the docs write it lands on its own section, first.
                                          ("--resume", ("reference/cli.html#run--resume",)),
                                          ("--commit-every", ("reference/cli.html#run--commit-every",))])
def test_the_sites_search_finds_it_in_chromium(served, browser, query, pages):
    # Material opens its search with ?q=, once its web worker has indexed the site.
    browser.open(f"{served}/index.html?q={query}")
    links = browser.wait_for("[...document.querySelectorAll('.md-search-result__link')].map(a => a.href)")
    assert links, f"no search results for {query!r}"
    # Each link as page#section, without the server and the highlighting's ?h=.
    found = [re.sub(r"^https?://[^/]+/|\?[^#]*", "", link) for link in links]
    if query.startswith("--"):
        assert [f for f in found if "#" in f][0] in pages, f"{query!r}: the first section is not {pages}: {found[:5]}"
    assert any(page in f for f in found for page in pages), f"{query!r}: none of {pages} among {found}"
    assert not browser.errors, browser.errors


def test_the_front_page_renders_offline(served, browser, site, tmp_path):
    browser.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
                 session=True)
    browser.open(f"{served}/index.html")
    assert browser.wait_for("document.readyState === 'complete' && document.querySelector('h1').textContent")
    shot = tmp_path / "front.png"
    browser.screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    assert not browser.errors, browser.errors
    # Offline: no page of the site loads anything from another host.
    for html in site.rglob("*.html"):
        remote = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="(https?://[^"]+)"', html.read_text(encoding="utf-8"))
        assert not remote, f"{html}: loads {remote}"
    if os.environ.get("ROLLWAY_DOCS_SCREENSHOT"):
        shutil.copy(shot, os.environ["ROLLWAY_DOCS_SCREENSHOT"])


def test_the_layout_table_lists_every_workspace_crate():
    """Issue 58: the repository's layout (Contributing) names every crate of the workspace."""
    import tomllib

    members = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))["workspace"]["members"]
    crates = sorted({m for pattern in members for m in (
        [p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern)] if "*" in pattern else [pattern])})
    table = (docs_pages.DOCS / "contributing.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([^`]+)` \|", table, flags=re.M))
    assert len(crates) >= 15, crates
    missing = [c for c in crates if c not in rows]
    assert not missing, f"the layout table in docs/contributing.md misses {missing}"


RETRY_PAGES = ["FORMAT.md", "docs/concepts/failures.md", "docs/guides/s3.md", "crates/remote/src/store.rs"]


def test_issue72_the_store_retry_budget_the_docs_state_is_the_measured_one():
    """The pages that say how long a store request keeps trying quote bench/RESULTS.md's latest
    measurement (bench/store_retry.py), within its rounding, and no budget it never had."""
    results = open(os.path.join(ROOT, "bench", "RESULTS.md")).read()
    table = results.rsplit("### How long one store request keeps trying", 1)[1].split("\n\n| store")[1].split("\n\n")[0]
    rows = [[c.strip() for c in line.split("|")[2:5]] for line in table.splitlines()[2:]]
    mins, medians, maxes = ([float(r[i]) for r in rows] for i in range(3))
    measured = (min(mins), max(maxes), min(medians), max(medians))
    for page in RETRY_PAGES:
        text = " ".join(open(os.path.join(ROOT, page)).read().replace("//!", " ").split())
        m = re.search(r"16 retries.*?measured ([\d.]+)–([\d.]+) s before a request gives up, median ([\d.]+)–([\d.]+) s", text)
        assert m, f"{page} says how long a store request keeps trying"
        stated = tuple(float(x) for x in m.groups())
        assert all(abs(s - x) <= 0.5 for s, x in zip(stated, measured)), f"{page}: {stated}, measured {measured}"
        assert "minute and a half" not in text and "a minute and more" not in text, page
