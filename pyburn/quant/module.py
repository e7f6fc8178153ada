"""`quantize`: a model's Linear and convolution layers replaced by their quantized forms."""

from __future__ import annotations

from ..errors import ArgumentError
from ..nn.module import Module
from .calibration import Calibration
from .layers import QUANTIZED, QuantizedLayer, check_mode
from .scheme import INT8_SYMMETRIC_PER_CHANNEL, QuantScheme
from .selection import Filter, replace, select

__all__ = ["quantize"]


def quantize(module: Module, scheme: QuantScheme = INT8_SYMMETRIC_PER_CHANNEL,
             activations: str | None = None, calibration: Calibration | None = None, *,
             targets: Filter = None, skip: Filter = ()) -> Module:
    """Replace every Linear, Conv1d and Conv2d of `module` (those of `targets`, none of
    `skip`) with `QuantizedLinear`, `QuantizedConv1d`, `QuantizedConv2d`: weights quantized
    by `scheme`, biases kept in float. Works in place and returns the module (the new layer
    itself when `module` is one of the layers).

    `activations`: None quantizes the weights only; "dynamic" also quantizes each layer's
    input at every call from its own range (uint8, asymmetric, per tensor); "static" uses
    the input ranges a `calibrate` run found, given as `calibration`.

    >>> import pyburn
    >>> from pyburn import nn, quant
    >>> model = nn.Sequential(nn.Linear(4, 8, device="flex"), nn.ReLU(),
    ...                       nn.Linear(8, 2, device="flex"))
    >>> model = quant.quantize(model, quant.INT8_SYMMETRIC_PER_CHANNEL, skip=["2"])
    >>> [type(m).__name__ for m in model]
    ['QuantizedLinear', 'ReLU', 'Linear']
    """
    if not isinstance(module, Module):
        raise ArgumentError(f"quantize takes a pyburn.nn.Module, got {type(module).__name__}")
    check_mode("quantize", scheme, activations)
    if (activations == "static") != (calibration is not None):
        raise ArgumentError("quantize: static activations need a calibration (from "
                            "pyburn.quant.calibrate), and a calibration is only for "
                            f"activations='static' (got activations={activations!r})")
    if calibration is not None and not isinstance(calibration, Calibration):
        raise ArgumentError(f"quantize: calibration must be what pyburn.quant.calibrate "
                            f"returns, got {type(calibration).__name__}")
    chosen = select(module, targets, skip)
    for name, layer in chosen:
        input_range = None if calibration is None else calibration.range_of(name)
        new = QUANTIZED[type(layer)].from_float(layer, scheme, activations, input_range)
        module = replace(module, name, new)
    return module


def dequantize(module: Module) -> Module:
    """`module` with every quantized layer replaced by the float layer it stands for, its
    weight dequantized (`QuantizedLayer.dequantized`): for a model shipped with int8 or int4
    weights (a quarter or an eighth of the bytes to download) that then runs in float. Works
    in place; returns the module (the new layer when `module` is itself a quantized layer).

    >>> import pyburn
    >>> from pyburn import nn, quant
    >>> model = quant.quantize(nn.Sequential(nn.Linear(4, 2, device="flex")))
    >>> type(quant.dequantize(model)[0]).__name__
    'Linear'
    """
    if not isinstance(module, Module):
        raise ArgumentError(f"dequantize takes a pyburn.nn.Module, got {type(module).__name__}")
    found = [(name, m) for name, m in module.named_modules() if isinstance(m, QuantizedLayer)]
    for name, layer in found:
        module = replace(module, name, layer.dequantized())
    return module
