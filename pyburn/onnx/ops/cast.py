"""Cast and CastLike, and the one table of how pyburn holds each ONNX element type.

pyburn stores seven dtypes. An ONNX type it lacks is held in a wider one, by value: int8,
int16 and uint16 in int32; uint32 and uint64 in int64 (int32 where the device has no int64);
bfloat16, the float8 and float4 formats in float32; the 4- and 2-bit integers in int32.
A cast *to* such a type therefore rounds or wraps the value to what the narrow type can hold
and keeps it in the wide dtype, so that the result equals the narrow type's value exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyburn

from ... import Tensor, float16, float32, float64, int32, int64, uint8, where
from ...dtypes import DType, bool_
from ...errors import ArgumentError
from ..ir import DTYPE_NAMES
from ..registry import check, index_dtype, onnx_op


@dataclass(frozen=True)
class IntRange:
    """An integer type held in a wider one: values wrap modulo 2**bits into its range."""

    bits: int
    signed: bool


@dataclass(frozen=True)
class FloatFormat:
    """A floating-point format held in float32: `mantissa` stored bits, smallest normal
    exponent `min_exp`, largest finite value `max`, and what an overflow gives: "attr" (the
    Cast's `saturate` chooses the largest value or inf/NaN), "saturate" (always the largest
    value) or "inf" (IEEE: infinity)."""

    mantissa: int
    min_exp: int
    max: float
    has_inf: bool
    overflow: str


# name (as in ir.DTYPE_NAMES) -> (the pyburn dtype that holds it, how a cast narrows to it);
# int64 means index_dtype(device): int32 on a device without int64
_NARROW: dict[str, tuple[DType, IntRange | FloatFormat | str | None]] = {
    "bool": (bool_, None), "uint8": (uint8, None), "int32": (int32, None),
    "int64": (int64, None), "float16": (float16, None), "float32": (float32, None),
    "float64": (float64, None),
    "int8": (int32, IntRange(8, True)), "int16": (int32, IntRange(16, True)),
    "uint16": (int32, IntRange(16, False)), "int4": (int32, IntRange(4, True)),
    "uint4": (int32, IntRange(4, False)), "int2": (int32, IntRange(2, True)),
    "uint2": (int32, IntRange(2, False)), "uint32": (int64, IntRange(32, False)),
    "uint64": (int64, None),
    "bfloat16": (float32, FloatFormat(7, -126, 3.3895313892515355e38, True, "inf")),
    "float8e4m3fn": (float32, FloatFormat(3, -6, 448.0, False, "attr")),
    "float8e4m3fnuz": (float32, FloatFormat(3, -7, 240.0, False, "attr")),
    "float8e5m2": (float32, FloatFormat(2, -14, 57344.0, True, "attr")),
    "float8e5m2fnuz": (float32, FloatFormat(2, -15, 57344.0, False, "attr")),
    "float4e2m1": (float32, FloatFormat(1, 0, 6.0, False, "saturate")),
    "float8e8m0": (float32, "e8m0"),
}


def held(name: str, device: Any) -> DType:
    """The pyburn dtype that holds ONNX type `name` (a name of ``ir.DTYPE_NAMES``) on
    `device`."""
    if name not in _NARROW:
        raise ArgumentError(f"pyburn cannot hold ONNX {name} tensors (it holds numbers: "
                            f"{', '.join(sorted(_NARROW))})")
    dtype = _NARROW[name][0]
    return index_dtype(device) if dtype is int64 else dtype


def dtype_name(code: int | str) -> str:
    """The name of ONNX element type `code` (a TensorProto.DataType number or a name)."""
    if isinstance(code, str):
        name = code.lower()
        return {"float": "float32", "double": "float64"}.get(name, name)
    name = DTYPE_NAMES.get(code)
    check(name is not None, f"unknown ONNX element type code {code}")
    return name


def held_code(code: int | str, device: Any) -> DType:
    """The pyburn dtype that holds ONNX element type `code` on `device`."""
    return held(dtype_name(code), device)


@onnx_op("Cast", since=1)
def cast(x: Tensor, *, to: int | str, saturate: int = 1, round_mode: str = "up") -> Tensor:
    """Cast: x converted to ONNX type `to` (a code, or before opset 6 a name such as
    "FLOAT"); narrow types are rounded (floats, to nearest even) or wrapped (integers) to
    their values and held in a wider dtype."""
    return cast_to(x, dtype_name(to), saturate=bool(saturate), round_mode=round_mode)


@onnx_op("CastLike", since=15)
def cast_like(x: Tensor, target_type: Tensor, *, saturate: int = 1,
              round_mode: str = "up") -> Tensor:
    """CastLike: x converted to the dtype of `target_type` (pyburn sees the held dtype, so a
    target of a narrow type such as float8 casts to the dtype that holds it, unrounded)."""
    return x.cast(target_type.dtype)


def cast_to(x: Tensor, name: str, *, saturate: bool = True, round_mode: str = "up") -> Tensor:
    """x as ONNX type `name`, held in pyburn's dtype for it on x's device."""
    dtype = held(name, x.device)
    narrow = _NARROW[name][1]
    if isinstance(narrow, IntRange):
        out = x.cast(dtype)
        # uint32 held in int32 (a device without int64) keeps its bits as they are
        return _wrap_int(out, narrow) if narrow.bits < 8 * dtype.itemsize else out
    if narrow == "e8m0":
        # the format is defined on float32's exponent field, so a float64 goes through it
        return _to_e8m0(x.cast(float32), saturate, round_mode)
    if isinstance(narrow, FloatFormat):
        return _to_format(_work(x), narrow, saturate).cast(float32)
    return x.cast(dtype)


def _work(x: Tensor) -> Tensor:
    """x in the float dtype the rounding is computed in: float64 stays (a second rounding
    through float32 could change the result), anything else becomes float32."""
    return x if x.dtype is float64 else x.cast(float32)


def _wrap_int(x: Tensor, kind: IntRange) -> Tensor:
    """Integer x wrapped modulo 2**bits into the range of `kind`."""
    low = x & ((1 << kind.bits) - 1)
    if not kind.signed:
        return low
    half = 1 << (kind.bits - 1)
    return where(low >= half, low - (1 << kind.bits), low)


def _pow2(k: Tensor) -> Tensor:
    """2 ** k for integral float k, exactly (numpy's float32 exp2 misses 2**127 by an ulp;
    its power does not)."""
    return pyburn.pow(2.0, k)


def _exponent(a: Tensor) -> Tensor:
    """floor(log2(a)) for positive finite a, exactly: log2 can round to the next integer
    when a lies within an ulp of a power of two, so one step each way corrects it."""
    e = a.log2().floor()
    e = where(_pow2(e) > a, e - 1, e)
    return where(_pow2(e + 1) <= a, e + 1, e)


def _to_format(x: Tensor, fmt: FloatFormat, saturate: bool) -> Tensor:
    """x rounded to the nearest value of `fmt` (ties to even), with its overflow rule."""
    a = x.abs()
    finite = a.isfinite()
    safe = where(finite & (a > 0), a, 1.0)
    # every value of the binade [2**e, 2**(e+1)) is a multiple of 2**(e - mantissa); below
    # the smallest normal exponent the grid stays that of min_exp (subnormals)
    quantum = _pow2(_exponent(safe).clamp(min=fmt.min_exp) - fmt.mantissa)
    # a device that flushes float32 subnormals (a GPU) has a quantum of 0 near bfloat16's
    # smallest numbers; it cannot hold finer values than bfloat16 there, so x stays
    rounded = where(finite & (quantum > 0), (a / quantum).round() * quantum, a)
    if fmt.overflow == "inf":
        over = math.inf
    elif fmt.overflow == "saturate" or saturate:
        over = fmt.max
    else:
        over = math.inf if fmt.has_inf else math.nan
    out = where(rounded > fmt.max, over, rounded)
    if fmt.overflow == "saturate":
        out = where(out.isnan(), 0.0, out)  # a format without NaN (float4e2m1) gives 0
    return where(x < 0, -out, out)


def _to_e8m0(x: Tensor, saturate: bool, round_mode: str) -> Tensor:
    """|x| as float8e8m0, a power of two 2**k with -127 <= k <= 127 (NaN for NaN, inf and,
    without `saturate`, overflow), rounded as `round_mode` says ("up", "down", "nearest")."""
    check(round_mode in ("up", "down", "nearest"),
          f"round_mode is 'up', 'down' or 'nearest', got {round_mode!r}")
    a = x.abs()
    finite = a.isfinite()
    normal = a >= 2.0**-126
    e = _exponent(where(normal & finite, a, 1.0))
    low = _pow2(e)
    # numbers below the smallest normal float32 have exponent field 0: 2**-127
    k = where(normal, e, -127.0)
    if round_mode == "up":
        k = k + where(normal, a > low, a > 0).cast(float32)
    elif round_mode == "nearest":
        k = k + where(normal, a >= low * 1.5, a > 2.0**-127).cast(float32)
    overflow = 2.0**127 if saturate else math.nan
    out = where(k > 127, overflow, _pow2(k))
    return where(finite, out, math.nan)

