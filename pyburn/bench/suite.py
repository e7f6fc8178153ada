"""A benchmark is a name, the device it needs and a function that measures and returns rows;
`run` runs a selection of them into one `Report`."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyburn

from .report import Report, Row
from .timing import Settings


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: ``family.device`` names it (``matmul.flex``); `measure` runs it."""

    family: str
    device: str
    about: str  # one line for ``pyburn bench --list``
    measure: Callable[[Settings], list[Row]]
    #: says why it cannot run here (None: it can), where that is more than whether pyburn
    #: has its device (the browser benchmarks need a built site and Chromium)
    requires: Callable[[], str | None] | None = None

    @property
    def name(self) -> str:
        """``family.device``, as the command line selects it."""
        return f"{self.family}.{self.device}"

    def unavailable_reason(self) -> str | None:
        """Why this benchmark cannot run here, or None when it can."""
        return self.requires() if self.requires else unavailable(self.device)


@dataclass(frozen=True)
class Family:
    """A family that runs on any device: `measure` takes the device's name and the settings;
    `on` makes its benchmark on one device."""

    name: str
    about: str
    measure: Callable[[str, Settings], list[Row]]

    def on(self, device: str) -> Benchmark:
        """The family's benchmark on `device` (``unary.wgpu``)."""
        return Benchmark(self.name, device, self.about, functools.partial(self.measure, device))


def unavailable(device: str) -> str | None:
    """Why `device` cannot run here, or None when it can."""
    try:
        pyburn.device(device)
    except pyburn.DeviceError as exc:
        return str(exc)
    return None


def run(benchmarks: Sequence[Benchmark], settings: Settings, *, progress: bool = True) -> Report:
    """Run `benchmarks` in order; a benchmark whose device is unavailable is skipped with
    the reason. Progress goes to stderr, so stdout holds only the report."""
    report = Report()
    for bench in benchmarks:
        reason = bench.unavailable_reason()
        if reason is not None:
            report.skipped.append((bench.name, reason))
            continue
        if progress:
            print(f"running {bench.name} ...", file=sys.stderr, flush=True)
        report.rows.extend(bench.measure(settings))
    return report
