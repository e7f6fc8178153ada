"""``pyburn bench board``: records as one static HTML page, a chart per benchmark case.

Each chart is an inline SVG: across, the runs that measured the case, oldest first, named by
version and commit; up, the median of each run with a band and a whisker from its fastest to
its slowest sample; one line per device (with its adapter, and its machine when the records
come from more than one). Hovering a point shows its run, median and spread (an SVG
``<title>``). The page has no script and loads nothing: styles are inline, so it opens from a
file, from the static site (``make site`` adds it as board.html), from an e-mail attachment
or inside the site's benchmark page (bench.html, the records of its run) alike.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .record import Record, higher_is_better
from .report import format_number

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 48, 12, 40
#: the most run labels across a chart (about 90 pixels each)
LABELS = 6
#: one colour per line, in turn (readable on white, distinguishable in grey)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 72em;
       padding: 0 1em; color: #222; }
section { margin: 2em 0; }
h2 { font-size: 1em; margin: 0 0 .3em; }
svg { width: 100%; max-width: 640px; height: auto; display: block; }
svg text { font: 11px system-ui, sans-serif; fill: #555; }
.legend span { margin-right: 1.2em; white-space: nowrap; }
.legend i { display: inline-block; width: 1.4em; height: .3em; vertical-align: middle;
            margin-right: .3em; }
table { border-collapse: collapse; } td, th { padding: .1em .8em .1em 0; text-align: left; }
"""


@dataclass(frozen=True)
class Chart:
    """One case's chart: its title, unit, the runs across (labels, oldest first) and each
    line's records by run index."""

    title: str
    unit: str
    runs: tuple[str, ...]
    lines: dict[str, dict[int, Record]]


def _line_name(r: Record, machines: bool) -> str:
    name = r.device + (f" ({r.adapter})" if r.adapter else "")
    return f"{name} on {r.run.machine_id}" if machines else name


def charts(records: Iterable[Record]) -> list[Chart]:
    """A chart per case (family and case: a case measured on several devices is one chart
    with a line each), in the order the cases first appear."""
    found = list(records)
    machines = len({r.run.machine_id for r in found}) > 1
    grouped: dict[tuple[str, str], list[Record]] = {}
    for r in found:
        grouped.setdefault((r.family, r.case), []).append(r)
    made = []
    for (family, case), rs in grouped.items():
        rs.sort(key=lambda r: r.run.time)
        runs = list(dict.fromkeys((r.run.time, r.run.machine_id, r.run.label) for r in rs))
        lines: dict[str, dict[int, Record]] = {}
        for r in rs:
            at = runs.index((r.run.time, r.run.machine_id, r.run.label))
            lines.setdefault(_line_name(r, machines), {})[at] = r
        made.append(Chart(f"{family}: {case}", rs[0].unit,
                          tuple(label for *_, label in runs), lines))
    return made


def _svg(chart: Chart) -> str:
    """The chart as an inline SVG element."""
    points = [r for line in chart.lines.values() for r in line.values()]
    low = min(r.summary.min for r in points)
    high = max(r.summary.max for r in points)
    pad = (high - low) * 0.1 or abs(high) * 0.1 or 1.0
    low, high = low - pad, high + pad
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(1, len(chart.runs) - 1)

    def x(i: int) -> float:
        return LEFT + (i * step if len(chart.runs) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (high - v) / (high - low)

    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="{html.escape(chart.title)}">',
             f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
             'stroke="#999"/>']
    for v in (low + pad, (low + high) / 2, high - pad):
        parts.append(f'<line x1="{LEFT}" y1="{y(v):.1f}" x2="{WIDTH - RIGHT}" y2="{y(v):.1f}" '
                     'stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">'
                     f'{format_number(v)}</text>')
    shown = min(len(chart.runs), LABELS)  # evenly spread, the first and the last among them
    for i in sorted({round(k * (len(chart.runs) - 1) / max(1, shown - 1)) for k in range(shown)}):
        parts.append(f'<text x="{x(i):.1f}" y="{HEIGHT - BOTTOM + 16}" '
                     f'text-anchor="middle">{html.escape(chart.runs[i])}</text>')
    for colour, (name, line) in zip(_colours(len(chart.lines)), chart.lines.items()):
        order = sorted(line)
        top = " ".join(f"{x(i):.1f},{y(line[i].summary.max):.1f}" for i in order)
        bottom = " ".join(f"{x(i):.1f},{y(line[i].summary.min):.1f}" for i in reversed(order))
        parts.append(f'<polygon points="{top} {bottom}" fill="{colour}" fill-opacity="0.15" '
                     'stroke="none"/>')
        middle = " ".join(f"{x(i):.1f},{y(line[i].summary.median):.1f}" for i in order)
        parts.append(f'<polyline points="{middle}" fill="none" stroke="{colour}" '
                     'stroke-width="2"/>')
        for i in order:  # a whisker too: a run alone has a band of no width
            s = line[i].summary
            parts.append(f'<line x1="{x(i):.1f}" y1="{y(s.max):.1f}" x2="{x(i):.1f}" '
                         f'y2="{y(s.min):.1f}" stroke="{colour}" stroke-opacity="0.5"/>')
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(s.median):.1f}" r="3" '
                         f'fill="{colour}"><title>{html.escape(_tooltip(name, line[i]))}'
                         '</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def _colours(count: int) -> list[str]:
    return [COLOURS[i % len(COLOURS)] for i in range(count)]


def _tooltip(name: str, r: Record) -> str:
    s = r.summary
    return (f"{name}, {r.run.label}, {r.run.time}: median {format_number(s.median)} {r.unit} "
            f"(min {format_number(s.min)}, max {format_number(s.max)}, "
            f"{len(r.samples)} samples)")


def _section(chart: Chart) -> str:
    better = "higher" if higher_is_better(chart.unit) else "lower"
    legend = "".join(f'<span><i style="background:{colour}"></i>{html.escape(name)}</span>'
                     for colour, name in zip(_colours(len(chart.lines)), chart.lines))
    return (f"<section><h2>{html.escape(chart.title)}</h2>"
            f"<p>{html.escape(chart.unit)}, {better} is better; line: median, band: min to "
            f"max</p>{_svg(chart)}<p class=\"legend\">{legend}</p></section>")


def _machines(records: Sequence[Record]) -> str:
    seen = {r.run.machine_id: r.run.machine for r in records}
    rows = "".join(f"<tr><td>{html.escape(key)}</td><td>"
                   + html.escape(", ".join(f"{k} {v}" for k, v in machine.items() if k != "id"))
                   + "</td></tr>" for key, machine in sorted(seen.items()))
    return f"<table><tr><th>machine</th><th>what it is</th></tr>{rows}</table>"


def page(records: Iterable[Record]) -> str:
    """The board: a self-contained HTML page of `records`' charts and the machines they
    were measured on."""
    found = list(records)
    body = "".join(map(_section, charts(found)))
    runs = len({(r.run.time, r.run.machine_id) for r in found})
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>pyburn benchmarks</title><style>{STYLE}</style></head><body>"
            "<h1>pyburn benchmarks</h1>"
            f"<p>{len(found)} records from {runs} runs of <code>pyburn bench</code>. "
            "Numbers are comparable within one machine; each ratio to a peer is in the "
            "records (<code>pyburn bench history</code>).</p>"
            f"{_machines(found)}{body}</body></html>\n")
