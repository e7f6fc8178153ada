"""What ``pyburn bench web`` runs inside a page's Python: training throughput of the MNIST MLP,
the same model, batch and optimizer as ``pyburn bench train`` and as the TF.js peer page
(``tfjs.js``), timed the same way.

A run trains for at least `seconds` of wall time, then waits for the device to finish (one
read of a weight) before the clock stops: work still queued on the GPU is counted.
"""

from __future__ import annotations

import time

from ..inputs import Floats
from ..train import BATCH, labels_for, pyburn_trainer


async def train_throughput(device: str, seconds: float, repeat: int) -> list[float]:
    """Samples per second of `repeat` runs of MLP training steps on `device`, after one
    untimed step (which compiles the GPU's pipelines)."""
    images = Floats.random((BATCH, 1, 28, 28), seed=1)
    model, step = pyburn_trainer("mlp", images, labels_for(BATCH), device)
    bias = model.fc2.bias

    async def finished() -> None:
        await bias.detach()[:1].tolist_async()

    step()
    await finished()
    rates = []
    for _ in range(repeat):
        steps = 0
        started = time.perf_counter()
        while steps == 0 or time.perf_counter() - started < seconds:
            step()
            steps += 1
        await finished()
        rates.append(steps * BATCH / (time.perf_counter() - started))
    return rates
