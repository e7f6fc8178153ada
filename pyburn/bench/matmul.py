"""Matrix product: flex (MFLOP/s against plain Python) and cpu (time against numpy's ``@``).

flex multiplies an MLP layer's shapes, a batch of 64 MNIST images through a 784x128 layer;
its peer is the matmul anyone writes in plain Python (rows times columns with ``zip``).
cpu multiplies two 1024x1024 matrices; both pyburn and numpy end in the same BLAS call, so
the ratio measures what pyburn adds around it.
"""

from __future__ import annotations

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

FLEX_SHAPES = (64, 784, 128)  # M, K, N
FLEX_QUICK = (4, 16, 8)
CPU_SIZE = 1024
CPU_QUICK = 32

FLEX_TARGET = Target("value", at_least=True, bound=40.0, unit="MFLOP/s")
CPU_TARGET = Target("ratio", at_least=True, bound=0.95)


def python_matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """The product of two matrices given as lists of rows, in plain Python."""
    columns = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in columns] for row in a]


def _operands(m: int, k: int, n: int) -> tuple[Floats, Floats]:
    return Floats.random((m, k), seed=1), Floats.random((k, n), seed=2)


def measure_flex(settings: Settings) -> list[Row]:
    """MFLOP/s of ``a @ b`` on flex against `python_matmul` on the same numbers."""
    m, k, n = FLEX_QUICK if settings.quick else FLEX_SHAPES
    a, b = _operands(m, k, n)
    ta, tb = a.tensor("flex"), b.tensor("flex")
    la, lb = a.rows(), b.rows()
    times = measure({"pyburn": lambda: ta @ tb, "python": lambda: python_matmul(la, lb)},
                    settings)
    mflop = 2 * m * k * n / 1e6
    return [Row.compare("matmul.flex", f"{m}x{k} @ {k}x{n} f32", "MFLOP/s",
                        lambda seconds: mflop / seconds, times, "python", "python (zip loops)",
                        FLEX_TARGET, settings.quick)]


def measure_cpu(settings: Settings) -> list[Row]:
    """Milliseconds of ``a @ b`` on cpu against numpy's ``a @ b`` on the same arrays."""
    size = CPU_QUICK if settings.quick else CPU_SIZE
    a, b = _operands(size, size, size)
    ta, tb = a.tensor("cpu"), b.tensor("cpu")
    np = peers.load("numpy")  # present: the cpu device needs it
    na, nb = a.numpy(np), b.numpy(np)
    times = measure({"pyburn": lambda: ta @ tb, "numpy": lambda: na @ nb}, settings)
    return [Row.compare("matmul.cpu", f"{size}x{size} @ {size}x{size} f32", "ms",
                        lambda seconds: seconds * 1e3, times, "numpy", peers.label("numpy"),
                        CPU_TARGET, settings.quick)]


BENCHMARKS = (
    Benchmark("matmul", "flex", "64x784 @ 784x128 float32, MFLOP/s vs plain Python",
              measure_flex),
    Benchmark("matmul", "cpu", "1024x1024 @ 1024x1024 float32, time vs numpy's @", measure_cpu),
)
