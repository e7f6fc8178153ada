"""Training curves from a run's ``events.jsonl``: SVG written by hand (no dependency, so it
works anywhere pyburn does), PNG through matplotlib where it is installed, and the
``pyburn plot RUN_DIR`` command.

Each scalar metric gets a panel with up to three series against the epoch: "train" and
"valid", the values of whole epochs (at x = 1, 2, ...), and "train (running)", the running
means logged during the epochs (at fractional x), which show the shape of a run that has few
epochs or was stopped mid-way.
"""

from __future__ import annotations

import argparse
import math
import os
from html import escape
from typing import Any

from ..errors import ArgumentError, MissingExtraError
from ..store import atomic_write
from .runlog import EVENTS, read_metrics

#: series name -> (colour, stroke width, whether points get markers)
SERIES_STYLE = {
    "train (running)": ("#9ecae1", 1.2, False),
    "train": ("#1f77b4", 2.0, True),
    "valid": ("#d62728", 2.0, True),
}
Curves = dict[str, dict[str, list[tuple[float, float]]]]

# one panel's geometry, in SVG user units
PANEL_W, PANEL_H = 420, 260
LEFT, RIGHT, TOP, BOTTOM = 62, 14, 30, 40
COLUMNS = 2


def curves(records: list[dict[str, Any]]) -> Curves:
    """metric name -> series name -> [(epoch, value)], from the lines of ``events.jsonl``;
    non-scalar values (a confusion matrix) and non-finite ones are left out."""
    found: Curves = {}
    for record in records:
        metrics = record.get("metrics")
        if not isinstance(metrics, dict):
            continue
        epoch = record.get("epoch", 0)
        if record.get("end"):
            series, x = record.get("split", "train"), float(epoch)
        elif record.get("batches"):
            series = "train (running)"
            x = epoch - 1 + record["batch"] / record["batches"]
        else:
            continue
        for name, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            if math.isfinite(value):
                found.setdefault(name, {}).setdefault(series, []).append((x, float(value)))
    return found


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) from
    at or below `low` to at or above `high`."""
    if not high > low:
        pad = abs(low) * 0.05 or 0.5
        low, high = low - pad, high + pad
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first, last = math.floor(low / step), math.ceil(high / step)
    return [round(i * step, 12) for i in range(first, last + 1)]


def _label(value: float) -> str:
    return f"{value:.6g}"


def _panel(name: str, series: dict[str, list[tuple[float, float]]], x0: float,
           y0: float) -> list[str]:
    points = [p for values in series.values() for p in values]
    xs = nice_ticks(min(0.0, *(x for x, _ in points)), max(x for x, _ in points))
    ys = nice_ticks(min(y for _, y in points), max(y for _, y in points))
    width, height = PANEL_W - LEFT - RIGHT, PANEL_H - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (x - xs[0]) / (xs[-1] - xs[0]) * width

    def sy(y: float) -> float:
        return TOP + height - (y - ys[0]) / (ys[-1] - ys[0]) * height

    out = [f'<g class="panel" data-metric="{escape(name)}" '
           f'transform="translate({x0:g},{y0:g})">',
           f'<text class="title" x="{LEFT}" y="{TOP - 10}">{escape(name)}</text>',
           f'<rect class="frame" x="{LEFT}" y="{TOP}" width="{width}" height="{height}"/>']
    for y in ys:
        out.append(f'<line class="grid" x1="{LEFT}" x2="{LEFT + width}" y1="{sy(y):.2f}" '
                   f'y2="{sy(y):.2f}"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{sy(y) + 4:.2f}" '
                   f'text-anchor="end">{_label(y)}</text>')
    for x in xs:
        out.append(f'<text class="tick" x="{sx(x):.2f}" y="{TOP + height + 16}" '
                   f'text-anchor="middle">{_label(x)}</text>')
    out.append(f'<text class="axis" x="{LEFT + width / 2:g}" y="{PANEL_H - 6}" '
               f'text-anchor="middle">epoch</text>')
    drawn = [(label, style) for label, style in SERIES_STYLE.items() if series.get(label)]
    for label, (colour, stroke, markers) in drawn:
        values = series[label]
        coords = " ".join(f"{sx(x):.2f},{sy(y):.2f}" for x, y in values)
        out.append(f'<polyline class="series" data-series="{escape(label)}" fill="none" '
                   f'stroke="{colour}" stroke-width="{stroke}" points="{coords}"/>')
        if markers:
            out.extend(f'<circle cx="{sx(x):.2f}" cy="{sy(y):.2f}" r="2.5" fill="{colour}"/>'
                       for x, y in values)
    # the legend, top right, on a white box so that curves passing under it stay readable
    right = LEFT + width - 6
    out.append(f'<rect class="legend-box" x="{right - 124}" y="{TOP + 4}" width="120" '
               f'height="{15 * len(drawn) + 6}"/>')
    for row, (label, (colour, stroke, _)) in enumerate(drawn):
        y = TOP + 18 + 15 * row
        out.append(f'<line x1="{right - 118}" x2="{right - 100}" y1="{y - 4}" y2="{y - 4}" '
                   f'stroke="{colour}" stroke-width="{stroke}"/>')
        out.append(f'<text class="legend" x="{right - 95}" y="{y}">{escape(label)}</text>')
    out.append("</g>")
    return out


def render_svg(data: Curves, title: str = "") -> str:
    """An SVG document with one panel per metric of `data`, two panels a row."""
    names = list(data)
    rows = -(-len(names) // COLUMNS)
    head = 28 if title else 0
    width, height = PANEL_W * min(COLUMNS, len(names)), PANEL_H * rows + head
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f"<title>{escape(title or 'training curves')}</title>",
           "<style>.frame{fill:none;stroke:#444}.grid{stroke:#e6e6e6}.tick{fill:#444}"
           ".title{font-size:13px;font-weight:bold}.legend{fill:#222}"
           ".legend-box{fill:white;fill-opacity:0.85;stroke:#ccc}</style>",
           f'<rect width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text class="title" x="12" y="20">{escape(title)}</text>')
    for i, name in enumerate(names):
        out.extend(_panel(name, data[name], (i % COLUMNS) * PANEL_W,
                          head + (i // COLUMNS) * PANEL_H))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _write_png(data: Curves, title: str, path: str) -> None:
    try:
        import matplotlib  # optional: matplotlib, for PNG only

        matplotlib.use("Agg")
        from matplotlib import pyplot  # optional: matplotlib, after choosing its backend
    except ImportError:
        raise MissingExtraError("PNG plots need matplotlib (pip install matplotlib); an .svg "
                                "output needs nothing") from None
    rows = -(-len(data) // COLUMNS)
    figure, axes = pyplot.subplots(rows, COLUMNS, figsize=(10, 3.2 * rows), squeeze=False)
    for ax, (name, series) in zip(axes.flat, data.items()):
        for label, (colour, stroke, markers) in SERIES_STYLE.items():
            if series.get(label):
                xs, ys = zip(*series[label])
                ax.plot(xs, ys, color=colour, linewidth=stroke, marker="o" if markers else None,
                        markersize=3, label=label)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.grid(color="#e6e6e6")
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(data):]:
        ax.set_visible(False)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def plot_run(run_dir: str | os.PathLike[str], output: str | os.PathLike[str] | None = None,
             metrics: list[str] | None = None) -> str:
    """Draw the curves of the run in `run_dir` to `output` (default
    ``RUN_DIR/curves.svg``; a ``.png`` name uses matplotlib), keeping only the metric names
    in `metrics` if given; returns the path written."""
    run_dir = os.fspath(run_dir)
    if not os.path.exists(os.path.join(run_dir, EVENTS)):
        raise ArgumentError(f"{run_dir} has no {EVENTS}: is it the run_dir of a Learner?")
    data = curves(read_metrics(run_dir))
    if metrics:
        unknown = sorted(set(metrics) - set(data))
        if unknown:
            raise ArgumentError(f"no values of {', '.join(unknown)} in {run_dir}; it has "
                                f"{', '.join(data) or 'none'}")
        data = {name: data[name] for name in metrics}
    if not data:
        raise ArgumentError(f"{run_dir}/{EVENTS} holds no scalar metric values yet")
    path = os.fspath(output) if output is not None else os.path.join(run_dir, "curves.svg")
    title = os.path.basename(os.path.abspath(run_dir))
    if path.lower().endswith(".png"):
        _write_png(data, title, path)
    else:
        atomic_write(path, [render_svg(data, title).encode()])
    return path


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``plot`` subcommand to the ``pyburn`` command's `subparsers`."""
    parser = subparsers.add_parser(
        "plot", help="draw the training curves of a run folder as SVG (or PNG)",
        description="Draw the training curves logged in RUN_DIR/events.jsonl by "
        "pyburn.train.Learner: one panel per metric, train and valid per epoch. SVG needs "
        "nothing; a .png output needs matplotlib.")
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the Learner's run_dir")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="where to write (.svg or .png; default RUN_DIR/curves.svg)")
    parser.add_argument("--metric", action="append", metavar="NAME",
                        help="plot only this metric (repeatable)")
    parser.set_defaults(run=_main)
    return parser


def _main(args: argparse.Namespace) -> int:
    print(plot_run(args.run_dir, args.output, args.metric))
    return 0
