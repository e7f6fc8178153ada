"""What ``pyburn bench web`` runs inside a page's Python: training throughput of the MNIST MLP,
the same model, batch and optimizer as ``pyburn bench train`` and as the TF.js peer page
(``tfjs.js``), timed the same way; matmul's GFLOP/s; and the MNIST CNN's per-image latency
on the wasm device as the draw-a-digit page predicts (its forward pass captured, an image's
bytes in and the probabilities out), timed over predictions back to back, as ``tfjs.js``
times TF.js's, so that a page's 0.1 ms timer does not round each one; and the quantized
products of ``pyburn bench quant`` on the wasm device (the same matrices as ``ort.js`` gives
onnxruntime-web), with their outputs for a check.

A run trains in rounds of `ROUND` steps, each ended by a wait for the device (one read of a
weight), until `seconds` of wall time have passed: work queued on a GPU is counted, and never
more than a round of it piles up (TF.js's WebGPU backend would otherwise queue minutes of
work in a few seconds). A training loop that reads its loss now and then does the same.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import pyburn

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


async def _ms_per_call(products: dict[str, Callable[[], pyburn.Tensor]], samples: int,
                       min_ms: float) -> dict[str, list[float]]:
    """Milliseconds per call of `samples` runs of each of `products`, each call waited for
    (one element read), after one untimed run of each (the engine's optimizing compiler
    takes over hot code meanwhile). A run repeats calls until it lasts `min_ms`, so that a
    page's 0.1 ms timer does not round a small product, and the products take turns, run by
    run, so that the machine's other work falls on all alike (as ``ort.js`` times its
    models)."""

    async def run(product: Callable[[], pyburn.Tensor]) -> float:
        calls = 0
        started = time.perf_counter()
        while calls == 0 or (time.perf_counter() - started) * 1000 < min_ms:
            await product()[:1, :1].tolist_async()
            calls += 1
        return (time.perf_counter() - started) * 1000 / calls

    for product in products.values():
        await run(product)
    times: dict[str, list[float]] = {name: [] for name in products}
    for _ in range(samples):
        for name, product in products.items():
            times[name].append(await run(product))
    return times


async def quant_products(m: int, size: int, samples: int, min_ms: float) -> dict[str, Any]:
    """On wasm, x (`m`, `size`) times the int8 weight (`size`, `size`) of ``pyburn bench
    quant`` (``pyburn.bench.quant.float_weight``, quantized symmetric per tensor): ms per
    call (`_ms_per_call`) of the dynamic product, the integer product alone (x quantized as
    DynamicQuantizeLinear does), the weight-only one and float32 ``x @ W.T``, under "times";
    and for the check against onnxruntime-web, the dynamic and integer products' outputs,
    and the integers "a" and their zero point "a_zero" that the integer product took."""
    from ...ops.capability.quantized import quant_matmul_int  # import time: for this row only
    from ...quant import INT8_SYMMETRIC_PER_TENSOR, QTensor  # import time: for this row only
    from ...quant import kernels as qk  # import time: for this row only
    from ..quant import float_input, float_weight  # import time: for this row only

    dense = float_weight(size).tensor("wasm")
    w = QTensor.quantize(dense, INT8_SYMMETRIC_PER_TENSOR)
    x = float_input(m, size).tensor("wasm")
    a, _, a_zero = qk.quantize_activations(x)
    zeros = a_zero.expand((m, 1))
    products: dict[str, Callable[[], pyburn.Tensor]] = {
        "dynamic": lambda: qk.linear_dynamic(x, w.data, w.scale, None, k=size),
        "integer": lambda: quant_matmul_int(a, zeros, w.data, None, 8, True, size),
        "weight_only": lambda: qk.linear_weight_only(x, w.data, w.scale, None, **w.layout,
                                                     k=size),
        "float32": lambda: x @ dense.T}
    return {"times": await _ms_per_call(products, samples, min_ms),
            "dynamic": await products["dynamic"]().tolist_async(),
            "integer": await products["integer"]().tolist_async(),
            "a": await a.tolist_async(), "a_zero": (await a_zero.tolist_async())[0][0]}
