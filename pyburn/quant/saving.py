"""Quantized models in safetensors files: `save` writes the state dict (packed words as int32
tensors, scales, zero points, float biases and everything else) with each quantized layer's
scheme in the header's metadata; `load_into` quantizes a float model's layers as the file
says and loads the tensors into it.

The metadata key ``pyburn.quant`` holds JSON: ``{"layers": {name: {"type":
"QuantizedLinear", "scheme": {...}, "activations": null | "dynamic" | "static"}}}``. Any
safetensors reader opens the file; pyburn's ``store.load`` reads its tensors.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ArgumentError, FormatError
from ..nn.module import Module
from ..store import safejson
from ..store.weights import USER_KEY, Source, named_tensors, read_header, to_json, write
from .layers import QUANTIZED, QuantizedLayer
from .scheme import QuantScheme
from .selection import replace

__all__ = ["QUANT_KEY", "layers_of", "load_into", "save"]

#: the metadata key of the quantized layers' descriptions
QUANT_KEY = "pyburn.quant"
_BY_NAME = {cls.__name__: cls for cls in QUANTIZED.values()}


def save(module: Module, path: str | os.PathLike[str], metadata: Any = None) -> None:
    """Write quantized `module` to a safetensors file at `path` (atomically), with its
    quantized layers' schemes; `metadata` is any JSON value, read back by
    ``pyburn.store.load_metadata``.

    >>> import os, tempfile, pyburn
    >>> from pyburn import nn, quant
    >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
    >>> model = quant.quantize(nn.Sequential(nn.Linear(4, 2, device="flex")))
    >>> quant.save(model, path)
    >>> skeleton = nn.Sequential(nn.Linear(4, 2, device="flex"))
    >>> type(quant.load_into(skeleton, path)[0]).__name__
    'QuantizedLinear'
    """
    if not isinstance(module, Module):
        raise ArgumentError(f"quant.save takes a pyburn.nn.Module, got {type(module).__name__}")
    layers = {name: {"type": type(m).__name__, "scheme": m.scheme.to_dict(),
                     "activations": m.activations}
              for name, m in module.named_modules() if isinstance(m, QuantizedLayer)}
    if not layers:
        raise ArgumentError(f"quant.save: {type(module).__name__} has no quantized layer (use "
                            f"pyburn.quant.quantize first, or pyburn.store.save for a float "
                            f"model)")
    fields = {QUANT_KEY: to_json({"layers": layers}, "the quantized layers")}
    if metadata is not None:
        fields[USER_KEY] = to_json(metadata, "metadata")
    write(path, named_tensors(module, "quant.save()"), fields)


def layers_of(source: Source) -> dict[str, dict[str, Any]]:
    """The quantized layers a file made by `save` describes: name -> {"type", "scheme",
    "activations"}; reads only the header."""
    text = read_header(source).metadata.get(QUANT_KEY)
    if text is None:
        raise FormatError(f"the file has no {QUANT_KEY!r} metadata: it was not written by "
                          f"pyburn.quant.save")
    found = safejson.loads(text, f"metadata {QUANT_KEY!r}")
    layers = found.get("layers") if isinstance(found, dict) else None
    if not isinstance(layers, dict) or not all(
            isinstance(v, dict) and v.get("type") in _BY_NAME for v in layers.values()):
        raise FormatError(f"metadata {QUANT_KEY!r} does not describe quantized layers: "
                          f"{text[:200]!r}")
    return layers


def load_into(module: Module, source: Source) -> Module:
    """Load a file written by `save` into `module`, a model of the same architecture in
    float (or quantized the same way): each layer the file names is replaced by its
    quantized form (per its scheme in the file), then every tensor is loaded in place
    (`Module.load_from`: all keys must match). Returns the module (the new layer when the
    file's only layer is `module` itself). `source` is a path, the file's bytes or a binary
    file object."""
    if not isinstance(module, Module):
        raise ArgumentError(f"quant.load_into takes a pyburn.nn.Module, got "
                            f"{type(module).__name__}")
    if callable(getattr(source, "read", None)):  # read twice below: the header, then all
        source = source.read()  # type: ignore[union-attr]
    layers = layers_of(source)
    for name, entry in layers.items():
        cls = _BY_NAME[entry["type"]]
        try:
            scheme = QuantScheme.from_dict(entry.get("scheme"))
        except (ArgumentError, TypeError) as exc:
            raise FormatError(f"layer {name!r}: {exc}") from None
        activations = entry.get("activations")
        try:
            layer = module.get_submodule(name)
        except ArgumentError as exc:
            raise ArgumentError(f"the file holds quantized layer {name!r}, which the model "
                                f"lacks: {exc}") from None
        if isinstance(layer, cls) and layer.scheme == scheme and \
                layer.activations == activations:
            continue
        if type(layer) is not cls.replaces:
            raise ArgumentError(f"the file holds layer {name!r} as a {cls.__name__}, but the "
                                f"model's {name!r} is a {type(layer).__name__}, not a "
                                f"{cls.replaces.__name__}")
        module = replace(module, name, cls.like(layer, scheme, activations))
    module.load_from(source)
    return module
