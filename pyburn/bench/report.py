"""Result rows, targets, and the two ways a run is shown: a table for people, JSON for tools.

Every row compares pyburn with one peer measured in the same run. The ratio is always
pyburn's speed divided by the peer's, whatever the unit: above 1 pyburn is faster, below 1
slower. It is the median of the ratios of runs measured back to back, so it can differ a
little from the ratio of the two medians shown next to it.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field

import pyburn

from . import peers
from .timing import Timing, speed_ratio

NOT_INSTALLED = "not installed"


@dataclass(frozen=True)
class Target:
    """What a row must reach: its `value` or its `ratio`, at least or at most `bound`."""

    on: str  # "value" or "ratio"
    at_least: bool
    bound: float
    unit: str = ""  # of a value target, for display

    def met(self, value: float, ratio: float | None) -> bool | None:
        """Whether the target is reached; None when it is on a ratio that has no peer."""
        measured = value if self.on == "value" else ratio
        if measured is None:
            return None
        return measured >= self.bound if self.at_least else measured <= self.bound

    def __str__(self) -> str:
        sign = ">=" if self.at_least else "<="
        if self.on == "ratio":
            return f"{sign} {self.bound:g}x"
        return f"{sign} {self.bound:g} {self.unit}"


@dataclass(frozen=True)
class Row:
    """One measured number, its peer's number from the same run, their ratio, and a target.

    value and best come from pyburn's median and fastest run, peer_value from the peer's
    median, all in `unit`; ratio is pyburn's speed over the peer's (`speed_ratio`). The
    peer's numbers are None when it is not installed. samples and peer_samples are every
    run's number, in `unit`, for the records (``pyburn bench compare`` tests them); a number
    measured once (a time to solve, a peak of memory) has none.
    """

    benchmark: str  # the benchmark's name, e.g. "matmul.flex"
    case: str  # what was measured, e.g. "64x784 @ 784x128 f32"
    unit: str
    value: float
    best: float
    peer: str  # the peer's label, e.g. "numpy 2.4.6"
    peer_value: float | None
    ratio: float | None
    target: Target | None
    quick: bool = False
    samples: tuple[float, ...] = ()
    peer_samples: tuple[float, ...] = ()

    @classmethod
    def compare(cls, benchmark: str, case: str, unit: str, per_call: Callable[[float], float],
                times: Mapping[str, Timing], peer: str, peer_label: str,
                target: Target | None, quick: bool) -> Row:
        """The row for ``times["pyburn"]`` against ``times[peer]`` (a peer missing from
        `times` is not installed); `per_call` turns seconds per call into `unit`."""
        ours, theirs = times["pyburn"], times.get(peer)
        return cls(benchmark, case, unit, per_call(ours.median), per_call(ours.min),
                   peer_label, None if theirs is None else per_call(theirs.median),
                   None if theirs is None else speed_ratio(ours, theirs), target, quick,
                   tuple(map(per_call, ours.runs)),
                   () if theirs is None else tuple(map(per_call, theirs.runs)))

    @property
    def verdict(self) -> str:
        """"pass", "MISS", "-" (no target), "no peer" (a ratio target without its peer)
        or "quick" (a quick run's small inputs are not what the target is set for)."""
        if self.target is None:
            return "-"
        if self.quick:
            return "quick"
        met = self.target.met(self.value, self.ratio)
        return "no peer" if met is None else ("pass" if met else "MISS")

    def as_dict(self) -> dict[str, object]:
        """The row as plain JSON-ready data."""
        return {"benchmark": self.benchmark, "case": self.case, "unit": self.unit,
                "value": self.value, "best": self.best, "peer": self.peer,
                "peer_value": self.peer_value, "ratio": self.ratio,
                "target": None if self.target is None else str(self.target),
                "verdict": self.verdict}


def environment() -> dict[str, object]:
    """What the numbers were measured on: versions, platform and CPU count."""
    return {"pyburn": pyburn.__version__,
            "python": f"{platform.python_version()} ({platform.python_implementation()})",
            "platform": platform.platform(), "cpus": os.cpu_count(), **peers.versions()}


@dataclass
class Report:
    """The rows of a run, the benchmarks it skipped (with why), and where it ran."""

    rows: list[Row] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    environment: dict[str, object] = field(default_factory=environment)

    def as_json(self) -> str:
        """The report as a JSON document."""
        return json.dumps({"environment": self.environment,
                           "rows": [row.as_dict() for row in self.rows],
                           "skipped": [{"benchmark": name, "reason": why}
                                       for name, why in self.skipped]}, indent=2)

    def as_table(self) -> str:
        """The report as an aligned text table with a header and a legend."""
        env = self.environment
        lines = [f"pyburn {env['pyburn']}, Python {env['python']}, {env['platform']}, "
                 f"{env['cpus']} CPUs; "
                 + ", ".join(f"{name} {env[name]}" for name in peers.PEERS), ""]
        header = ("benchmark", "case", "pyburn", "best", "peer", "peer value", "ratio",
                  "target", "")
        lines += align([header] + [_cells(row) for row in self.rows], right={2, 3, 5, 6})
        lines.append("")
        lines.append("pyburn, peer value: medians of the runs; best: pyburn's fastest run; "
                     "ratio: pyburn's speed / the peer's, median over back-to-back runs "
                     "(above 1: pyburn is faster)")
        lines.extend(f"skipped {name}: {why}" for name, why in self.skipped)
        return "\n".join(lines)


def align(cells: Sequence[Sequence[str]], right: Container[int]) -> list[str]:
    """Lines of `cells` (a header, then rows) in columns two spaces apart, the columns in
    `right` (numbers) aligned on the right.

    >>> align([("name", "ms"), ("add", "1.5"), ("matmul", "12.0")], right={1})
    ['name      ms', 'add      1.5', 'matmul  12.0']
    """
    widths = [max(len(line[i]) for line in cells) for i in range(len(cells[0]))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(line, widths))).rstrip()
            for line in cells]


def _cells(row: Row) -> tuple[str, ...]:
    peer_value = (NOT_INSTALLED if row.peer_value is None
                  else f"{format_number(row.peer_value)} {row.unit}")
    ratio = "-" if row.ratio is None else f"{format_number(row.ratio)}x"
    return (row.benchmark, row.case, f"{format_number(row.value)} {row.unit}",
            format_number(row.best), row.peer, peer_value, ratio,
            "-" if row.target is None else str(row.target), row.verdict)


def format_number(x: float) -> str:
    """About three significant digits, without an exponent for everyday magnitudes.

    >>> [format_number(v) for v in (1234.5, 12.345, 1.2345, 0.012345)]
    ['1234', '12.3', '1.23', '0.0123']
    """
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 0.1:
        return f"{x:.2f}"
    return f"{x:.3g}"
