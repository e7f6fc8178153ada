"""The wasm device: fusion against one kernel per op, and a captured forward pass against the
same pass run op by op. On the desktop it runs on wasmtime; ``make bench-pyodide
BENCH=wasm.wasm`` runs it inside Pyodide, on the JavaScript engine a page has.

- fusion: the 8-op chain of ``gpu.wgpu`` on 1M float32 elements (then one element read),
  fused into one generated kernel against the same device with fusion held off (every
  result below its threshold runs at once: eight kernels);
- capture: the MNIST CNN's forward pass on one image and the read back of its scores,
  replayed from a capture (``pyburn.backends.wasm.capture``) against run op by op.
"""

from __future__ import annotations

from collections.abc import Callable

import pyburn

from ..backends.fusion.recorder import LazyBackend
from .gpu import chain
from .inputs import Floats
from .report import Row
from .suite import Benchmark
from .timing import Settings, measure

#: the benchmark every row belongs to
NAME = "wasm.wasm"
FUSION_ELEMENTS = 1 << 20
FUSION_QUICK = 1 << 17


def _fusion_rows(settings: Settings) -> list[Row]:
    n = FUSION_QUICK if settings.quick else FUSION_ELEMENTS
    x = Floats.random((n,), seed=3).tensor("wasm")
    backend = x.device.backend
    if not isinstance(backend, LazyBackend):
        return []  # $PYBURN_FUSION=0: nothing to compare

    def at(threshold: int) -> Callable[[], None]:
        def run() -> None:
            backend.eager_below = threshold
            chain(x)[0].item()
        return run
    fused_below = backend.eager_below
    try:
        times = measure({"pyburn": at(fused_below), "unfused": at(n + 1)}, settings)
    finally:
        backend.eager_below = fused_below
    return [Row.compare(NAME, f"fusion: 8 elementwise ops, {n} f32", "ms",
                        lambda seconds: seconds * 1e3, times, "unfused",
                        "wasm, one kernel per op", None, settings.quick)]


def _capture_rows(settings: Settings) -> list[Row]:
    from ..backends.wasm.capture import capture  # import time: for this row only
    from ..models.mnist import MnistCNN  # import time: the model zoo, for this row only
    from ..nn import functional as F  # import time: for this row only

    model = MnistCNN(device="wasm")
    model.eval()
    image = Floats.random((1, 1, 28, 28), seed=5).tensor("wasm")

    def forward(x: pyburn.Tensor) -> pyburn.Tensor:
        return F.softmax(model(x), dim=1)
    replay = capture(forward, image)

    def replayed() -> None:
        scores = replay(image)
        assert isinstance(scores, pyburn.Tensor)  # (one output)
        scores.tolist()

    def eager() -> None:
        with pyburn.no_grad():
            forward(image).tolist()
    times = measure({"pyburn": replayed, "eager": eager}, settings)
    return [Row.compare(NAME, "capture: MNIST CNN forward, batch 1, and its read back", "ms",
                        lambda seconds: seconds * 1e3, times, "eager", "wasm, op by op",
                        None, settings.quick)]


def measure_wasm(settings: Settings) -> list[Row]:
    """Every row of the family: fusion, capture."""
    return _fusion_rows(settings) + _capture_rows(settings)


BENCHMARKS = (
    Benchmark("wasm", "wasm", "8 fused elementwise ops on 1M floats vs one kernel per op; "
              "the MNIST CNN's forward pass captured vs op by op", measure_wasm),
)
