"""Op sweeps on a million float32 elements: each op on pyburn and on a peer, as throughput.

An `OpCase` writes one op three ways: on pyburn tensors, on numpy arrays, and in plain
Python on lists of rows (what one writes without any array library). `sweep` times one
device against one peer over a list of cases: cpu against numpy (pyburn should add almost
nothing to numpy's own time), flex against plain Python (the pure-Python backend should be
no slower than the loop a user would write by hand).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

SHAPE = (1000, 1000)
QUICK_SHAPE = (10, 100)

#: the peer each device is compared with, its label, and the ratio it should reach
PEER_OF = {"cpu": "numpy", "flex": "python"}
TARGETS = {"numpy": Target("ratio", at_least=True, bound=0.95),
           "python": Target("ratio", at_least=True, bound=1.0)}
PYTHON_LABEL = "python (lists)"
PEER_NAMES = {"numpy": "numpy", "python": "plain Python"}

Rows = list[list[float]]


@dataclass(frozen=True)
class OpCase:
    """One op, written for pyburn tensors ``(a, b)``, for numpy arrays ``(np, a, b)`` (np is
    the numpy module) and for plain Python on lists of rows ``(a, b)``. Unary ops ignore b."""

    label: str
    pyburn: Callable[[Any, Any], Any]
    numpy: Callable[[Any, Any, Any], Any]
    python: Callable[[Rows, Rows], Any]


def sweep(benchmark: str, device: str, cases: Sequence[OpCase], settings: Settings) -> list[Row]:
    """One row per case: M elements/s on `device` against its peer (``PEER_OF``), both
    given the same two random float32 inputs."""
    shape = QUICK_SHAPE if settings.quick else SHAPE
    x, y = Floats.random(shape, seed=1), Floats.random(shape, seed=2)
    tx, ty = x.tensor(device), y.tensor(device)
    peer = PEER_OF[device]
    if peer == "numpy":
        np = peers.load("numpy")  # present: the cpu device needs it
        px, py = x.numpy(np), y.numpy(np)
        label = peers.label("numpy")
    else:
        px, py = x.rows(), y.rows()
        label = PYTHON_LABEL
    millions = math.prod(shape) / 1e6
    rows = []
    for case in cases:
        peer_fn = functools.partial(case.numpy, np) if peer == "numpy" else case.python
        times = measure({"pyburn": functools.partial(case.pyburn, tx, ty),
                         "peer": functools.partial(peer_fn, px, py)}, settings)
        rows.append(Row.compare(benchmark, f"{case.label}, {shape[0]}x{shape[1]} f32",
                                "M elem/s", lambda seconds: millions / seconds, times, "peer",
                                label, TARGETS[peer], settings.quick))
    return rows


def benchmarks(family: str, cases: Sequence[OpCase], about: str) -> tuple[Benchmark, ...]:
    """The family's benchmarks, one per device of ``PEER_OF``, each sweeping `cases`."""
    return tuple(Benchmark(family, device, f"{about}, M elem/s vs {PEER_NAMES[peer]}",
                           functools.partial(sweep, f"{family}.{device}", device, cases))
                 for device, peer in PEER_OF.items())
