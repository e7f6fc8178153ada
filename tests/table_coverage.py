"""The guard that every entry of the op tables runs on every device.

While a test of the suites that check every primitive (conformance, autodiff, nn/functional)
runs, a `Recorder` sits in the tensor layer's tracer slot and notes the backward-rule key of
every primitive the tensor layer makes (``unary:exp``, ``reduce:sum``, ``scan:prod``, ``conv``)
with the device it ran on. At the end of a run that collected those suites whole, every
entry of the elementwise table and of the reductions (and their scans) must have run on every
device those suites run on, and every op of a capability on every device that offers it;
`missing` lists what did not. Under pytest-xdist each worker sends its notes to the
controller, which checks them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from device_labels import label

from pyburn.ops.capability import CAPABILITIES
from pyburn.ops.elementwise import BINARY, UNARY
from pyburn.ops.reducers import REDUCTIONS

#: the suites whose tests are recorded, relative to tests/, and the tables each must cover
SUITES = {"conformance": "the elementwise and reduction tables",
          str(Path("nn", "functional")): "the capabilities",
          "autodiff": "the capabilities' backward-only ops"}


class Recorder:
    """A tracer for the tensor layer's slot that notes (device label, rule) of every primitive
    (the label: a remote device's address differs between processes)."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()
        self._labels: dict[Any, str] = {}  # by device: this runs for every primitive

    def primitive(self, out: Any, rule: str, inputs: Any, ctx: Any) -> None:
        """Note that `rule`'s primitive ran on `out`'s device (autodiff or not)."""
        device = out.device
        name = self._labels.get(device)
        if name is None:
            name = self._labels[device] = label(device.plain())
        self.seen.add((name, rule))


def recorded_suite(path: Path, tests_root: Path) -> str | None:
    """The suite of `SUITES` the test file `path` belongs to, or None."""
    where = str(path.relative_to(tests_root))
    return next((suite for suite in SUITES if where.startswith(suite)), None)


def table_rules() -> set[str]:
    """The rule key of every elementwise op, reduction and scan."""
    rules = {op.rule for op in (*UNARY.values(), *BINARY.values())}
    rules |= {r.rule for r in REDUCTIONS.values()}
    return rules | {r.scan_rule for r in REDUCTIONS.values() if r.scans}


def expected(table_devices: Iterable[Any], capability_devices: Iterable[Any]
             ) -> set[tuple[str, str]]:
    """(device label, rule) of what should run: every table entry on each of
    `table_devices`, every recorded op of a capability on each of `capability_devices`
    whose backend offers it."""
    wanted = {(label(d), rule) for d in table_devices for rule in table_rules()}
    return wanted | {(label(d), op) for d in capability_devices for c in CAPABILITIES.values()
                     if c.name in d.backend.caps for op in c.rules}


def missing(seen: Iterable[tuple[str, str]], wanted: Iterable[tuple[str, str]]) -> list[str]:
    """What should have run and did not, one "device: rule" line each."""
    return sorted(f"{device}: {rule}" for device, rule in set(wanted) - set(seen))
