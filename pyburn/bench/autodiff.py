"""What gradients cost: a tiny forward+backward against PyTorch, and what an autodiff device
costs when nothing requires grad.

- ``(a + b).sum().backward()`` on one-element tensors that require grad: with one element
  the arithmetic is free, so this is the price of recording two nodes, walking them back and
  accumulating two ``.grad``; PyTorch runs the same in the same run.
- Inference on ``autodiff+cpu`` against plain ``cpu``: an autodiff device records nothing
  for tensors that do not require grad (docs/autodiff.md), so the same forward pass should
  cost the same on both. Two forwards: a one-element ``a + b`` (where any bookkeeping would
  show most) and an MLP layer pair, ``relu(x @ w1 + b1) @ w2 + b2`` on a batch of 64 MNIST
  images (784 -> 128 -> 10).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyburn.nn.functional as F

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure

DEVICE = "autodiff+cpu"
PLAIN = "cpu"
PLAIN_LABEL = "plain cpu device"
#: inference on an autodiff device must cost what it costs on the plain device
INFERENCE_TARGET = Target("ratio", at_least=True, bound=0.95)
MLP = (64, 784, 128, 10)
QUICK_MLP = (2, 8, 4, 3)


def _pyburn_backward(a: Floats, b: Floats) -> Callable[[], None]:
    ta, tb = (v.tensor(DEVICE).requires_grad_() for v in (a, b))

    def step() -> None:
        ta.grad = tb.grad = None
        (ta + tb).sum().backward()

    return step


def _torch_backward(torch: Any, a: Floats, b: Floats) -> Callable[[], None]:
    ta, tb = (v.torch(torch).requires_grad_() for v in (a, b))

    def step() -> None:
        ta.grad = tb.grad = None
        (ta + tb).sum().backward()

    return step


def _mlp(values: list[Floats], device: str) -> Callable[[], object]:
    x, w1, b1, w2, b2 = (v.tensor(device) for v in values)
    return lambda: F.relu(x @ w1 + b1) @ w2 + b2


def _add(values: list[Floats], device: str) -> Callable[[], object]:
    a, b = (v.tensor(device) for v in values)
    return lambda: a + b


def measure_cpu(settings: Settings) -> list[Row]:
    """Microseconds of a one-element forward+backward against PyTorch, and the speed of
    inference on autodiff+cpu relative to plain cpu."""
    a, b = Floats.random((1,), seed=1), Floats.random((1,), seed=2)
    candidates = {"pyburn": _pyburn_backward(a, b)}
    torch = peers.load("torch")
    if torch is not None:
        candidates["torch"] = _torch_backward(torch, a, b)
    rows = [Row.compare("autodiff.cpu", "(a + b).sum().backward(), 1 element f32", "us",
                        lambda seconds: seconds * 1e6, measure(candidates, settings), "torch",
                        peers.label("torch"), None, settings.quick)]
    n, d_in, hidden, d_out = QUICK_MLP if settings.quick else MLP
    mlp = [Floats.random(shape, seed=seed) for seed, shape in enumerate(
        [(n, d_in), (d_in, hidden), (hidden,), (hidden, d_out), (d_out,)], 3)]
    forwards = [("a + b, 1 element f32, no grad", "us", 1e6, _add, [a, b]),
                (f"MLP {d_in}-{hidden}-{d_out} forward, batch {n}, no grad", "ms", 1e3, _mlp,
                 mlp)]
    for case, unit, scale, build, values in forwards:
        times = measure({"pyburn": build(values, DEVICE), "plain": build(values, PLAIN)},
                        settings)
        rows.append(Row.compare("autodiff.cpu", case, unit, lambda s, k=scale: s * k, times,
                                "plain", PLAIN_LABEL, INFERENCE_TARGET, settings.quick))
    return rows


BENCHMARKS = (
    Benchmark("autodiff", "cpu", "1-element forward+backward vs PyTorch; inference on "
              "autodiff+cpu vs plain cpu", measure_cpu),
)
