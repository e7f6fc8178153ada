"""The line budget of docs/size.md: no source file grows past what one person can hold, and the
page's numbers stay true.

``python tests/test_code_size.py`` rewrites docs/size.md from the tree (today's date, the
numbers, the largest files), keeping each row's "what it holds" text.
"""

from __future__ import annotations

import ast
import datetime
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pyburn"
DOC = ROOT / "docs" / "size.md"
MAX_FILE_LINES = 800
REGENERATE = "python tests/test_code_size.py"
#: how far a number on the page may drift before the page must be regenerated
TOLERANCE, MIN_SLACK = 0.10, 150
LARGEST = 4

ROW = re.compile(r"^\| `(pyburn(?:/\w+)*)/?`[^|]*\| ([\d,]+)[^|]*\| (.*?) \|$", re.M)
#: the prose, matched with its line breaks made spaces
TOTALS = re.compile(r"about ([\d,]+) lines of Python \(([\d,]+) of them `pyburn.onnx`\)")
LARGEST_SENTENCE = re.compile(r"The largest files: (.*?)\.(?:\s|$)")
LARGEST_FILE = re.compile(r"`([\w/]+\.py)` \(([\d,]+)\)")


def lines_of(paths) -> int:
    return sum(p.read_bytes().count(b"\n") for p in paths)


def measure() -> dict:
    """Lines per package directory (its own files only, as ``find DIR -maxdepth 1``), the totals
    and the largest files, all counted as ``wc -l`` counts."""
    files = sorted(PACKAGE.rglob("*.py"))
    packages = {}
    for directory in sorted({p.parent for p in files}):
        name = directory.relative_to(ROOT).as_posix()
        packages[name] = lines_of(directory.glob("*.py"))
    packages["pyburn/shaders"] = lines_of((PACKAGE / "shaders").glob("*.wgsl"))
    sizes = sorted(((lines_of([p]), p.relative_to(PACKAGE).as_posix()) for p in files),
                   reverse=True)
    return {"packages": dict(sorted(packages.items())), "total": lines_of(files),
            "onnx": lines_of((PACKAGE / "onnx").rglob("*.py")),
            "largest": [(path, n) for n, path in sizes[:LARGEST]]}


def documented(text: str) -> dict:
    """What docs/size.md says: per package (lines, what it holds), the totals, the largest."""
    prose = " ".join(text.split())
    totals, largest = TOTALS.search(prose), LARGEST_SENTENCE.search(prose)
    return {"packages": {m[1]: (int(m[2].replace(",", "")), m[3]) for m in ROW.finditer(text)},
            "total": int(totals[1].replace(",", "")) if totals else None,
            "onnx": int(totals[2].replace(",", "")) if totals else None,
            "largest": [(m[1], int(m[2].replace(",", "")))
                        for m in LARGEST_FILE.finditer(largest[1] if largest else "")]}


def close(doc: int, real: int) -> bool:
    return abs(doc - real) <= max(TOLERANCE * real, MIN_SLACK)


def stale(what: str) -> str:
    return f"docs/size.md is stale: {what}; regenerate it with `{REGENERATE}`"


def docstring_line(package: str) -> str:
    """A new row's "what it holds": the first sentence of the package's docstring."""
    init = ROOT / package / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) if init.exists() else ""
    first_paragraph = " ".join((doc or "").split("\n\n")[0].split())
    return first_paragraph.split(". ")[0].rstrip(".")


def render(real: dict, holds: dict, today: datetime.date) -> str:
    rows = []
    for name, n in real["packages"].items():
        label = "`pyburn/` (top level)" if name == "pyburn" else f"`{name}`"
        count = f"{n:,} (WGSL)" if name == "pyburn/shaders" else f"{n:,}"
        rows.append(f"| {label} | {count} | {holds.get(name) or docstring_line(name)} |")
    largest = ", ".join(f"`{path}` ({n:,})" for path, n in real["largest"])
    totals = textwrap.fill(
        f"The whole package is about {round(real['total'], -2):,} lines of Python "
        f"({round(real['onnx'], -2):,} of them `pyburn.onnx`). The largest files: {largest}.",
        width=95, break_on_hyphens=False, break_long_words=False)
    return f"""# Size budget

One concept per file; no file under `pyburn/` may pass {MAX_FILE_LINES} lines
(`tests/test_code_size.py` enforces it). Lines per package, measured with
`find DIR -maxdepth 1 -name '*.py' | xargs cat | wc -l` ({today.isoformat()}):

| package | lines | what it holds |
|---|---|---|
{chr(10).join(rows)}

{totals}

The same test checks this page against the tree: every package directory is listed and each
number is within {TOLERANCE:.0%} (or {MIN_SLACK} lines) of the real count. `{REGENERATE}` rewrites
the page with today's numbers and keeps the "what it holds" column.
"""


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(
    PACKAGE)))
def test_source_file_stays_under_the_line_budget(path: Path):
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_FILE_LINES, f"{path} has {lines} lines (budget {MAX_FILE_LINES})"


def test_size_doc_lists_every_package_with_its_lines():
    real, doc = measure()["packages"], documented(DOC.read_text(encoding="utf-8"))["packages"]
    assert not real.keys() - doc.keys(), stale(f"{sorted(real.keys() - doc.keys())} not listed")
    assert not doc.keys() - real.keys(), stale(f"{sorted(doc.keys() - real.keys())} are gone")
    off = {name: (doc[name][0], n) for name, n in real.items() if not close(doc[name][0], n)}
    assert not off, stale(f"(documented, real) lines {off}")


def test_size_doc_totals_and_largest_files_are_true():
    real, doc = measure(), documented(DOC.read_text(encoding="utf-8"))
    assert doc["total"] is not None, stale("no 'about N lines of Python (M of them ...)' sentence")
    for key in ("total", "onnx"):
        assert close(doc[key], real[key]), stale(f"{key} {doc[key]:,}, really {real[key]:,}")
    assert doc["largest"], stale("no largest files listed")
    sizes = {p.relative_to(PACKAGE).as_posix(): lines_of([p]) for p in PACKAGE.rglob("*.py")}
    for path, n in doc["largest"]:
        assert path in sizes, stale(f"{path} is gone")
        assert close(n, sizes[path]), stale(f"{path} has {sizes[path]} lines, not {n}")


if __name__ == "__main__":
    holds = {name: text for name, (_, text) in documented(DOC.read_text(encoding="utf-8"))
             ["packages"].items()}
    DOC.write_text(render(measure(), holds, datetime.date.today()), encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
