"""The draw-a-digit page's Python: the MNIST model the site ships, on each device the page
offers, and one prediction per call. The page runs this file once, then calls `load` and
`predict` (see mnist.js).

The weights carry their model's configuration in their metadata (``pyburn train mnist``
writes it), so the same code serves the CNN of ``make demo`` and an MLP.
"""

import struct
import time

from pyodide.http import pyfetch

import pyburn
from pyburn import store
from pyburn.backends.wasm.capture import capture
from pyburn.models import load_mnist
from pyburn.nn import functional as F

_weights = b""
_models = {}
#: on the wasm device, the forward pass captured once and replayed (one call into the engine)
_captured = {}


async def load(url):
    """Fetch the weights; returns their metadata (the model's configuration, its accuracy)."""
    global _weights
    _weights = await (await pyfetch(url)).bytes()
    return store.load_metadata(_weights)


async def predict(pixels, device):
    """Class probabilities of one 28×28 image (784 float32 values in [0, 1], row by row, as a
    memoryview) on `device`, and the milliseconds the model and the read-back took."""
    model = _model(device)
    started = time.perf_counter()
    probabilities = await _forward(model, pixels, device)
    return {"probabilities": probabilities[0], "device": device,
            "ms": (time.perf_counter() - started) * 1000}


async def warm(device):
    """A prediction of a blank image on `device`, its result dropped: the model is built and
    its kernels compiled (WebGPU's pipelines) while the page loads, not at the first
    drawing; on wasm the forward pass is captured for replay."""
    model = _model(device)
    await _forward(model, memoryview(bytes(4 * 28 * 28)), device)
    if device == "wasm":
        blank = pyburn.zeros(1, 1, 28, 28, device=device)
        _captured[device] = capture(lambda image: F.softmax(model(image), dim=1), blank)


def _model(device):
    """The model on `device`, built on first use."""
    if device not in _models:
        _models[device] = load_mnist(_weights, device=device)
    return _models[device]


async def _forward(model, pixels, device):
    if device in _captured:  # the pixels' bytes in, the scores' bytes out
        (scores,) = _captured[device].raw(pixels.cast("B"))
        return [list(struct.unpack(f"<{len(scores) // 4}f", scores))]
    with pyburn.no_grad():
        image = pyburn.tensor(pixels.cast("B"), shape=(1, 1, 28, 28), dtype="float32",
                              device=device)
        return await F.softmax(model(image), dim=1).tolist_async()
