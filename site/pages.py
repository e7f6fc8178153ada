"""The site's pages: each source in src/ holds only what is its own (its title and scripts,
then its ``<main>``); `render` wraps it in what every page shares, the head's common lines
and the header with the navigation, the page's own link marked as the current one, and
writes the shared parts it names (`PARTS`) in their places."""

from __future__ import annotations

import re
from pathlib import Path

from pyburn.errors import WebBuildError

#: the header's links, in their order: (page, label)
NAV = (("mnist.html", "Draw a digit"), ("train.html", "Train"),
       ("cartpole.html", "Balance a pole"), ("classify.html", "Classify a shape"),
       ("generate.html", "Generate text"), ("playground.html", "Your code"),
       ("remote.html", "On a server"), ("bench.html", "Benchmarks"))

#: the parts a page's source names by a comment on a line of its own (``<!-- devices -->``
#: for parts/devices.html, the device switch of the pages that run a model), each written in
#: its place at the comment's indent
PARTS = Path(__file__).resolve().parent / "parts"
#: a line that names a part
PART = re.compile(r"^( *)<!-- (\w+) -->$", re.MULTILINE)
#: what marks the page's own link in the navigation
CURRENT = ' aria-current="page"'
#: where a source's own head lines end and its body begins
MAIN = "  <main>"

LAYOUT = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
{title}
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="style.css">
{scripts}</head>
<body>
  <header>
    <a class="brand" href="index.html">pyburn</a>
    <nav>
{nav}
    </nav>
  </header>
{main}</body>
</html>
"""


def render(name: str, source: str) -> str:
    """The page `name` (its file name) whole, from its source: a ``<title>`` line, its
    ``<script>`` lines, then its ``<main>`` element."""
    head, found, main = source.partition(MAIN)
    title, *scripts = head.splitlines() or [""]
    if not found or not title.strip().startswith("<title>"):
        raise WebBuildError(f"site page {name}: its source must begin with a <title> line, "
                            f"then its <script> lines, then {MAIN.strip()}")
    nav = "\n".join(f'      <a href="{page}"{CURRENT if page == name else ""}>{label}</a>'
                    for page, label in NAV)
    return LAYOUT.format(title=title, scripts="".join(f"{s}\n" for s in scripts), nav=nav,
                         main=PART.sub(lambda m: _part(name, m.group(2), m.group(1)),
                                       found + main))


def _part(page: str, name: str, indent: str) -> str:
    """The part `name` with every line indented by `indent`."""
    found = PARTS / f"{name}.html"
    if not found.is_file():
        raise WebBuildError(f"site page {page}: no part named {name!r} (there are "
                            f"{', '.join(sorted(p.stem for p in PARTS.glob('*.html')))})")
    return "\n".join(indent + line for line in found.read_text(encoding="utf-8").splitlines())


def render_all(folder: Path) -> None:
    """Every page (``*.html``) in `folder` rendered in place from its source."""
    for page in sorted(folder.glob("*.html")):
        page.write_text(render(page.name, page.read_text(encoding="utf-8")), encoding="utf-8")
