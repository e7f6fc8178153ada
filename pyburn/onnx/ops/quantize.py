"""Linear (de)quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
QLinearMatMul and MatMulInteger.

pyburn holds ONNX's narrow integer and float types in wider dtypes (`cast.held`: int8 in
int32, float8 in float32, ...), by value; a quantized result therefore keeps the value of
its ONNX type. The type itself (which picks the saturation range or float format) comes from
`output_dtype` (the loader should pass the zero point's declared type there: pyburn's dtype
alone cannot tell int8 from int16), else from the zero point's pyburn dtype (uint8; any
other integer is taken as int8, a float as float8e4m3fn), else uint8.
"""

from __future__ import annotations

from typing import Any

from ... import Tensor, float64, uint8, where
from ...dtypes import DType, as_dtype
from ...quant import kernels as quant_kernels
from ..ir import DTYPE_NAMES
from ..registry import check, onnx_op
from .cast import cast_to, held

#: the integer quantized types and their (lowest, highest) values
INTEGER_RANGES = {
    "uint8": (0, 255), "int8": (-128, 127), "uint16": (0, 65535), "int16": (-32768, 32767),
    "uint4": (0, 15), "int4": (-8, 7), "uint2": (0, 3), "int2": (-2, 1),
}
#: the small float formats a quantized result may have (rounded by `cast.cast_to`)
FLOAT_FORMATS = ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1")
_EXTRA_CODES = {25: "uint2", 26: "int2"}  # ONNX codes newer than ir.DTYPE_NAMES
#: the precisions QuantizeLinear may divide in (bfloat16 is held as float32)
_FLOAT_NAMES = {1: "float32", 10: "float16", 11: "float64", 16: "float32"}


def _type_name(code: int, op: str) -> str:
    name = DTYPE_NAMES.get(code) or _EXTRA_CODES.get(code)
    check(name in INTEGER_RANGES or name in FLOAT_FORMATS,
          f"{op}: output_dtype {code} ({name}) is not a quantized type")
    return name


def quantized_type(zero_point: Tensor | None, output_dtype: int, op: str) -> str:
    """The ONNX name of the quantized result's type (see the module docstring)."""
    if output_dtype:
        return _type_name(output_dtype, op)
    if zero_point is None or zero_point.dtype is uint8:
        return "uint8"
    return "int8" if not zero_point.dtype.is_floating_point else "float8e4m3fn"


def zero_point_range(zero_point: Tensor | None, like: Tensor) -> tuple[int, int, DType]:
    """(lowest, highest, pyburn dtype) of the 8-bit type of a QLinear* operator's output:
    its zero point's type, else the quantized input `like`'s type (uint8 or int8)."""
    source = zero_point if zero_point is not None else like
    name = "uint8" if source.dtype is uint8 else "int8"
    low, high = INTEGER_RANGES[name]
    return low, high, held(name, like.device)


def requantize(acc: Tensor, multiplier: Tensor, zero_point: Tensor | None, low: int, high: int,
               dtype: DType) -> Tensor:
    """``saturate(round_half_even(acc * multiplier) + zero_point)`` cast to `dtype`; the
    product is taken in float64 where the device has it, so that ties round as in the
    spec's reference."""
    wide = float64 if float64 in acc.device.backend.dtypes else multiplier.dtype
    y = (acc.cast(wide) * multiplier.cast(wide)).round()
    if zero_point is not None:
        y = y + zero_point.cast(y.dtype)
    return y.clamp(low, high).cast(dtype)


def broadcast_param(param: Tensor, shape: tuple[int, ...], axis: int, block_size: int,
                    op: str) -> Tensor:
    """A scale or zero point shaped to broadcast against an input of `shape`: a scalar, one
    value per index of `axis`, or (blocked) one value per `block_size` indices of `axis`."""
    if param.numel() == 1 and (param.ndim <= 1):
        return param.reshape(())
    rank = len(shape)
    check(-rank <= axis < rank, f"{op}: axis {axis} is out of range for rank {rank}")
    axis %= rank
    if not block_size:
        check(param.ndim == 1 and param.shape[0] == shape[axis],
              f"{op}: a per-axis scale/zero point must be 1-d of size {shape[axis]} (axis "
              f"{axis} of input shape {shape}), got shape {param.shape}")
        view = [1] * rank
        view[axis] = shape[axis]
        return param.reshape(tuple(view))
    blocks = -(-shape[axis] // block_size)
    expected = shape[:axis] + (blocks,) + shape[axis + 1:]
    check(block_size > 0 and param.shape == expected,
          f"{op}: a blocked scale/zero point for input shape {shape}, axis {axis} and "
          f"block_size {block_size} must have shape {expected}, got {param.shape}")
    wide = param.unsqueeze(axis + 1).expand(
        param.shape[:axis + 1] + (block_size,) + param.shape[axis + 1:])
    wide = wide.reshape(param.shape[:axis] + (blocks * block_size,) + param.shape[axis + 1:])
    return wide.narrow(axis, 0, shape[axis])


@onnx_op("QuantizeLinear", since=10)
def quantize_linear(x: Tensor, y_scale: Tensor, y_zero_point: Tensor | None = None, *,
                    axis: int = 1, block_size: int = 0, output_dtype: int = 0,
                    precision: int = 0, saturate: int = 1) -> Tensor:
    """QuantizeLinear: ``saturate(round_half_even(x / y_scale) + y_zero_point)`` with a
    per-tensor, per-axis or blocked scale; float8/float4 targets round to that format (the
    zero point is ignored for float8, added for float4)."""
    op = "QuantizeLinear"
    name = quantized_type(y_zero_point, output_dtype, op)
    compute = x.dtype
    if precision:
        compute = as_dtype(_FLOAT_NAMES.get(precision, "float32"))
    scale = broadcast_param(y_scale, x.shape, axis, block_size, op).cast(compute)
    scaled = x.cast(compute) / scale
    zero = None if y_zero_point is None else broadcast_param(
        y_zero_point, x.shape, axis, block_size, op)
    if name in FLOAT_FORMATS:
        if name == "float4e2m1" and zero is not None:
            scaled = scaled + zero.cast(scaled.dtype)
        return cast_to(scaled, name, saturate=bool(saturate))
    low, high = INTEGER_RANGES[name]
    y = scaled.round()
    if zero is not None:
        y = y + zero.cast(y.dtype)
    return y.clamp(low, high).cast(held(name, x.device))


@onnx_op("DequantizeLinear", since=10)
def dequantize_linear(x: Tensor, x_scale: Tensor, x_zero_point: Tensor | None = None, *,
                      axis: int = 1, block_size: int = 0, output_dtype: int = 0) -> Tensor:
    """DequantizeLinear: ``(x - x_zero_point) * x_scale`` with a per-tensor, per-axis or
    blocked scale, in the scale's dtype (or `output_dtype`)."""
    op = "DequantizeLinear"
    scale = broadcast_param(x_scale, x.shape, axis, block_size, op)
    if x.dtype.is_floating_point:
        centered = x.cast(scale.dtype)
        if x_zero_point is not None:
            centered = centered - broadcast_param(x_zero_point, x.shape, axis, block_size,
                                                  op).cast(scale.dtype)
    else:
        centered = x.int()
        if x_zero_point is not None:
            centered = centered - broadcast_param(x_zero_point, x.shape, axis, block_size,
                                                  op).int()
    y = centered.cast(scale.dtype) * scale
    if output_dtype:
        y = y.cast(_FLOAT_NAMES.get(output_dtype, "float32"))
    return y


@onnx_op("DynamicQuantizeLinear", since=11)
def dynamic_quantize_linear(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """DynamicQuantizeLinear: uint8 quantization of x over the range [min(x, 0),
    max(x, 0)]: (y, y_scale, y_zero_point)."""
    x = x.float() if not x.dtype.is_floating_point else x
    low = x.amin().clamp(max=0.0)
    high = x.amax().clamp(min=0.0)
    scale = where(high == low, 1.0, high - low) / 255.0  # an all-zero x gets range 1
    zero = (-low / scale).clamp(0, 255).round()
    y = ((x / scale).round() + zero).clamp(0, 255)
    return y.cast(uint8), scale, zero.cast(uint8)


@onnx_op("MatMulInteger", since=10)
def matmul_integer(a: Tensor, b: Tensor, a_zero_point: Tensor | None = None,
                   b_zero_point: Tensor | None = None, *,
                   memo: dict[str, Any] | None = None) -> Tensor:
    """MatMulInteger: ``(a - a_zero_point) @ (b - b_zero_point)`` in int32; a's zero point
    is a scalar or one per row of a, b's a scalar or one per column of b."""
    return _integer_product(a, a_zero_point, b, b_zero_point, memo)


def _integer_product(a: Tensor, a_zero_point: Tensor | None, b: Tensor,
                     b_zero_point: Tensor | None, memo: dict[str, Any] | None) -> Tensor:
    """``(a - a_zero_point) @ (b - b_zero_point)`` in int32. Where b is a matrix whose type
    its zero point gives (uint8, else int8), on `pyburn.quant.kernels.matmul_integer` (b
    packed once while the node's `memo` holds it, the device's integer kernel: on cpu 30x
    the int32 product of a 64x1024 by 1024x1024); otherwise as a product of int32 tensors."""
    if b.ndim == 2 and b_zero_point is not None and \
            (a_zero_point is None or a_zero_point.numel() == 1 or a.ndim == 2):
        return quant_kernels.matmul_integer(a, a_zero_point, b, b_zero_point,
                                            signed=b_zero_point.dtype is not uint8, memo=memo)
    return _centered_rows(a, a_zero_point) @ _centered_cols(b, b_zero_point)


def _centered_rows(a: Tensor, zero_point: Tensor | None) -> Tensor:
    a = a.int()
    if zero_point is None:
        return a
    if zero_point.numel() == 1:
        return a - zero_point.reshape(()).int()
    return a - zero_point.int().reshape(zero_point.shape + (1,))


def _centered_cols(b: Tensor, zero_point: Tensor | None) -> Tensor:
    b = b.int()
    if zero_point is None:
        return b
    if zero_point.numel() == 1:
        return b - zero_point.reshape(()).int()
    return b - zero_point.int()


@onnx_op("QLinearMatMul", since=10)
def qlinear_matmul(a: Tensor, a_scale: Tensor, a_zero_point: Tensor, b: Tensor,
                   b_scale: Tensor, b_zero_point: Tensor, y_scale: Tensor,
                   y_zero_point: Tensor, *, memo: dict[str, Any] | None = None) -> Tensor:
    """QLinearMatMul: the int32 product of the centered inputs, rescaled by
    a_scale * b_scale / y_scale, rounded half to even, shifted by y_zero_point and
    saturated to its type (scales and zero points per tensor, per row of a or per column
    of b)."""
    acc = _integer_product(a, a_zero_point, b, b_zero_point, memo)
    multiplier = _row_param(a_scale) * _col_param(b_scale) / y_scale.reshape(())
    low, high, dtype = zero_point_range(y_zero_point, a)
    return requantize(acc, multiplier.float() if not multiplier.dtype.is_floating_point
                      else multiplier, y_zero_point.reshape(()), low, high, dtype)


def _row_param(p: Tensor) -> Tensor:
    return p.reshape(()) if p.numel() == 1 else p.reshape(p.shape + (1,))


def _col_param(p: Tensor) -> Tensor:
    return p.reshape(()) if p.numel() == 1 else p

