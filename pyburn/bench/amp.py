"""Mixed precision: ``pyburn.autocast`` against float32 on the same device, in the same run.

Two cases per device: a 1024x1024 @ 1024x1024 matmul, and one training step of the MNIST
CNN (batch 64, Adam: zero the gradients, forward, cross-entropy, backward, update), the
mixed step under ``autocast`` with a `GradScaler`. The peer is the same work in float32, so
the ratio is autocast's speed-up (above 1) or cost (below). Each call ends by reading one
element, so that an asynchronous device has done the work.

On cpu float16 is storage only (numpy computes it in float32 and rounds), so the ratio shows
what the casts cost; on wgpu it depends on the adapter: on a GPU with ``shader-f16``
the matmul reads half the bytes, and on a software adapter (llvmpipe) it measures nothing a
GPU would show.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pyburn

from ..amp import GradScaler
from ..models import MnistCNN
from ..nn import functional as F
from ..optim import Adam
from .inputs import Floats
from .report import Row
from .suite import Benchmark
from .timing import Settings, measure
from .train import labels_for

SIZE, QUICK_SIZE = 1024, 32
BATCH, QUICK_BATCH = 64, 2


def _matmul(device: str, size: int, mixed: bool) -> Callable[[], object]:
    a = Floats.random((size, size), seed=1).tensor(device)
    b = Floats.random((size, size), seed=2).tensor(device)

    def call() -> object:
        with pyburn.autocast(device, enabled=mixed):
            return (a @ b)[0, 0].item()

    return call


def _training_step(device: str, batch: int, mixed: bool) -> Callable[[], object]:
    trainer = pyburn.device(device).autodiff()
    pyburn.manual_seed(0)
    model = MnistCNN(device=trainer)
    optimizer, scaler = Adam(model.parameters(), lr=1e-3), GradScaler(enabled=mixed)
    x = Floats.random((batch, 1, 28, 28), seed=1).tensor(device).to(trainer)
    y = pyburn.tensor(labels_for(batch), dtype=pyburn.int32, device=trainer)

    def step() -> object:
        optimizer.zero_grad()
        with pyburn.autocast(trainer, enabled=mixed):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return model.fc2.bias[0].item()

    return step


def measure_on(device: str, settings: Settings) -> list[Row]:
    """Milliseconds of the matmul and samples/s of the training step, autocast against
    float32 on `device`."""
    size = QUICK_SIZE if settings.quick else SIZE
    batch = QUICK_BATCH if settings.quick else BATCH
    name, peer = f"amp.{device}", "pyburn float32 (same run)"
    matmuls = measure({"pyburn": _matmul(device, size, True),
                       "float32": _matmul(device, size, False)}, settings)
    steps = measure({"pyburn": _training_step(device, batch, True),
                     "float32": _training_step(device, batch, False)}, settings)
    return [Row.compare(name, f"{size}x{size} @ {size}x{size}, autocast float16", "ms",
                        lambda seconds: seconds * 1e3, matmuls, "float32", peer, None,
                        settings.quick),
            Row.compare(name, f"MNIST CNN training step, batch {batch}, autocast + GradScaler",
                        "samples/s", lambda seconds: batch / seconds, steps, "float32", peer,
                        None, settings.quick)]


BENCHMARKS = tuple(
    Benchmark("amp", device, "matmul 1024^3 and an MNIST CNN training step, autocast vs "
              "float32", functools.partial(measure_on, device))
    for device in ("cpu", "wgpu"))
