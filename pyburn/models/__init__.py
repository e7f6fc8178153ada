"""Ready-made models: the MNIST models that `pyburn train mnist`, ``make demo``, the examples
and the browser demo share.

>>> import pyburn
>>> from pyburn.models import MnistCNN
>>> MnistCNN(device="flex")(pyburn.zeros(2, 1, 28, 28, device="flex")).shape
(2, 10)
"""

from __future__ import annotations

from .mnist import MEAN, STD, MnistCNN, MnistMLP, load_mnist, mnist_model, normalize

__all__ = ["MEAN", "STD", "MnistCNN", "MnistMLP", "load_mnist", "mnist_model", "normalize"]
