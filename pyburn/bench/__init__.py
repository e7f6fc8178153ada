"""pyburn's benchmarks (``pyburn bench``): every number next to a peer measured in the same run.

One module per family (matmul, overhead, elementwise, reduction, conv, autodiff, train, amp,
distributed, all_reduce, rl, store, onnx, quant, quant_size, models, gpu, kernel, remote,
remote_transfer, wasm, web); each holds a ``BENCHMARKS`` tuple whose entries are named
``family.device``. burn-bench's families (unary, binary, gemm, conv2d, transformer, ...:
`anydevice`) run on any device, by default cpu and wgpu, when named or with ``--devices``;
its all_reduce and remote are bound to cpu (`all_reduce`, `remote_transfer`). A run prints a
table (or JSON with ``--json``) in which every row gives pyburn's median, its fastest run, the
peer's median, the ratio of their speeds and the target with a pass/miss mark. Peers (numpy,
PyTorch, plain Python) are optional: a missing one is reported as "not installed". Every run
also leaves records (`record`), which ``pyburn bench history``, ``compare`` and ``board``
read (`cli`).

>>> from pyburn import bench
>>> [b.name for b in bench.select(["matmul"])]
['matmul.flex', 'matmul.cpu']
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ArgumentError
from . import (
    all_reduce,
    amp,
    anydevice,
    autodiff,
    conv,
    distributed,
    elementwise,
    gpu,
    kernel,
    matmul,
    models,
    onnx,
    overhead,
    quant,
    quant_size,
    reduction,
    remote,
    remote_transfer,
    rl,
    store,
    train,
    wasm,
    web,
)
from .report import Report, Row, Target
from .suite import Benchmark, run
from .timing import Settings, Timing, measure

#: the benchmarks of the families bound to one device
BOUND: tuple[Benchmark, ...] = (matmul.BENCHMARKS + overhead.BENCHMARKS
                                     + elementwise.BENCHMARKS + reduction.BENCHMARKS
                                     + conv.BENCHMARKS + autodiff.BENCHMARKS
                                     + train.BENCHMARKS + distributed.BENCHMARKS
                                     + all_reduce.BENCHMARKS
                                     + rl.BENCHMARKS + store.BENCHMARKS
                                     + onnx.BENCHMARKS + quant.BENCHMARKS
                                     + quant_size.BENCHMARKS
                                     + models.BENCHMARKS
                                     + gpu.BENCHMARKS + kernel.BENCHMARKS
                                     + remote.BENCHMARKS + remote_transfer.BENCHMARKS
                                     + wasm.BENCHMARKS
                                     + web.BENCHMARKS + amp.BENCHMARKS)


def _anywhere(devices: Sequence[str]) -> tuple[Benchmark, ...]:
    return tuple(f.on(d) for f in anydevice.FAMILIES for d in devices)


def on_devices(devices: Sequence[str]) -> tuple[Benchmark, ...]:
    """The benchmarks of a run on `devices`: those bound to one of them, then every
    family of `anydevice` on each of them."""
    return tuple(b for b in BOUND if b.device in devices) + _anywhere(devices)


#: every benchmark there is (burn-bench's families on their default devices), in suite order
BENCHMARKS = BOUND + _anywhere(anydevice.DEFAULT_DEVICES)


def catalogue(devices: Sequence[str] | None = None) -> tuple[Benchmark, ...]:
    """Every benchmark there is on `devices` (`on_devices`), or `BENCHMARKS` without."""
    return BENCHMARKS if devices is None else on_devices(devices)


def select(names: Sequence[str], devices: Sequence[str] | None = None) -> list[Benchmark]:
    """The benchmarks named by `names` (a family such as "matmul" or a benchmark such as
    "matmul.flex") in the `catalogue` of `devices`, in suite order. Without names, the
    whole catalogue of `devices`, or without devices the families bound to one device:
    burn-bench's run at full size for minutes to hours, so they run when named."""
    pool = catalogue(devices)
    known = {b.name for b in pool} | {b.family for b in BENCHMARKS}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ArgumentError(f"unknown benchmark {', '.join(map(repr, unknown))}; known: "
                            f"{', '.join(sorted(known))}")
    if not names:
        return list(BOUND if devices is None else pool)
    wanted = set(names)
    return [b for b in pool if b.name in wanted or b.family in wanted]


__all__ = ["BENCHMARKS", "BOUND", "Benchmark", "Report", "Row", "Settings", "Target", "Timing",
           "catalogue", "measure", "on_devices", "run", "select"]
