"""The classify page's Python: the zoo classifier the site's build trained on generated shapes
(site/train_shapes.py), built by ``pyburn.models.create`` from its safetensors file as the
desktop builds it, on each device the page offers, and one prediction per call. The page runs
this file once, then calls `load`, `warm`, `sample` and `predict` (see classify.js).

An image arrives as the page's canvas averaged down to the model's size: bytes, one plane per
colour (R, then G, then B), rows top down. It is preprocessed as the model's registry entry
says, less the entry's resize and crop (for photos, not for images made at the model's size),
as the build's training and its held-out accuracy did.
"""

import time
from dataclasses import asdict, replace

from pyodide.http import pyfetch

import pyburn
from pyburn import models, store
from pyburn.data.shapes import ShapesDataset
from pyburn.nn import functional as F

#: the seed of the shapes the page draws: not the training's (1) nor the held-out set's (2)
SAMPLE_SEED = 3
#: how many of them there are to pick from
SAMPLES = 1 << 30

_weights = b""
_about = {}
_models = {}


async def load(url):
    """Fetch the weights; returns their metadata (the model, its classes, its data and its
    held-out accuracy) with the registry entry's description and preprocessing."""
    global _weights
    _weights = await (await pyfetch(url)).bytes()
    _about.update(store.load_metadata(_weights))
    entry = models.entry(_about["model"])
    return {**_about, "description": entry.description,
            "preprocessing": asdict(entry.preprocessing)}


def _model(device):
    """The model on `device`, built on first use."""
    if device not in _models:
        _models[device] = models.create(_about["model"], _weights, device=device,
                                        **_about["config"])
    return _models[device]


async def _probabilities(model, pixels, device):
    size = _about["image_size"]
    with pyburn.no_grad():
        image = pyburn.tensor(pixels.cast("B"), shape=(1, 3, size, size), dtype="uint8",
                              device=device)
        recipe = replace(model.entry.preprocessing, resize=None, crop=None)
        return (await F.softmax(model(recipe(image)), dim=1).tolist_async())[0]


async def predict(pixels, device):
    """Class probabilities of one image (see the module docstring) on `device`, and the
    milliseconds the model and the read-back took."""
    model = _model(device)
    started = time.perf_counter()
    probabilities = await _probabilities(model, pixels, device)
    return {"probabilities": probabilities, "device": device,
            "ms": (time.perf_counter() - started) * 1000}


async def warm(device):
    """A prediction of a blank image on `device`, its result dropped: the model is built and
    its kernels compiled (WebGPU's pipelines) while the page loads, not at the first one."""
    await _probabilities(_model(device), memoryview(bytes(3 * _about["image_size"] ** 2)),
                         device)


def sample(index):
    """Shape number `index` of the page's own generated ones: its pixels (as `predict`
    takes them) and its class."""
    data = ShapesDataset(SAMPLES, size=_about["image_size"], seed=SAMPLE_SEED, device="flex")
    image, label = data[index % SAMPLES]
    return {"pixels": (image * 255).round().cast(pyburn.uint8).to_bytes(),
            "label": data.classes[label], "index": index}
