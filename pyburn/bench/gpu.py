"""The wgpu backend: matmul kernels against numpy, fusion against no fusion, dispatch latency.

- matmul: GFLOP/s of every matmul kernel variant (``matmul.VARIANTS``: register
  blocked, naive) at 512³ and 1024³, with numpy's ``@`` on the same numbers as the peer.
- fusion: a chain of 8 elementwise ops on 4M float32 elements, computed (then one
  element read, so that it runs) by the fused device (one kernel) against the unfused one
  (eight kernels); goal: fused time at most 0.3 of unfused, a speed ratio of at least 3.3.
- latency: one tiny dispatch and a 4-byte read, the round trip every synchronous
  read pays; the peer is the same read of a tensor already computed (no dispatch).

On a software adapter (llvmpipe) these numbers say what the kernels cost relative to each
other; speed against cuBLAS is measured on real GPUs by ``python -m pyburn.bench.gpu_check``.
"""

from __future__ import annotations

from collections.abc import Callable

import pyburn

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

#: the benchmark every row belongs to
NAME = "gpu.wgpu"
MATMUL_SIZES = (512, 1024)
MATMUL_QUICK = (32,)
FUSION_ELEMENTS = 4 * 1024 * 1024
FUSION_QUICK = 4096
FUSION_TARGET = Target("ratio", at_least=True, bound=1 / 0.3)


def chain(x: pyburn.Tensor) -> pyburn.Tensor:
    """Eight elementwise ops, a typical activation-and-update chain."""
    return ((x * 1.5 + 0.25).tanh() * x - 0.5).abs().sqrt() * 0.75


def matmul_call(size: int, variant: str, calls: int = 1) -> Callable[[], None]:
    """A call that multiplies two fixed ``size``² float32 matrices on the default wgpu
    device `calls` times with the matmul kernel `variant`, then waits for the last product.

    It runs the kernel directly: the tensor layer's ``a @ b`` is lazy under fusion, so an
    unread product would not run at all.
    """
    # import time: the cli imports every family; the wgpu kernels (30 ms) load when this runs
    from ..backends.wgpu.matmul import matmul

    backend = pyburn.device("wgpu").backend
    plain = getattr(backend, "inner", backend)  # the backend whose handles are GpuTensors
    a, b = (plain.from_bytes(Floats.random((size, size), seed=s).data.tobytes(), (size, size),
                             pyburn.float32) for s in (1, 2))

    def run() -> None:
        for _ in range(calls):
            out = matmul(plain.gpu, a, b, variant)
        plain.runtime.read(out.storage.buffer, 0, 4)  # wait for the result

    return run


def conv_call(batch: int, variant: str, calls: int = 1) -> Callable[[], None]:
    """A call that runs the MNIST CNN's second convolution (32 -> 64 channels, 3x3, on
    `batch` 26x26 images) `calls` times with conv kernel `variant` on the default wgpu
    device, then waits for the last result (the kernel itself: see `matmul_call`)."""
    from ..backends.wgpu.conv import conv  # import time: see `matmul_call`

    backend = pyburn.device("wgpu").backend
    plain = getattr(backend, "inner", backend)
    x, w = (plain.from_bytes(Floats.random(shape, seed=s).data.tobytes(), shape, pyburn.float32)
            for s, shape in ((3, (batch, 32, 26, 26)), (4, (64, 32, 3, 3))))

    def run() -> None:
        for _ in range(calls):
            out = conv(plain.gpu, x, w, (1, 1), [(0, 0)] * 2, (1, 1), 1, variant=variant)
        plain.runtime.read(out.storage.buffer, 0, 4)

    return run


def _matmul_size(size: int, settings: Settings) -> list[Row]:
    """One row per kernel variant for ``size``³, each against numpy on the same numbers."""
    from ..backends.wgpu.matmul import VARIANTS  # import time: see `matmul_call`

    np = peers.load("numpy")
    peer = {}  # none without numpy (a web page): the rows say "not installed"
    if np is not None:
        na, nb = (Floats.random((size, size), seed=s).numpy(np) for s in (1, 2))
        peer["numpy"] = lambda: na @ nb
    gflop = 2 * size**3 / 1e9
    rows = []
    for variant in VARIANTS:
        times = measure({"pyburn": matmul_call(size, variant), **peer}, settings)
        rows.append(Row.compare(NAME, f"matmul {variant} {size}³ f32", "GFLOP/s",
                                lambda seconds: gflop / seconds, times, "numpy",
                                peers.label("numpy"), None, settings.quick))
    return rows


def _matmul_rows(settings: Settings) -> list[Row]:
    return [row for size in (MATMUL_QUICK if settings.quick else MATMUL_SIZES)
            for row in _matmul_size(size, settings)]


def _fusion_rows(settings: Settings) -> list[Row]:
    n = FUSION_QUICK if settings.quick else FUSION_ELEMENTS
    data = Floats.random((n,), seed=3)
    fused = data.tensor("wgpu")
    unfused = data.tensor("wgpu_nofusion")
    # Reading one element makes the whole chain run without timing a 16 MB transfer.
    times = measure({"pyburn": lambda: chain(fused)[0].item(),
                     "unfused": lambda: chain(unfused)[0].item()}, settings)
    return [Row.compare(NAME, f"fusion: 8 elementwise ops, {n} f32", "ms",
                        lambda seconds: seconds * 1e3, times, "unfused", "wgpu, fusion off",
                        FUSION_TARGET, settings.quick)]


def _latency_rows(settings: Settings) -> list[Row]:
    x = pyburn.tensor([1.0], device="wgpu")
    done = x + 1.0
    done.item()
    times = measure({"pyburn": lambda: (x + 1.0).item(), "read": lambda: done.item()},
                    settings)
    return [Row.compare(NAME, "latency: 1-element add + read", "µs",
                        lambda seconds: seconds * 1e6, times, "read", "read only", None,
                        settings.quick)]


def measure_wgpu(settings: Settings) -> list[Row]:
    """Every row of the family: matmul variants, fusion, latency."""
    return _matmul_rows(settings) + _fusion_rows(settings) + _latency_rows(settings)


BENCHMARKS = (
    Benchmark("gpu", "wgpu", "matmul 512³/1024³ GFLOP/s per kernel vs numpy; 8 fused "
              "elementwise ops on 4M floats vs fusion off; dispatch round trip", measure_wgpu),
)
