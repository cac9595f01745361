"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages that are generated from the code, so they
cannot drift from it.

- `<!-- generated: cli -->` becomes every `rollway` command's `--help` (clap's own text: flags,
  defaults, exit codes), read from the installed package's command line (`python -m rollway`, the
  same binary as `target/release/rollway`).
- `<!-- generated: fields Fragment -->` / `<!-- generated: fields batch -->` becomes the attributes
  of a real fragment / the keys of a real `Loader` batch (from a tiny CartPole rollout made at build
  time), each with its dtype and shape there and the docstring's sentence about it (`Fragment`'s,
  `Loader`'s): a field the docstring never names fails the build.
- `<!-- generated: settings NAME -->` becomes a table of one entry point's keyword arguments: each
  with its default (from the signature) and the sentence of the docstring that documents it. A
  keyword its docstring never names fails the build: an undocumented setting is a bug.

- `<!-- generated: bars COLUMN -->` right above a Markdown table draws that table's COLUMN as a bar
  chart (an inline SVG, log scale, under the table): the plot is made from the very figures shown.
- `<!-- generated: crates -->` becomes the workspace's crates with their Cargo descriptions, linked to
  their `cargo doc` pages, which `on_post_build` copies into the site from `$CARGO_TARGET_DIR/doc`
  (`make docs` runs `cargo doc` first; `ROLLWAY_DOCS_NO_RUST=1` builds without them, as the tests do).

The site is built by the Python that runs mkdocs, which must have rollway installed (`make docs`
uses the test venv, where `pip install .` put it).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!-- generated: (?P<what>\w+)(?: (?P<arg>[\w.]+))? -->")

# The entry points whose settings are tabled: `<!-- generated: settings KEY -->`.
ENTRY_POINTS: Dict[str, str] = {
    "run": "rollway:run",
    "Rollout": "rollway:Rollout",
    "Loader": "rollway:Loader",
    "ray.Rollout": "rollway.ray:Rollout",
    "DataCollector": "rollway:DataCollector",
    "Dataset": "rollway:Dataset",
}


BARS = re.compile(r"<!-- generated: bars (?P<column>[^>]+?) -->\n(?P<table>(?:\|.*\|\n)+)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = BARS.sub(lambda m: m["table"] + "\n" + bar_chart(m["table"], m["column"]) + "\n", markdown)

    def one(m: re.Match) -> str:
        if m["what"] == "cli":
            return cli_reference()
        if m["what"] == "settings":
            return settings_table(m["arg"])
        if m["what"] == "fields":
            return fields_table(m["arg"])
        if m["what"] == "crates":
            return crates_table()
        raise ValueError(f"{page.file.src_path}: unknown generated section {m['what']!r}")

    return MARK.sub(one, markdown)


ROLE = re.compile(r":(?:class|meth|func|mod|attr|data|exc):(?=<code>)")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """The docstrings' Sphinx roles (``:class:`Summary```), rendered by mkdocstrings as Markdown, keep
    the role's name before the code: drop it, as Sphinx would."""
    return ROLE.sub("", html)


def rollway_cli(*args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "rollway", *args], capture_output=True, text=True, check=True)
    return out.stdout


def commands() -> List[str]:
    """The subcommands, in `rollway --help`'s order."""
    text = rollway_cli("--help")
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    names = [line.split()[0] for line in block.splitlines() if line.startswith("  ") and not line.startswith("   ")]
    return [n for n in names if n != "help"]


# A clap entry's first line: an option (`  -o, --out <OUT>`, `      --seed <SEED>`) or an argument (`  [CONFIG]`).
ENTRY = re.compile(r"^ {2,6}(?P<head>(?:-\w, )?--[\w-]+.*|-\w\b.*|[\[<][^\]>]+[\]>].*)$")


def help_entries(text: str) -> Tuple[str, List[Tuple[str, str]], str]:
    """A command's `--help` as its head (what it does, its usage), its entries (each argument's
    and option's first line with its description, in clap's order) and its tail (the text after
    them: examples, exit codes)."""
    head, _, rest = text.partition("\nArguments:\n") if "\nArguments:\n" in text else text.partition("\nOptions:\n")
    entries: List[Tuple[str, List[str]]] = []
    tail: List[str] = []
    for line in rest.splitlines():
        m = ENTRY.match(line)
        if tail or (line[:1].strip() and line not in ("Arguments:", "Options:")):
            tail.append(line)  # flush left and not the entries' sections: the text after them (EXAMPLES:, …)
        elif m:
            # A short help puts the description on the entry's own line, after two spaces or more.
            first, *same_line = re.split(r"\s{2,}", m["head"].strip(), maxsplit=1)
            # Indented to its own column, as the lines that continue it are.
            entries.append((first, [" " * line.index(same_line[0]) + same_line[0]] if same_line else []))
        elif entries and line[:1].isspace():
            entries[-1][1].append(line)
    described = [(h, textwrap.dedent("\n".join(d)).strip()) for h, d in entries]
    return head.rstrip(), described, "\n".join(tail).strip()


def flag_anchor(command: str, head: str) -> str:
    """An entry's anchor: `run--resume` for `rollway run --resume`, `run-config` for its `[CONFIG]`."""
    long = re.search(r"--([\w-]+)", head)
    name = f"-{long[1]}" if long else re.sub(r"\W+", "", head.split()[0]).lower()
    return f"{command}-{name}"


def cli_reference() -> str:
    """Every command's `--help`, each flag under its own heading: a link or a search for
    `--resume` lands on `rollway run --resume` itself (`#run--resume`)."""
    parts = ["## rollway\n", "```text\n" + rollway_cli("--help").rstrip() + "\n```\n"]
    for name in commands():
        head, entries, tail = help_entries(rollway_cli(name, "--help"))
        parts += [f"## rollway {name}\n", "```text\n" + head + "\n```\n"]
        for entry, description in entries:
            label = entry.split()[-1] if entry.startswith("-") and "," in entry else entry.split()[0]
            parts.append(f"### `rollway {name} {entry}` {{#{flag_anchor(name, entry)} data-toc-label='{label}'}}\n")
            if description:
                parts.append("```text\n" + description + "\n```\n")
        if tail:
            parts.append("```text\n" + tail + "\n```\n")
    return "\n".join(parts)


def resolve(key: str) -> Callable[..., Any]:
    module, name = ENTRY_POINTS[key].split(":")
    return getattr(importlib.import_module(module), name)


def units(doc: str) -> List[str]:
    """A docstring cut into list items and sentences, each flattened to one line."""
    out: List[str] = []
    for para in re.split(r"\n\s*\n", doc):
        items = re.split(r"\n\s*- ", "\n" + para) if re.match(r"\s*- ", para) or "\n- " in para else [para]
        for item in items:
            flat = re.sub(r"\s*\n\s*", " ", item).strip()
            flat = re.sub(r"^\*\*[^*]+\*\*\s*", "", flat)  # a paragraph's bold lead-in
            out += [u for u in re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.])\s+(?=[A-Z`*(])", flat) if u]
    return out


def top_level_parts(text: str) -> List[str]:
    """`text` split at its `; ` outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in "([") - (c in ")]")
        if c == ";" and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


def documented(doc: str, name: str) -> str:
    """The docstring's sentence (or list item) that first names ``name``, as Markdown; of a sentence
    that defines several names in `;`-separated parts (```a``, ``b``: ...`), the part that defines it
    (else the first that names it)."""
    named = re.compile(rf"``{re.escape(name)}(=[^`]*)?``")
    for unit in units(doc):
        if named.search(unit):
            parts = top_level_parts(unit)
            defining = [p for p in parts if named.search(p.split(": ", 1)[0])]
            naming = [p for p in parts if named.search(p)]
            return rst_to_md((defining or naming)[0].strip(" -;"))
    raise ValueError(f"{name}: not documented in the docstring (write a sentence naming ``{name}``)")


def rst_to_md(text: str) -> str:
    text = re.sub(r":(?:class|meth|func|mod|attr|data|exc):`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`").replace("|", "\\|")


def settings_table(key: str) -> str:
    f = resolve(key)
    target = f.__init__ if inspect.isclass(f) else f
    doc = "\n".join(d for d in (inspect.getdoc(f), inspect.getdoc(target) if target is not f else None) if d)
    rows = ["| setting | default | what it does |", "|---|---|---|"]
    for p in inspect.signature(target).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = "required" if p.default is p.empty else f"`{p.default!r}`"
        # Each setting its own anchor (`settings.html#Rollout-seed_each_episode`), for links to it.
        anchor = f"{key.replace('.', '-')}-{p.name}"
        rows.append(f'| <span id="{anchor}"></span>`{p.name}` | {default} | {documented(doc, p.name)} |')
    return "\n".join(rows) + "\n"


def describe(value: Any) -> str:
    """dtype and shape of an array (or of a dict's arrays), as the field list shows them."""
    if isinstance(value, dict):
        inner = sorted({describe(v) for v in value.values()})
        return "dict of " + (", ".join(inner) if inner else "arrays")
    if isinstance(value, list):
        return "list"
    shape = getattr(value, "shape", None)
    if shape is None:
        return type(value).__name__
    return f"{value.dtype} {list(shape)}"


@functools.lru_cache(maxsize=None)
def samples() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """A real fragment's attributes and a real batch's keys, from one tiny CartPole replay made here
    (once a build: both tables read it)."""
    import tempfile

    import numpy as np

    import rollway

    def policy(obs: Any, first: Any, state: Any) -> Dict[str, Any]:
        return {"actions": np.zeros(len(obs), np.int64), "value": np.zeros(len(obs), np.float32)}

    with tempfile.TemporaryDirectory() as tmp:
        with rollway.Rollout("CartPole-v1", policy, num_envs=2, steps_per_fragment=8, out=f"{tmp}/replay") as rollout:
            frag = rollout.collect()
            for _ in range(8):
                rollout.collect()
        # The fields a user reads: slots and properties, not the private ones.
        names = [n for n in type(frag).__slots__ if not n.startswith("_")]
        names += [n for n, v in vars(type(frag)).items() if isinstance(v, property)]
        batch = next(iter(rollway.Loader(f"{tmp}/replay", clip=4, batch=2, next_observations=True)))
        return {n: getattr(frag, n) for n in names}, dict(batch)


def fields_table(kind: str) -> str:
    cls = importlib.import_module("rollway").Fragment if kind == "Fragment" else resolve("Loader")
    # A property's own docstring documents it (`Fragment.dones`).
    props = [inspect.getdoc(v) for v in vars(cls).values() if isinstance(v, property)]
    doc = "\n\n".join([inspect.getdoc(cls) or ""] + [d for d in props if d])
    fragment, batch = samples()
    rows = ["| field | in the example | what it holds |", "|---|---|---|"]
    for name, value in (fragment if kind == "Fragment" else batch).items():
        rows.append(f"| `{name}` | {describe(value)} | {documented(doc, name)} |")
    return "\n".join(rows) + "\n"


def crates() -> List[Dict[str, str]]:
    out = []
    for manifest in sorted(ROOT.glob("crates/*/Cargo.toml")):
        toml = tomllib.loads(manifest.read_text(encoding="utf-8"))
        package = toml["package"]
        lib = toml.get("lib", {}).get("name", package["name"].replace("-", "_"))
        out.append({"dir": manifest.parent.name, "name": package["name"], "lib": lib, "description": package.get("description", "")})
    return out


def crates_table() -> str:
    rows = ["| crate | what it is |", "|---|---|"]
    for c in crates():
        lib = c["lib"]
        # Raw HTML: the pages are copied in after the build, so MkDocs cannot check a Markdown link to them.
        rows.append(f'| <a href="../rust/{lib}/index.html"><code>{c["name"]}</code></a> (`crates/{c["dir"]}`) | {c["description"]} |')
    return "\n".join(rows) + "\n"


def on_post_build(config: Any) -> None:
    if os.environ.get("ROLLWAY_DOCS_NO_RUST"):
        return
    doc = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "doc"
    libs = [c["lib"] for c in crates()]
    missing = [lib for lib in libs if not (doc / lib / "index.html").exists()]
    if missing:
        raise RuntimeError(f"{doc}: no cargo doc pages for {', '.join(missing)}: run `cargo doc --workspace --no-deps` first "
                           "(make docs does), or set ROLLWAY_DOCS_NO_RUST=1 to build without them")
    shutil.copytree(doc, Path(config["site_dir"]) / "rust", dirs_exist_ok=True)


def number(cell: str) -> float:
    """A table's figure: `**11.29M**`, `471.4k`, `12,166`, `29.3 s (15.7–39.3)` → a float."""
    m = re.search(r"([\d,]+(?:\.\d+)?)\s*([kM]?)", cell.replace("*", ""))
    if not m:
        raise ValueError(f"bar chart: {cell!r} holds no number")
    return float(m[1].replace(",", "")) * {"": 1, "k": 1e3, "M": 1e6}[m[2]]


def plain(cell: str) -> str:
    return re.sub(r"[*`]", "", cell).strip()


def bar_chart(table: str, column: str) -> str:
    """An inline SVG of `column` of a Markdown table, one bar a row, on a log scale (the figures of
    a benchmark table span orders of magnitude)."""
    import html
    import math

    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.strip().splitlines()]
    header, body = rows[0], [r for r in rows[2:] if len(r) == len(rows[0])]
    col = header.index(column) if column in header else None
    if col is None:
        raise ValueError(f"bar chart: no column {column!r} in {header}")
    data = [(plain(r[0]), number(r[col]), plain(r[col])) for r in body]
    top = max(math.log10(v) for _, v, _ in data)
    bottom = min(0.0, math.floor(min(math.log10(v) for _, v, _ in data)))
    width, label_w, bar_h = 760, 330, 22
    bars = []
    for i, (name, value, shown) in enumerate(data):
        w = (width - label_w - 90) * (math.log10(value) - bottom) / max(top - bottom, 1e-9)
        y = i * (bar_h + 6)
        label = name if len(name) <= 44 else name[:43] + "\u2026"
        bars.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{html.escape(label)}</text>'
                    f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{"#3f51b5" if i == 0 else "#9fa8da"}"/>'
                    f'<text x="{label_w + w + 6:.1f}" y="{y + 15}">{html.escape(shown)}</text>')
    height = len(data) * (bar_h + 6)
    return (f'<figure class="bars"><svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{html.escape(column)}, log scale" style="max-width: 100%; height: auto; font: 12px sans-serif">{"".join(bars)}</svg>'
            f'<figcaption>{html.escape(column)}, log scale: the table above, drawn</figcaption></figure>')
