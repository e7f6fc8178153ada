"""Convolution forward and backward on ``autodiff+cpu``, against PyTorch CPU in the same run.

The shapes are the MNIST CNN's (PyTorch's MNIST example, batch 64): a 3x3 convolution from 1
to 32 channels on 28x28 images, then one from 32 to 64 channels on the 26x26 result. Each
call runs the forward pass, a loss (the sum of the outputs times a fixed random tensor, so
that no gradient is uniform) and the backward pass to the input and the weight. A third row
times a whole training step of that network without the optimizer: conv, relu, conv, relu,
max pool 2, flatten, linear to 10 classes, cross entropy, backward to every parameter.

PyTorch runs with as many threads as numpy's BLAS (`blas_threads`, shared with train.py), so
``OPENBLAS_NUM_THREADS=1 pyburn bench conv`` compares both on one thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyburn
import pyburn.nn.functional as F

from . import peers
from .inputs import Floats
from .report import Row, Target
from .suite import Benchmark
from .timing import Settings, measure
from .train import blas_threads

DEVICE = "autodiff+cpu"
TARGET = Target("ratio", at_least=True, bound=0.5)
BATCH = 64
QUICK_BATCH = 2
CLASSES = 10


@dataclass(frozen=True)
class Layer:
    """One convolution: channels in and out, the input's side, and the kernel's."""

    c_in: int
    c_out: int
    size: int
    kernel: int = 3

    @property
    def out(self) -> int:
        """The output's side (no padding, stride 1)."""
        return self.size - self.kernel + 1

    def label(self, batch: int) -> str:
        """The row's case, e.g. "conv2d 1->32 3x3, 64x1x28x28 fwd+bwd"."""
        return (f"conv2d {self.c_in}->{self.c_out} {self.kernel}x{self.kernel}, "
                f"{batch}x{self.c_in}x{self.size}x{self.size} fwd+bwd")


def _threads() -> str:
    threads = blas_threads()
    return f"{threads} thread{'s' if threads > 1 else ''}"


LAYERS = (Layer(1, 32, 28), Layer(32, 64, 26))
QUICK_LAYERS = (Layer(1, 2, 6), Layer(2, 3, 4))


def _pyburn_conv(x: Floats, w: Floats, r: Floats) -> Callable[[], None]:
    tx, tw, tr = (v.tensor(DEVICE) for v in (x, w, r))
    tx.requires_grad_()
    tw.requires_grad_()

    def step() -> None:
        tx.grad = tw.grad = None
        (F.conv2d(tx, tw) * tr).sum().backward()

    return step


def _torch_conv(torch: Any, x: Floats, w: Floats, r: Floats) -> Callable[[], None]:
    tx, tw, tr = (v.torch(torch) for v in (x, w, r))
    tx.requires_grad_()
    tw.requires_grad_()

    def step() -> None:
        tx.grad = tw.grad = None
        (torch.nn.functional.conv2d(tx, tw) * tr).sum().backward()

    return step


def _network(layers: tuple[Layer, Layer], batch: int) -> tuple[list[Floats], Floats, list[int]]:
    """The CNN's parameters (two conv weights and biases, the linear layer's), one batch of
    images and its labels; weights scaled by 1/sqrt(fan-in), as an initializer would."""
    first, second = layers
    pooled = second.out // 2
    shapes = [(first.c_out, first.c_in, first.kernel, first.kernel), (first.c_out,),
              (second.c_out, second.c_in, second.kernel, second.kernel), (second.c_out,),
              (CLASSES, second.c_out * pooled * pooled), (CLASSES,)]
    params = []
    for seed, shape in enumerate(shapes, 10):
        fan_in = max(1, math.prod(shape[1:]))
        params.append(Floats.random(shape, seed=seed).scaled(fan_in ** -0.5))
    images = Floats.random((batch, first.c_in, first.size, first.size), seed=3)
    labels = [(7 * i) % CLASSES for i in range(batch)]
    return params, images, labels


def _pyburn_step(params: list[Floats], images: Floats, labels: list[int]) -> Callable[[], None]:
    w1, b1, w2, b2, w3, b3 = ps = [p.tensor(DEVICE).requires_grad_() for p in params]
    x = images.tensor(DEVICE)
    y = pyburn.tensor(labels, device=DEVICE)

    def step() -> None:
        for p in ps:
            p.grad = None
        h = F.relu(F.conv2d(F.relu(F.conv2d(x, w1, b1)), w2, b2))
        logits = F.linear(F.max_pool2d(h, 2).flatten(1), w3, b3)
        F.cross_entropy(logits, y).backward()

    return step


def _torch_step(torch: Any, params: list[Floats], images: Floats,
                labels: list[int]) -> Callable[[], None]:
    F = torch.nn.functional  # noqa: N806 - the name everyone uses
    w1, b1, w2, b2, w3, b3 = ps = [p.torch(torch).requires_grad_() for p in params]
    x = images.torch(torch)
    y = torch.tensor(labels)

    def step() -> None:
        for p in ps:
            p.grad = None
        h = F.relu(F.conv2d(F.relu(F.conv2d(x, w1, b1)), w2, b2))
        logits = F.linear(F.max_pool2d(h, 2).flatten(1), w3, b3)
        F.cross_entropy(logits, y).backward()

    return step


def _row(case: str, ours: Callable[[], None], theirs: Callable[[], None] | None,
         target: Target | None, settings: Settings) -> Row:
    candidates = {"pyburn": ours} | ({} if theirs is None else {"torch": theirs})
    times = measure(candidates, settings)
    return Row.compare("conv.cpu", case, "ms", lambda seconds: seconds * 1e3, times, "torch",
                       peers.label("torch"), target, settings.quick)


def measure_cpu(settings: Settings) -> list[Row]:
    """Milliseconds per forward+backward of each MNIST CNN convolution, and per training
    step of the whole network, on autodiff+cpu and on PyTorch CPU."""
    torch = peers.load("torch")
    if torch is not None:
        torch.set_num_threads(blas_threads())
    layers = QUICK_LAYERS if settings.quick else LAYERS
    batch = QUICK_BATCH if settings.quick else BATCH
    rows = []
    for seed, layer in enumerate(layers):
        x = Floats.random((batch, layer.c_in, layer.size, layer.size), seed=3 * seed)
        w = Floats.random((layer.c_out, layer.c_in, layer.kernel, layer.kernel),
                          seed=3 * seed + 1)
        r = Floats.random((batch, layer.c_out, layer.out, layer.out), seed=3 * seed + 2)
        theirs = None if torch is None else _torch_conv(torch, x, w, r)
        rows.append(_row(f"{layer.label(batch)}, {_threads()}", _pyburn_conv(x, w, r), theirs,
                         TARGET, settings))
    params, images, labels = _network(layers, batch)
    theirs = None if torch is None else _torch_step(torch, params, images, labels)
    case = f"MNIST CNN training step, batch {batch}, {_threads()}"
    rows.append(_row(case, _pyburn_step(params, images, labels), theirs, None, settings))
    return rows


BENCHMARKS = (
    Benchmark("conv", "cpu", "MNIST CNN conv2d fwd+bwd and a training step on autodiff+cpu, "
              "time vs PyTorch", measure_cpu),
)
