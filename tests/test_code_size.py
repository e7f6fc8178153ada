"""The line budget of docs/size.md: no source file grows past what one person can hold."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pyburn"
MAX_FILE_LINES = 800


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(
    PACKAGE)))
def test_source_file_stays_under_the_line_budget(path: Path):
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_FILE_LINES, f"{path} has {lines} lines (budget {MAX_FILE_LINES})"
