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

import importlib
from typing import Any

from .mnist import MEAN, STD, MnistCNN, MnistMLP, load_mnist, mnist_model, normalize
from .registry import ModelEntry, Preprocessing, create, describe, entry, list_models, register

#: the other families' public names, and their modules, imported on first use (a page that
#: only runs the MNIST model does not pay for the zoo)
_LAZY = {
    "BertConfig": "bert", "BertModel": "bert", "SentenceEncoder": "bert",
    "mean_pooling": "bert", "Sampler": "generate", "KVCache": "llama",
    "Llama3RopeScaling": "llama", "LlamaConfig": "llama", "LlamaForCausalLM": "llama",
    "InvertedResidual": "mobilenet", "MobileNetV2": "mobilenet", "MBConv": "mobilenet_v3",
    "MobileNetV3": "mobilenet_v3", "EfficientNet": "efficientnet", "BasicBlock": "resnet",
    "Bottleneck": "resnet", "ResNet": "resnet", "Fire": "squeezenet",
    "SqueezeNet": "squeezenet", "Tokenizer": "tokenizers",
    "VisionTransformer": "vit", "YOLOX": "yolox", "YOLOXHead": "yolox",
    "YOLOPAFPN": "cspdarknet", "CSPDarknet": "cspdarknet",
}


def __getattr__(name: str) -> Any:
    """A family's public name, its module imported on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the zoo's model names (``pyburn.models.list()``, as timm's ``list_models``)
list = list_models

__all__ = ["BasicBlock", "BertConfig", "BertModel", "Bottleneck", "create", "describe", "entry",
           "Fire", "InvertedResidual", "KVCache", "list", "list_models",
           "Llama3RopeScaling", "LlamaConfig", "LlamaForCausalLM", "load_mnist", "MEAN",
           "mean_pooling", "mnist_model", "MnistCNN", "MnistMLP", "MobileNetV2",
           "MobileNetV3", "MBConv", "EfficientNet",
           "ModelEntry", "normalize", "Preprocessing", "register", "ResNet", "Sampler",
           "SentenceEncoder", "SqueezeNet", "STD", "Tokenizer", "VisionTransformer",
           "YOLOX", "YOLOXHead", "YOLOPAFPN", "CSPDarknet"]
