"""`pyburn.kernel`: the example kernels against what pyburn and numpy do without them, and
compile times.

- wgpu: the tiled-matmul example (`pyburn.kernel.examples.matmul`) against pyburn's own
  matmul kernel on the same device (llvmpipe here): issue 16's goal is >= 0.8x.
- cpu: the GELU example on the numpy executor against the same expression written in numpy:
  goal >= 0.5x.
- compile: a kernel's first launch (lowering, WGSL, pipeline) and a second one, on wgpu.
"""

from __future__ import annotations

import time

import pyburn

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

MATMUL_TARGET = Target("ratio", at_least=True, bound=0.8)
NUMPY_TARGET = Target("ratio", at_least=True, bound=0.5)
MATMUL_SIZE, MATMUL_QUICK = 256, 16
GELU_SIZE, GELU_QUICK = 1 << 20, 1 << 10


def measure_wgpu(settings: Settings) -> list[Row]:
    """The tiled-matmul kernel against pyburn's ``a @ b`` on wgpu (a read waits for each)."""
    from ..kernel import examples  # import time: its kernels are parsed as it loads

    size = MATMUL_QUICK if settings.quick else MATMUL_SIZE
    a = Floats.random((size, size), seed=1).tensor("wgpu")
    b = Floats.random((size, size), seed=2).tensor("wgpu")
    times = measure({"pyburn": lambda: examples.matmul(a, b)[0, 0].item(),
                     "builtin": lambda: (a @ b)[0, 0].item()}, settings)
    flop = 2 * size**3 / 1e9
    return [Row.compare("kernel.wgpu", f"tiled matmul example {size}x{size} @ {size}x{size}",
                        "GFLOP/s", lambda seconds: flop / seconds, times, "builtin",
                        "pyburn's matmul kernel", MATMUL_TARGET, settings.quick),
            _compile_row(settings)]


def measure_cpu(settings: Settings) -> list[Row]:
    """The GELU kernel on the numpy executor against its expression written in numpy."""
    from ..kernel import examples  # import time: see `measure_wgpu`

    n = GELU_QUICK if settings.quick else GELU_SIZE
    np = peers.load("numpy")
    assert np is not None  # the cpu device needs it
    values = Floats.random((n,), seed=3)
    x, array = values.tensor("cpu"), values.numpy(np)
    c = examples.SQRT_2_OVER_PI

    def direct() -> object:
        return 0.5 * array * (1.0 + np.tanh(c * (array + 0.044715 * array * array * array)))

    times = measure({"pyburn": lambda: examples.gelu(x), "numpy": direct}, settings)
    return [Row.compare("kernel.cpu", f"GELU kernel, {n} float32", "Melem/s",
                        lambda seconds: n / seconds / 1e6, times, "numpy",
                        f"{peers.label('numpy')} expression", NUMPY_TARGET, settings.quick)]


def _compile_row(settings: Settings) -> Row:
    """Milliseconds of a kernel's first launch on wgpu for a new constant (lowering, WGSL,
    the pipeline's compile), against the next launch of the same signature."""
    from ..kernel.examples import scaled_gelu_kernel as kernel  # import time: see above

    x = pyburn.ones(64, device="wgpu")

    def launch(scale: float) -> float:
        start = time.perf_counter()
        kernel[1, 64]((64,), x, 64, scale)[0].item()
        return time.perf_counter() - start

    colds, warms = [], []
    for k in range(3 if settings.quick else 7):
        scale = 1.0 + k / 7 + time.time() % 1  # a value no earlier run compiled
        colds.append(launch(scale))
        warms.append(launch(scale))
    cold, warm = sorted(colds)[len(colds) // 2], sorted(warms)[len(warms) // 2]
    return Row("kernel.wgpu", "a kernel's first launch (compile) vs the next", "ms",
               cold * 1e3, min(colds) * 1e3, "the next launch", warm * 1e3, warm / cold, None,
               settings.quick, tuple(t * 1e3 for t in colds), tuple(t * 1e3 for t in warms))


BENCHMARKS = (
    Benchmark("kernel", "wgpu", "pyburn.kernel: tiled matmul example vs pyburn's matmul; "
              "compile times", measure_wgpu),
    Benchmark("kernel", "cpu", "pyburn.kernel: GELU on the numpy executor vs numpy",
              measure_cpu),
)
