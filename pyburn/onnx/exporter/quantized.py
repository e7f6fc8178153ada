"""Module exporters for the quantized layers of `pyburn.quant`, as QDQ: the integer weight is
an initializer read through DequantizeLinear, then the float operator (MatMul, Conv) runs.

- Weights: int8/uint8 per tensor or per channel at every opset; int4/uint4 and block-wise
  scales (ONNX's blocked DequantizeLinear) from opset 21. A Linear's weight is stored
  transposed, [in, out], so MatMul takes it as it is (per-channel ``axis=1``, blocks along
  ``axis=0``). What an opset cannot express (int4 below 21, a block-wise convolution: its
  blocks run across the flattened [in * kernel] dim, which no ONNX axis is) is stored as
  the dequantized float weight.
- Activations: "static" layers put QuantizeLinear + DequantizeLinear with the calibrated
  uint8 scale and zero point on their input, "dynamic" ones DynamicQuantizeLinear +
  DequantizeLinear, which computes the scale and zero point as pyburn does.
"""

from __future__ import annotations

import struct
from typing import Any

from ..._tensor import Tensor
from ...quant.layers import QuantizedConv1d, QuantizedConv2d, QuantizedLayer, QuantizedLinear
from ...quant.scheme import ACTIVATIONS, QuantScheme
from .builder import Builder
from .layers import _conv, _optional, floating
from .registry import Plan, exports
from .trace import Event, key_of

#: the first opset whose DequantizeLinear reads 4-bit types and block-wise scales
BLOCKED_OPSET = 21


@exports(QuantizedLinear)
def _linear(m: QuantizedLinear, opset: int, input: Any) -> Plan | None:
    if not floating(input) or input.dtype.name != "float32":
        return None
    return Plan((input,), _emit_linear)


def _emit_linear(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    product = [_input(b, ev), _weight(b, m)]
    if m.bias is None:
        b.node("MatMul", product, outs[0])
    else:
        b.node("Add", [b.node("MatMul", product), b.param(m.bias)], outs[0])


@exports(QuantizedConv1d, QuantizedConv2d)
def _convolution(m: Any, opset: int, input: Any) -> Plan | None:
    plan = _conv(m, opset, input)  # the float convolution's checks and padding
    if plan is None or input.dtype.name != "float32":
        return None
    return Plan(plan.inputs, _emit_conv, plan.settings)


def _emit_conv(b: Builder, ev: Event, outs: list[str]) -> None:
    m = ev.module
    b.node("Conv", [_input(b, ev), _weight(b, m), *_optional(b, m.bias)], outs[0],
           kernel_shape=list(m.kernel_size), strides=list(m.stride), pads=ev.ctx["pads"],
           dilations=list(m.dilation), group=m.groups)


def _input(b: Builder, ev: Event) -> str:
    """The layer's input as the layer sees it: through Q/DQ for quantized activations."""
    m, ref = ev.module, ev.inputs[0]
    assert ref is not None  # the plan's one input, a tensor
    x = b.value(ref)
    if m.activations == "dynamic":
        q, scale, zero = (b.fresh(f"{x}_{part}") for part in ("quantized", "scale",
                                                               "zero_point"))
        b.nodes_out("DynamicQuantizeLinear", [x], [q, scale, zero])
        return b.node("DequantizeLinear", [q, scale, zero], hint=f"{x}_dequantized")
    if m.activations == "static":
        name = _name(b, m)
        scale = b.tensor(m.input_scale, f"{name}input_scale")
        zero = b.raw(ACTIVATIONS.dtype, (), _integers([int(m.input_zero_point.item())],
                                                      ACTIVATIONS),
                     f"{name}input_zero_point")
        q = b.node("QuantizeLinear", [x, scale, zero], hint=f"{x}_quantized")
        return b.node("DequantizeLinear", [q, scale, zero], hint=f"{x}_dequantized")
    return x


def _weight(b: Builder, m: QuantizedLayer) -> str:
    """The float weight the ONNX operator takes (a Linear's transposed, [in, out]), as
    DequantizeLinear of the integer initializer where the opset can express it."""
    qt, scheme, name = m.weight, m.scheme, _name(b, m) + "weight"
    linear = isinstance(m, QuantizedLinear)
    expressible = (scheme.bits == 8 and scheme.granularity != "block") or (
        b.opset >= BLOCKED_OPSET and (linear or scheme.granularity != "block"))
    if not expressible:
        dense = qt.dequantize()
        return b.tensor(dense.mT if linear else dense, name)
    ints = qt.int_repr()
    values = ints.mT if linear else ints.reshape(qt.shape)
    q = b.raw(scheme.dtype, tuple(values.shape), _integers(_flat(values), scheme),
              f"{name}_quantized")
    scale, zero = qt.scale, qt.zero_point
    attrs: dict[str, Any] = {}
    if scheme.granularity != "tensor":
        attrs["axis"] = 1 if linear and scheme.granularity == "channel" else 0
    if scheme.granularity == "block" and linear:  # [N, blocks] -> [blocks, N], as the weight
        scale, zero = scale.mT, None if zero is None else zero.mT
        attrs["block_size"] = scheme.block_size
    inputs = [q, b.tensor(scale, f"{name}_scale")]
    if zero is not None:
        inputs.append(b.raw(scheme.dtype, tuple(zero.shape), _integers(_flat(zero), scheme),
                            f"{name}_zero_point"))
    return b.node("DequantizeLinear", inputs, hint=name, **attrs)


def _name(b: Builder, m: QuantizedLayer) -> str:
    """The layer's qualified name with a trailing dot ("" for the model itself)."""
    origin = b.params.get(key_of(m.weight_data), "weight_data")
    return origin[:-len("weight_data")]


def _flat(t: Tensor) -> list[int]:
    values = t.reshape(-1).tolist()
    return values if isinstance(values, list) else [values]


def _integers(values: list[int], scheme: QuantScheme) -> bytes:
    """`values` in ONNX's raw layout for the scheme's type: a byte each for 8 bits, two to a
    byte (low nibble first) for 4."""
    if scheme.bits == 8:
        return struct.pack(f"<{len(values)}{'b' if scheme.signed else 'B'}", *values)
    nibbles = [v & 0xF for v in values] + [0] * (len(values) % 2)
    return bytes(lo | hi << 4 for lo, hi in zip(nibbles[::2], nibbles[1::2]))
