"""Timing: repeated runs, median and minimum, warm-up, and peers timed in the same breath.

A measurement times several candidates (pyburn and its peers) together and interleaves
their runs (A B A B ...), so that a burst of load from another process lands on all of
them rather than on whichever happened to run at that moment, and ratios are taken run by
run, between runs measured back to back (`speed_ratio`). Each run calls its function
enough times to last at least ``min_run_s`` (a 1 µs op is called a hundred thousand times
per run, a 10 ms one a few times), and reports seconds per call. The garbage collector is
off inside a run, as in ``timeit``, so a collection triggered by someone else's garbage
does not land in one candidate's numbers.
"""

from __future__ import annotations

import functools
import gc
import itertools
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """How a benchmark run times things.

    repeat: timed runs per candidate; the median of them is the headline number.
    warmup: untimed calls per candidate before the first timed run.
    min_run_s: each timed run repeats its call until it lasts at least this long.
    quick: small inputs, for smoke tests; the targets only apply at full size.
    """

    repeat: int = 15
    warmup: int = 1
    min_run_s: float = 0.05
    quick: bool = False


@dataclass(frozen=True)
class Timing:
    """Seconds per call in each timed run of one candidate."""

    runs: tuple[float, ...]
    calls_per_run: int

    @property
    def median(self) -> float:
        """The median over runs: the number a report quotes (robust to a noisy run)."""
        return statistics.median(self.runs)

    @property
    def min(self) -> float:
        """The fastest run: what the code costs when nothing else gets in the way."""
        return min(self.runs)


def timed_run(fn: Callable[[], object], calls: int) -> float:
    """Seconds taken by `calls` calls of `fn`, with the garbage collector off.

    >>> timed_run(lambda: None, 10) >= 0.0
    True
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in itertools.repeat(None, calls):
            fn()
        return time.perf_counter() - start
    finally:
        if collecting:
            gc.enable()


#: a candidate timed elsewhere: given a count of calls, makes them and returns their seconds
Timer = Callable[[int], float]


def _calls_per_run(run: Timer, min_run_s: float) -> int:
    """The smallest count in 1, 2, 5, 10, 20, 50, ... whose run lasts `min_run_s`.
    The probing runs double as warm-up."""
    for scale in itertools.count():
        for step in (1, 2, 5):
            calls = step * 10**scale
            if run(calls) >= min_run_s:
                return calls
    raise AssertionError("unreachable: itertools.count() never ends")


def measure(candidates: Mapping[str, Callable[[], object]],
            settings: Settings) -> dict[str, Timing]:
    """Time every candidate (a function of no arguments) with interleaved runs; returns
    each one's `Timing` under its key.

    >>> t = measure({"noop": lambda: None}, Settings(repeat=3, min_run_s=0.0))
    >>> len(t["noop"].runs)
    3
    """
    return measure_runs({name: functools.partial(timed_run, fn)
                         for name, fn in candidates.items()}, settings)


def measure_runs(candidates: Mapping[str, Timer], settings: Settings) -> dict[str, Timing]:
    """`measure` for candidates that time themselves (in another process, say): each is
    given a count of calls, makes them, and returns the seconds they took.

    >>> t = measure_runs({"noop": lambda calls: 0.5 * calls}, Settings(repeat=2))
    >>> t["noop"].runs, t["noop"].calls_per_run
    ((0.5, 0.5), 1)
    """
    calls: dict[str, int] = {}
    for name, run in candidates.items():
        if settings.warmup:
            run(settings.warmup)
        calls[name] = _calls_per_run(run, settings.min_run_s)
    runs: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(settings.repeat):
        for name, run in candidates.items():
            runs[name].append(run(calls[name]) / calls[name])
    return {name: Timing(tuple(runs[name]), calls[name]) for name in candidates}


def speed_ratio(timing: Timing, peer: Timing) -> float:
    """How many times faster `timing` ran than `peer`: the median, over the runs, of the
    peer's time over this one's. Runs i of both were measured back to back (see `measure`),
    so a change in machine load between pairs cancels out of each ratio.

    >>> speed_ratio(Timing((1.0, 2.0, 4.0), 1), Timing((2.0, 3.0, 4.0), 1))
    1.5
    """
    return statistics.median(p / t for t, p in zip(timing.runs, peer.runs, strict=True))
