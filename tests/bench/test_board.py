"""``pyburn bench board``: one self-contained HTML page, a chart per benchmark case, a line per
device; checked on records built by hand (structure only)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from pyburn.bench import board, record
from pyburn.cli import main

from .test_records import around, made

#: elements with no end tag
VOID = {"meta", "br", "img", "input", "link", "hr", "line", "polygon", "polyline"}


class Checker(HTMLParser):
    """Checks that every element is closed in order, and collects tags and attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, f"</{tag}> closes nothing open"


def records() -> list[record.Record]:
    """Three runs of matmul on cpu and wgpu (one chart, two lines) and one of a reduction."""
    found = []
    for day in (1, 2, 3):
        time = f"2026-12-0{day}T10:00:00Z"
        found.append(made(around(10.0, seed=day), time=time))
        found.append(made(around(30.0, seed=day), time=time, benchmark="matmul.wgpu"))
    found.append(made([120.0, 125.0], unit="M elem/s", benchmark="reduction.cpu",
                      case="sum() <1000x1000>"))
    return found


def test_board_is_valid_html_with_an_svg_per_case():
    page = board.page(records())
    checker = Checker()
    checker.feed(page)
    checker.close()
    assert checker.open == []
    assert page.startswith("<!doctype html>")
    assert checker.tags.count("svg") == 2  # matmul (two devices) and the reduction
    assert checker.tags.count("polyline") == 3  # a line per device
    assert checker.tags.count("circle") == 7  # a point per record
    assert page.count('stroke-opacity="0.5"') == 7  # and its whisker, min to max
    assert "sum() &lt;1000x1000&gt;" in page  # escaped


def test_a_run_alone_shows_each_spread_as_a_whisker():
    """One run (the site's benchmark page draws its own): the band has no width, so each
    point's fastest and slowest samples are a vertical line through it."""
    (chart,) = board.charts([made([1.0, 2.0, 4.0]), made([3.0, 5.0], benchmark="matmul.wgpu")])
    svg = board.page([made([1.0, 2.0, 4.0])])
    (whisker,) = re.findall(r'<line x1="([\d.]+)" y1="([\d.]+)" x2="([\d.]+)" y2="([\d.]+)" '
                            r'stroke="#[0-9a-f]+" stroke-opacity', svg)
    x1, top, x2, bottom = map(float, whisker)
    assert x1 == x2 and top < bottom  # vertical, the slowest (4.0) above the fastest
    assert len(chart.runs) == 1 and sorted(chart.lines) == ["cpu", "wgpu"]


def test_board_loads_nothing():
    page = board.page(records())
    checker = Checker()
    checker.feed(page)
    assert "script" not in checker.tags
    assert not [name for name, _ in checker.attributes if name in ("src", "href")]
    assert not re.search(r"https?:|//[a-z]|url\(|@import", page)


def test_lines_name_their_machine_when_there_are_several():
    found = records() + [made([9.0], time="2026-12-04T10:00:00Z", machine="m2")]
    (matmul, _) = board.charts(found)
    assert sorted(matmul.lines) == ["cpu on m1", "cpu on m2", "wgpu on m1"]
    assert len(matmul.runs) == 4


def test_board_command_writes_the_page(tmp_path, capsys):
    record.write(records(), tmp_path)
    out = tmp_path / "board.html"
    assert main(["bench", "board", "--dir", str(tmp_path), "--out", str(out)]) == 0
    assert out.read_text().count("<svg") == 2
    assert str(out) in capsys.readouterr().out
