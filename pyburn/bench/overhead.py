"""The cost of the tensor layer: ``a + b`` on one-element cpu tensors.

With one element the arithmetic is free, so the time is what pyburn spends around it
(argument checks, promotion, broadcasting, the backend call, wrapping the result).
PyTorch CPU and numpy run the same ``a + b`` in the same run, for scale.
"""

from __future__ import annotations

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

TARGET = Target("value", at_least=False, bound=5.0, unit="us")
#: each peer and how it receives the inputs
PEERS = {"torch": Floats.torch, "numpy": Floats.numpy}


def measure_cpu(settings: Settings) -> list[Row]:
    """Microseconds per ``a + b`` on one-element float32 tensors: pyburn cpu, with PyTorch
    CPU and numpy as peers (a missing one is reported, not timed)."""
    a, b = Floats.random((1,), seed=1), Floats.random((1,), seed=2)
    ta, tb = a.tensor("cpu"), b.tensor("cpu")
    candidates = {"pyburn": lambda: ta + tb}
    for name, convert in PEERS.items():
        module = peers.load(name)
        if module is not None:
            pa, pb = convert(a, module), convert(b, module)
            candidates[name] = lambda pa=pa, pb=pb: pa + pb
    times = measure(candidates, settings)
    # One row per peer, both quoting the same pyburn measurement; the target is on pyburn's
    # own time, so it is judged once, on the first row.
    return [Row.compare("overhead.cpu", "a + b, 1 element f32", "us",
                        lambda seconds: seconds * 1e6, times, name, peers.label(name),
                        TARGET if name == "torch" else None, settings.quick)
            for name in PEERS]


BENCHMARKS = (
    Benchmark("overhead", "cpu", "a + b on 1-element tensors, us vs PyTorch and numpy",
              measure_cpu),
)
