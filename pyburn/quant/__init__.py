"""Quantization: packed int8/int4 weights, quantized kernels and quantized modules.

- `QuantScheme` and its presets (`INT8_SYMMETRIC_PER_CHANNEL`, `INT4_BLOCK32`, ...): the
  integer type, symmetry and granularity, with onnxruntime's scales and zero points;
- `QTensor`: a tensor as packed int32 words, scales and zero points (`packing`);
- `quantize`: a model's Linear and convolution layers replaced by `QuantizedLinear`,
  `QuantizedConv1d`, `QuantizedConv2d` (weights only, or dynamic or static activations);
- `calibrate`: the input ranges static quantization needs, from a few batches;
- `save` / `load_into`: quantized models in safetensors files, schemes in the metadata;
- `dequantize`: the quantized layers back as float ones (a model downloaded in int8 that
  runs in float).

docs/quantization.md has the formats, the conventions and the limits.
"""

from __future__ import annotations

from .calibration import Calibration, calibrate
from .layers import QuantizedConv1d, QuantizedConv2d, QuantizedLayer, QuantizedLinear
from .module import dequantize, quantize
from .saving import load_into, save
from .scheme import (
    ACTIVATIONS,
    INT4_BLOCK32,
    INT4_BLOCK128,
    INT8_ASYMMETRIC_PER_TENSOR,
    INT8_SYMMETRIC_PER_CHANNEL,
    INT8_SYMMETRIC_PER_TENSOR,
    PRESETS,
    UINT4_BLOCK32,
    UINT8_ASYMMETRIC_PER_CHANNEL,
    UINT8_ASYMMETRIC_PER_TENSOR,
    QuantScheme,
)
from .tensor import QTensor, fake_quantize, fake_quantize_dynamic

__all__ = ["ACTIVATIONS", "INT4_BLOCK128", "INT4_BLOCK32", "INT8_ASYMMETRIC_PER_TENSOR",
           "INT8_SYMMETRIC_PER_CHANNEL", "INT8_SYMMETRIC_PER_TENSOR", "PRESETS", "Calibration",
           "QTensor", "QuantScheme", "QuantizedConv1d", "QuantizedConv2d", "QuantizedLayer",
           "QuantizedLinear", "UINT4_BLOCK32", "UINT8_ASYMMETRIC_PER_CHANNEL",
           "UINT8_ASYMMETRIC_PER_TENSOR", "calibrate", "fake_quantize", "fake_quantize_dynamic",
           "dequantize", "load_into", "quantize", "save"]
