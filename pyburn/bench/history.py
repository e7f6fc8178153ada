"""The history of benchmark records: each case's records in time order, and the table of
``pyburn bench history``.

The same case measured on other machines stays in its history, each line naming its
machine: numbers are only comparable within one machine, which is what ``compare
--same-machine`` and the board's lines keep apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .record import Record, higher_is_better
from .report import align, format_number


def matching(records: Iterable[Record], names: Sequence[str]) -> list[Record]:
    """The records of the benchmarks or families in `names` (every record when empty).

    Records may name benchmarks this pyburn no longer has, so any name is accepted."""
    wanted = set(names)
    return [r for r in records if not wanted or r.benchmark in wanted or r.family in wanted]


def by_case(records: Iterable[Record]) -> dict[tuple[str, str], list[Record]]:
    """The records of each case (benchmark and case), oldest first; cases in the order they
    first appear."""
    cases: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        cases.setdefault(r.key, []).append(r)
    return {key: sorted(found, key=lambda r: r.run.time) for key, found in cases.items()}


def latest(records: Iterable[Record], key: tuple[str, str],
           machine: str | None = None) -> Record | None:
    """The newest record of the case `key`, on `machine` (an id) when given; None if none."""
    found = [r for r in records if r.key == key and machine in (None, r.run.machine_id)]
    return max(found, key=lambda r: r.run.time, default=None)


def _cells(r: Record) -> tuple[str, ...]:
    stats = r.summary
    ratios = ", ".join(f"{format_number(p.ratio)}x {p.name}" for p in r.peers
                       if p.ratio is not None)
    return (r.run.time[:16].replace("T", " "), r.run.label, r.run.machine_id,
            r.run.size, f"{format_number(stats.median)} {r.unit}",
            format_number(stats.iqr), format_number(stats.min), format_number(stats.max),
            str(len(r.samples)), ratios)


def as_table(records: Iterable[Record]) -> str:
    """Each case's records, one line a run: time (UTC), version and commit, machine, size,
    the median with its spread and sample count, and the ratios to peers; the adapters of a
    wgpu case in its heading."""
    lines = []
    header = ("time (UTC)", "version", "machine", "size", "median", "IQR", "min", "max", "n",
              "ratio to peers")
    for (benchmark, case), found in by_case(records).items():
        about = ["higher is better" if higher_is_better(found[0].unit) else "lower is better"]
        about += dict.fromkeys(r.adapter for r in found if r.adapter)
        lines += ["", f"{benchmark}  {case}  ({'; '.join(about)})"]
        lines += ["  " + line for line in align([header, *map(_cells, found)],
                                                right={4, 5, 6, 7, 8})]
    return "\n".join(lines[1:]) if lines else "no records"
