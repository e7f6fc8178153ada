"""Ready-made models, pyburn's model zoo: a registry of models by name, each built by
pyburn's own modules, with the key mapping that loads its publisher's weights (torchvision,
timm, Hugging Face ``transformers``: their ``.pth`` and ``.safetensors`` files, none of their
code) and the preprocessing and labels that go with it. Also the MNIST models that
`pyburn train mnist`, ``make demo``, the examples and the browser demo share.

>>> import pyburn
>>> from pyburn import models
>>> model = models.create("mnist-cnn", device="flex")
>>> model(pyburn.zeros(2, 1, 28, 28, device="flex")).shape
(2, 10)
"""

from __future__ import annotations

from .mnist import MEAN, STD, MnistCNN, MnistMLP, load_mnist, mnist_model, normalize
from .registry import ModelEntry, Preprocessing, create, describe, entry, list_models, register

#: the zoo's model names (``pyburn.models.list()``, as timm's ``list_models``)
list = list_models

__all__ = ["MEAN", "STD", "MnistCNN", "MnistMLP", "ModelEntry", "Preprocessing", "create",
           "describe", "entry", "list", "list_models", "load_mnist", "mnist_model",
           "normalize", "register"]
