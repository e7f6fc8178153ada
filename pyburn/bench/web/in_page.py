"""What ``pyburn bench web`` runs inside a page's Python: training throughput of the MNIST MLP,
the same model, batch and optimizer as ``pyburn bench train`` and as the TF.js peer page
(``tfjs.js``), timed the same way; matmul's GFLOP/s; and the MNIST CNN's per-image latency
on the wasm device as the draw-a-digit page predicts (its forward pass captured, an image's
bytes in and the probabilities out), timed over predictions back to back, as ``tfjs.js``
times TF.js's, so that a page's 0.1 ms timer does not round each one.

A run trains in rounds of `ROUND` steps, each ended by a wait for the device (one read of a
weight), until `seconds` of wall time have passed: work queued on a GPU is counted, and never
more than a round of it piles up (TF.js's WebGPU backend would otherwise queue minutes of
work in a few seconds). A training loop that reads its loss now and then does the same.
"""

from __future__ import annotations

import struct
import time

from ..inputs import Floats
from ..train import BATCH, labels_for, pyburn_trainer

#: training steps between two waits for the device
ROUND = 5


async def train_throughput(device: str, seconds: float, repeat: int) -> list[float]:
    """Samples per second of `repeat` runs of MLP training steps on `device`, after one
    untimed step (which compiles the GPU's pipelines); `seconds` 0 makes one round a run."""
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
            for _ in range(ROUND):
                step()
            await finished()
            steps += ROUND
        rates.append(steps * BATCH / (time.perf_counter() - started))
    return rates


async def matmul_rate(device: str, size: int, repeat: int) -> list[float]:
    """GFLOP/s of `repeat` products of two random `size` x `size` float32 matrices on
    `device`, each waited for (one element read), after one untimed."""
    a = Floats.random((size, size), seed=1).tensor(device)
    b = Floats.random((size, size), seed=2).tensor(device)

    async def once() -> None:
        await (a @ b)[:1, :1].tolist_async()

    await once()
    rates = []
    for _ in range(repeat):
        started = time.perf_counter()
        await once()
        rates.append(2 * size**3 / (time.perf_counter() - started) / 1e9)
    return rates


async def cnn_latency(count: int, repeat: int) -> list[float]:
    """Milliseconds per image of `repeat` runs of `count` predictions back to back by the
    MNIST CNN (random weights) on wasm, captured: one image's float32 bytes in, its ten
    probabilities out as Python floats."""
    from ...backends.wasm.capture import capture  # import time: wasm only
    from ...models.mnist import MnistCNN  # import time: the model zoo, for this row only
    from ...nn import functional as F  # import time: for this row only

    model = MnistCNN(device="wasm").eval()
    image = Floats.random((1, 1, 28, 28), seed=5)
    predict = capture(lambda x: F.softmax(model(x), dim=1), image.tensor("wasm"))
    pixels = image.data.tobytes()
    predict.raw(pixels)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        for _ in range(count):
            (scores,) = predict.raw(pixels)
            struct.unpack("<10f", scores)
        times.append((time.perf_counter() - started) * 1000 / count)
    return times
