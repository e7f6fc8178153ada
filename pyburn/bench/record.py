"""Records: what a benchmark run leaves behind, one JSON record per measured case.

A run's rows become `Record` s (the rows of one measurement that differ only in their peer
make one record with several peers) and go to one JSON Lines file, a record a line, named
after the run's time, machine and commit (``20261208T103105Z-df7c0290-7809027.jsonl``).
Every record carries its run (`Run`: time, pyburn's version and commit, the machine, the
size), so that a line read on its own says all it needs to. ``pyburn bench history``,
``compare`` and ``board`` read folders of such files; the site's benchmark page writes the
same format from the browser.

A record's samples are every timed run's number in the record's unit. A unit ending in
"/s" is a rate (higher is better); any other (ms, us, MB, steps) is a cost (lower is better).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyburn

from ..errors import FormatError
from ..store.atomic import atomic_write
from . import provenance
from .report import Report, Row
from .stats import Summary, summary

#: the value of every record's "format" key
FORMAT = "pyburn-bench/1"
#: the ending of a records file
SUFFIX = ".jsonl"
#: the size a run's inputs had: --size small (or --quick) or full
SIZES = ("small", "full")


def _rounded(values: Iterable[float]) -> tuple[float, ...]:
    """`values` to six significant digits: far finer than a timing's noise, and a records
    file a third the size."""
    return tuple(float(f"{v:.6g}") for v in values)


def higher_is_better(unit: str) -> bool:
    """Whether a larger number in `unit` is an improvement: rates ("M elem/s") yes, costs
    ("ms", "MB") no.

    >>> higher_is_better("GFLOP/s"), higher_is_better("ms")
    (True, False)
    """
    return unit.endswith("/s")


@dataclass(frozen=True)
class Run:
    """One ``pyburn bench`` run: when it started (ISO 8601, UTC), pyburn's version and git
    commit (None outside a checkout), the machine (`provenance.machine`) and the inputs' size."""

    time: str
    pyburn: str
    commit: str | None
    machine: Mapping[str, object]
    size: str

    @classmethod
    def here(cls, size: str) -> Run:
        """A run starting now, on this machine, from this copy of pyburn."""
        return cls(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), pyburn.__version__,
                   provenance.git_commit(), provenance.machine(), size)

    @property
    def machine_id(self) -> str:
        """The machine's id (see `provenance`)."""
        return str(self.machine.get("id", "unknown"))

    @property
    def label(self) -> str:
        """The version and short commit, e.g. "0.1.0 7809027" (the version alone without one)."""
        return self.pyburn if self.commit is None else f"{self.pyburn} {self.commit[:7]}"

    @property
    def file_name(self) -> str:
        """The name of the run's records file."""
        stamp = self.time.replace("-", "").replace(":", "")
        commit = "" if self.commit is None else f"-{self.commit[:7]}"
        return f"{stamp}-{self.machine_id}{commit}{SUFFIX}"


@dataclass(frozen=True)
class Peer:
    """A peer measured next to a record's case: its label, its median and samples (None and
    empty when it is not installed), pyburn's speed over its speed, and the row's target."""

    name: str
    value: float | None
    ratio: float | None
    samples: tuple[float, ...]
    target: str | None
    verdict: str


@dataclass(frozen=True)
class Record:
    """pyburn's samples of one case of one benchmark, with its peers, on a device (and its
    adapter, for wgpu), in one `Run`."""

    benchmark: str  # "matmul.cpu": family.device
    case: str
    device: str
    adapter: str | None
    unit: str
    samples: tuple[float, ...]
    peers: tuple[Peer, ...]
    run: Run

    @property
    def family(self) -> str:
        """The benchmark's family ("matmul" of "matmul.cpu")."""
        return self.benchmark.split(".", 1)[0]

    @property
    def key(self) -> tuple[str, str]:
        """What is the same measurement in another run: the benchmark and its case."""
        return self.benchmark, self.case

    @property
    def summary(self) -> Summary:
        """The samples' median, min, max and interquartile range."""
        return summary(self.samples)

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data, with its summary spelt out for other readers."""
        stats = self.summary
        return {"format": FORMAT, "benchmark": self.benchmark, "case": self.case,
                "device": self.device, "adapter": self.adapter, "unit": self.unit,
                "higher_is_better": higher_is_better(self.unit),
                "samples": list(self.samples), "median": stats.median, "min": stats.min,
                "max": stats.max, "iqr": stats.iqr,
                "peers": [{"peer": p.name, "value": p.value, "ratio": p.ratio,
                           "samples": list(p.samples), "target": p.target,
                           "verdict": p.verdict} for p in self.peers],
                "run": {"time": self.run.time, "pyburn": self.run.pyburn,
                        "commit": self.run.commit, "machine": dict(self.run.machine),
                        "size": self.run.size}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Record:
        """The record `as_dict` wrote (the summary is computed again from the samples);
        KeyError, TypeError or ValueError when `data` is not one."""
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r} is not {FORMAT!r}")
        run = data["run"]
        samples = tuple(float(v) for v in data["samples"])
        if not samples:
            raise ValueError("no samples")
        return cls(str(data["benchmark"]), str(data["case"]), str(data["device"]),
                   data["adapter"], str(data["unit"]), samples,
                   tuple(Peer(p["peer"], p["value"], p["ratio"],
                              tuple(float(v) for v in p["samples"]), p["target"],
                              p["verdict"]) for p in data["peers"]),
                   Run(str(run["time"]), str(run["pyburn"]), run["commit"],
                       dict(run["machine"]), str(run["size"])))


def _peer(row: Row) -> Peer:
    return Peer(row.peer, row.peer_value, row.ratio, _rounded(row.peer_samples),
                None if row.target is None else str(row.target), row.verdict)


def records(report: Report, run: Run) -> list[Record]:
    """The records of `report`'s rows, in their order: rows of the same benchmark and case
    with the same samples (one measurement, several peers) make one record. A number
    measured once is its own single sample."""
    grouped: dict[tuple[str, str, tuple[float, ...]], list[Row]] = {}
    for row in report.rows:
        samples = _rounded(row.samples or (row.value,))
        grouped.setdefault((row.benchmark, row.case, samples), []).append(row)
    adapters: dict[str, str | None] = {}
    made = []
    for (benchmark, case, samples), rows in grouped.items():
        device = benchmark.split(".", 1)[1]
        if device not in adapters:
            adapters[device] = provenance.adapter(device)
        made.append(Record(benchmark, case, device, adapters[device], rows[0].unit, samples,
                           tuple(map(_peer, rows)), run))
    return made


def write(made: Sequence[Record], folder: Path) -> Path:
    """Write `made` (records of one run) to a new file in `folder` (created if need be),
    atomically; returns the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / made[0].run.file_name
    lines = (json.dumps(r.as_dict(), ensure_ascii=False) + "\n" for r in made)
    atomic_write(path, (line.encode() for line in lines))
    return path


def read_file(path: Path) -> list[Record]:
    """The records of one records file; `FormatError` naming the file and line when one is
    not a record."""
    made = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                made.append(Record.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise FormatError(f"{path}:{number}: not a pyburn benchmark record "
                                  f"({type(exc).__name__}: {exc})") from exc
    return made


def read(paths: Iterable[Path]) -> list[Record]:
    """Every record in `paths`: records files, and folders whose ``*.jsonl`` files are
    read (not their subfolders); `FormatError` for a path that is neither."""
    made = []
    for path in paths:
        if path.is_dir():
            files = sorted(path.glob(f"*{SUFFIX}"))
        elif path.is_file():
            files = [path]
        else:
            raise FormatError(f"{path}: no such records file or folder")
        for file in files:
            made.extend(read_file(file))
    return made
