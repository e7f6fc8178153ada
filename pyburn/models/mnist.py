"""The MNIST models: `MnistMLP` (784-128-10) and `MnistCNN` (two conv blocks with batch norm
and pooling, then two linear layers), the browser demo's model.

Both take images as `pyburn.data.datasets.MNIST` gives them, float (N, 1, 28, 28) with values
``byte / 255`` in [0, 1] (what a canvas gives too), and normalise them themselves with the
training set's mean and standard deviation. Keeping that step inside the model means a saved
file is all a user of the weights needs: there is no preprocessing to get wrong elsewhere.
"""

from __future__ import annotations

from typing import Any

from .. import quant, store
from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..nn import functional as F
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from ..nn.normalization import BatchNorm2d
from .registry import ModelEntry, Preprocessing, register

#: mean and standard deviation of MNIST's training pixels, on the [0, 1] scale
MEAN = 0.1307
STD = 0.3081
IMAGE_SIZE = 28
CLASSES = 10
#: the keys of a model's `config()`, among the other metadata of its saved weights
CONFIG_KEYS = ("model", "channels", "hidden")


def normalize(images: Tensor) -> Tensor:
    """``(images - 0.1307) / 0.3081``: pixels in [0, 1] (a byte / 255) to mean 0 and
    standard deviation 1 over MNIST's training set.

    >>> import pyburn
    >>> round(normalize(pyburn.tensor([0.1307], device="flex")).item(), 6)
    0.0
    """
    return (images - MEAN) / STD


def _check_images(images: Tensor, model: str) -> None:
    if not isinstance(images, Tensor):
        raise ArgumentError(f"{model} takes a tensor of images, got {type(images).__name__}")
    if images.ndim != 4 or images.shape[1:] != (1, IMAGE_SIZE, IMAGE_SIZE):
        raise ShapeError(f"{model} takes images of shape (N, 1, 28, 28), got {images.shape}")


class MnistMLP(Module):
    """784 -> `hidden` -> 10: one hidden layer with ReLU, on the flattened image.

    >>> import pyburn
    >>> model = MnistMLP(device="flex")
    >>> model.num_params(), model(pyburn.zeros(3, 1, 28, 28, device="flex")).shape
    (101770, (3, 10))
    """

    def __init__(self, hidden: int = 128, device: Any = None, dtype: Any = None):
        super().__init__()
        self.hidden = hidden
        self.fc1 = Linear(IMAGE_SIZE * IMAGE_SIZE, hidden, device=device, dtype=dtype)
        self.fc2 = Linear(hidden, CLASSES, device=device, dtype=dtype)

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, 10) for images (N, 1, 28, 28) in [0, 1]."""
        _check_images(images, "MnistMLP")
        x = normalize(images).reshape(images.shape[0], IMAGE_SIZE * IMAGE_SIZE)
        return self.fc2(F.relu(self.fc1(x)))

    def config(self) -> dict[str, Any]:
        """The constructor arguments that shape the weights (stored with saved weights)."""
        return {"model": "mlp", "hidden": self.hidden}


class MnistCNN(Module):
    """Two conv blocks, then two linear layers:

    ``conv 3x3 (1 -> c1) - batch norm - max pool 2 - ReLU`` (28x28 -> 14x14),
    ``conv 3x3 (c1 -> c2) - batch norm - max pool 2 - ReLU`` (14x14 -> 7x7),
    ``linear (c2*7*7 -> hidden) - ReLU - linear (hidden -> 10)``.

    The convolutions have no bias: the batch norm right after them subtracts the mean per
    channel, which would cancel it. With the defaults, ``channels=(8, 16)`` and
    ``hidden=64`` (52,162 parameters), two epochs of Adam with a one-cycle schedule reach
    about 98.8% test accuracy; the size was chosen so that ``make demo`` trains it on two
    CPU cores within its time budget.

    >>> import pyburn
    >>> model = MnistCNN(device="flex")
    >>> model.num_params(), model(pyburn.zeros(2, 1, 28, 28, device="flex")).shape
    (52162, (2, 10))
    """

    def __init__(self, channels: tuple[int, int] = (8, 16), hidden: int = 64,
                 device: Any = None, dtype: Any = None):
        super().__init__()
        c1, c2 = channels
        self.channels = (c1, c2)
        self.hidden = hidden
        self.conv1 = Conv2d(1, c1, 3, padding=1, bias=False, device=device, dtype=dtype)
        self.bn1 = BatchNorm2d(c1, device=device, dtype=dtype)
        self.conv2 = Conv2d(c1, c2, 3, padding=1, bias=False, device=device, dtype=dtype)
        self.bn2 = BatchNorm2d(c2, device=device, dtype=dtype)
        pooled = IMAGE_SIZE // 4
        self.fc1 = Linear(c2 * pooled * pooled, hidden, device=device, dtype=dtype)
        self.fc2 = Linear(hidden, CLASSES, device=device, dtype=dtype)

    def forward(self, images: Tensor) -> Tensor:
        """Class scores (N, 10) for images (N, 1, 28, 28) in [0, 1]."""
        _check_images(images, "MnistCNN")
        # ReLU after the pooling, not before: the two commute (both are monotone), and the
        # ReLU then runs on a quarter of the values, forward and backward
        x = F.relu(F.max_pool2d(self.bn1(self.conv1(normalize(images))), 2))
        x = F.relu(F.max_pool2d(self.bn2(self.conv2(x)), 2))
        return self.fc2(F.relu(self.fc1(x.reshape(x.shape[0], -1))))

    def config(self) -> dict[str, Any]:
        """The constructor arguments that shape the weights (stored with saved weights)."""
        return {"model": "cnn", "channels": list(self.channels), "hidden": self.hidden}


def mnist_model(config: dict[str, Any], device: Any = None, dtype: Any = None) -> Module:
    """The model a `config()` describes (as stored in the metadata of saved weights), with
    fresh parameters: ``mnist_model({"model": "cnn"})`` is a default `MnistCNN`.

    >>> type(mnist_model({"model": "mlp", "hidden": 32}, device="flex")).__name__
    'MnistMLP'
    """
    kind = config.get("model")
    options = {k: v for k, v in config.items() if k != "model"}
    if kind == "mlp" and set(options) <= {"hidden"}:
        return MnistMLP(**options, device=device, dtype=dtype)
    if kind == "cnn" and set(options) <= {"channels", "hidden"}:
        if "channels" in options:
            options["channels"] = tuple(options["channels"])
        return MnistCNN(**options, device=device, dtype=dtype)
    raise ArgumentError(f"not an MNIST model configuration: {config!r} (expected "
                        "{'model': 'mlp', 'hidden': ...} or {'model': 'cnn', 'channels': [c1, "
                        "c2], 'hidden': ...})")


def load_mnist(source: Any, device: Any = None) -> Module:
    """The MNIST model whose weights `pyburn train mnist` saved in `source` (a path, or the
    file's bytes as a page fetches them), built from the configuration in their metadata,
    on `device` and in eval mode. The file is read on flex, which holds every dtype a file
    may have (a batch norm's int64 counter), and each value then takes its parameter's
    device and dtype.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "mlp.safetensors")
    >>> saved = MnistMLP(hidden=16, device="flex")
    >>> from pyburn import store
    >>> store.save(saved, path, metadata={**saved.config(), "epochs": 0})
    >>> type(load_mnist(path, device="flex")).__name__
    'MnistMLP'
    """
    metadata = store.load_metadata(source) or {}
    model = mnist_model({k: v for k, v in metadata.items() if k in CONFIG_KEYS}, device=device)
    if quant.saving.QUANT_KEY in store.read_header(source).metadata:
        # weights saved quantized (`pyburn.quant.save`): loaded as they are, run in float
        return quant.dequantize(quant.load_into(model, source)).eval()
    model.load_state_dict(store.load(source, device="flex"))
    return model.eval()


def _register() -> None:
    """The MNIST models in the zoo (`pyburn.models.create("mnist-cnn")`): pyburn's own, with
    their weights as `pyburn train mnist` saves them; they normalise their inputs
    themselves, so the preprocessing is only the size."""
    digits = tuple(str(d) for d in range(CLASSES))
    size = Preprocessing(resize=IMAGE_SIZE, crop=IMAGE_SIZE)
    register(ModelEntry("mnist-mlp", MnistMLP, "image-classification",
                        "784-128-10 MLP for MNIST digits (28x28 greyscale, in [0, 1])",
                        preprocessing=size, labels=digits))
    register(ModelEntry("mnist-cnn", MnistCNN, "image-classification",
                        "two conv blocks with batch norm, then two linear layers, for MNIST "
                        "digits (the browser demo's model)", preprocessing=size, labels=digits))


_register()
