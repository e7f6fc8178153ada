"""Statistics of a benchmark's samples: their summary, and whether two sets of them differ.

`summary` gives what a record keeps next to the samples (median, min, max, interquartile
range). `mann_whitney_u` is the two-sided Mann–Whitney U test that ``pyburn bench compare``
asks before it calls a change a regression: it needs no assumption about the shape of the
timings' distribution (they are skewed, with a tail of runs slowed by other processes), only
that one set tends to be larger than the other. It uses the normal approximation with a
correction for ties and for continuity, as scipy's ``mannwhitneyu(method="asymptotic")``
does; with the 15 runs of a default measurement that approximation is close.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    """The median, extremes and interquartile range of some samples."""

    median: float
    min: float
    max: float
    iqr: float  # the third quartile less the first (0 for a single sample)


def summary(samples: Sequence[float]) -> Summary:
    """The `Summary` of `samples` (at least one); quartiles interpolate between samples, as
    numpy's default percentile does.

    >>> summary([1.0, 2.0, 3.0, 4.0, 100.0])
    Summary(median=3.0, min=1.0, max=100.0, iqr=2.0)
    """
    if len(samples) < 2:
        (only,) = samples
        return Summary(only, only, only, 0.0)
    first, _, third = statistics.quantiles(samples, n=4, method="inclusive")
    return Summary(statistics.median(samples), min(samples), max(samples), third - first)


def _ranks(values: Sequence[float]) -> list[float]:
    """The rank of each value among `values` (1 for the smallest), tied values sharing the
    mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start:end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The Mann–Whitney U statistic of `a` (how many pairs (x in a, y in b) have x > y, a tie
    counting a half) and the two-sided p-value of "neither tends to be larger" (1.0 when
    every sample is tied, or a side is empty).

    >>> u, p = mann_whitney_u([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0])
    >>> u, round(p, 4)
    (0.0, 0.0122)
    """
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        return 0.0, 1.0
    ranks = _ranks([*a, *b])
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    ties = sum(t**3 - t for t in Counter([*a, *b]).values())
    variance = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if variance <= 0:
        return u, 1.0
    # the larger of the two U statistics, less a half for continuity, in standard deviations
    z = (max(u, n1 * n2 - u) - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return u, min(1.0, math.erfc(z / math.sqrt(2)))
