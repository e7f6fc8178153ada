"""Line charts as text: series of (x, y) points drawn in Braille dots (each character cell is
a 2 x 4 grid of them), which any terminal with a Unicode font shows, with no image
protocol; and the series' treatments before drawing: smoothing and downsampling.

>>> rows = draw({"train": [(0, 1.0), (1, 0.5), (2, 0.25)]}, width=6, height=2)
>>> len(rows), len(rows[0])
(2, 6)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Point = tuple[float, float]
#: one character cell of a chart: its text, and the index of the series drawn there (None:
#: empty; where two series share a cell, the later one)
Cell = tuple[str, int | None]

#: the bit of each dot of a Braille cell, by (column, row) within the cell
_DOTS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))
_BRAILLE = 0x2800


def smooth(points: Sequence[Point], weight: float) -> list[Point]:
    """The exponential moving average of the values with `weight` in [0, 1) on the past
    (TensorBoard's smoothing, debiased so that the first points are not pulled to zero);
    values that are not finite pass through and do not enter the average."""
    if weight <= 0:
        return list(points)
    out, average, seen = [], 0.0, 0
    for x, y in points:
        if not math.isfinite(y):
            out.append((x, y))
            continue
        average = weight * average + (1 - weight) * y
        seen += 1
        out.append((x, average / (1 - weight ** seen)))
    return out


def downsample(points: Sequence[Point], most: int) -> list[Point]:
    """At most `most` points: the means of equal runs of consecutive points (the first and
    last x kept in place), where there are more."""
    if len(points) <= most:
        return list(points)
    out = []
    for k in range(most):
        run = points[k * len(points) // most:(k + 1) * len(points) // most]
        out.append((sum(x for x, _ in run) / len(run), sum(y for _, y in run) / len(run)))
    return out


def bounds(series: Mapping[str, Sequence[Point]]) -> tuple[float, float, float, float] | None:
    """(x min, x max, y min, y max) over the finite points of every series; None if there
    is none. A flat range is widened so that it has a height."""
    xs = [x for points in series.values() for x, y in points if math.isfinite(y)]
    ys = [y for points in series.values() for _, y in points if math.isfinite(y)]
    if not xs:
        return None
    low, high = min(ys), max(ys)
    if high - low < 1e-12 * max(1.0, abs(high)):
        low, high = low - 0.5, high + 0.5
    return min(xs), max(xs), low, high


def draw(series: Mapping[str, Sequence[Point]], width: int, height: int) -> list[list[Cell]]:
    """`height` rows of `width` cells with every series drawn as a line over the shared
    bounds; each point is joined to the next by the dots between them."""
    width, height = max(width, 1), max(height, 1)
    dots_x, dots_y = 2 * width, 4 * height
    grid = [[0] * width for _ in range(height)]
    owner: list[list[int | None]] = [[None] * width for _ in range(height)]
    found = bounds(series)
    if found is None:
        return [[(" ", None)] * width for _ in range(height)]
    x0, x1, y0, y1 = found

    def place(x: float, y: float) -> tuple[int, int]:
        px = 0 if x1 == x0 else round((x - x0) / (x1 - x0) * (dots_x - 1))
        py = round((y1 - y) / (y1 - y0) * (dots_y - 1))
        return px, py

    for index, points in enumerate(series.values()):
        previous = None
        for x, y in points:
            if not math.isfinite(y):
                previous = None
                continue
            here = place(x, y)
            for px, py in _segment(previous or here, here):
                row, column = py // 4, px // 2
                grid[row][column] |= _DOTS[px % 2][py % 4]
                owner[row][column] = index
            previous = here
    return [[(chr(_BRAILLE + bits) if bits else " ", owner[r][c])
             for c, bits in enumerate(row)] for r, row in enumerate(grid)]


def _segment(start: tuple[int, int], end: tuple[int, int]) -> list[tuple[int, int]]:
    """The dots from `start` to `end`, both included (enough steps to leave no gap)."""
    (ax, ay), (bx, by) = start, end
    steps = max(abs(bx - ax), abs(by - ay), 1)
    return [(ax + round((bx - ax) * k / steps), ay + round((by - ay) * k / steps))
            for k in range(steps + 1)]


def summary_line(name: str, points: Sequence[Point], width: int) -> str:
    """One series as a line of a summary table, its name padded to `width`: the last value,
    the lowest and the highest with their x, and how many points."""
    finite = [(y, x) for x, y in points if math.isfinite(y)]
    if not finite:
        return f"{name:{width}}{'-':>12}"
    low, high = min(finite), max(finite)
    return (f"{name:{width}}{points[-1][1]:>12.5g}{low[0]:>12.5g}{low[1]:>10g}"
            f"{high[0]:>12.5g}{high[1]:>10g}{len(points):>8}")
