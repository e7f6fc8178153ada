"""The standard's data types as pyburn has them: which exist, their kinds, promotion, casting
and the limits of each (`finfo`, `iinfo`).

pyburn.array_api has bool, uint8, int32, int64, float32 and float64 of the standard's dtypes,
plus float16 (an extension), and lacks int8, int16, uint16, uint32, uint64 and the complex
types. Where the standard defines a promotion, pyburn's table (pyburn/dtypes.py) gives the
same answer; where it leaves one undefined (bool with a number, an integer with a float), the
namespace follows pyburn's table instead of raising (docs/array_api.md).

>>> from pyburn import array_api as xp
>>> xp.result_type(xp.uint8, xp.int32), xp.isdtype(xp.float32, "real floating")
(pyburn.int32, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._tensor import Tensor
from ..devices import Device
from ..dtypes import (
    ALL_DTYPES,
    DType,
    as_dtype,
    bool_,
    float16,
    float32,
    float64,
    int32,
    int64,
    promote,
    promote_with_scalar,
    uint8,
)
from ..errors import ArgumentError, DTypeError

#: every dtype of the namespace: pyburn's own
DTYPES: tuple[DType, ...] = ALL_DTYPES
#: the standard's kinds, each the set of pyburn's dtypes in it (no complex dtype exists)
KINDS: dict[str, frozenset[DType]] = {
    "bool": frozenset({bool_}),
    "signed integer": frozenset({int32, int64}),
    "unsigned integer": frozenset({uint8}),
    "integral": frozenset({uint8, int32, int64}),
    "real floating": frozenset({float16, float32, float64}),
    "complex floating": frozenset(),
    "numeric": frozenset({uint8, int32, int64, float16, float32, float64}),
}


def isdtype(dtype: DType, kind: DType | str | tuple[DType | str, ...]) -> bool:
    """Whether `dtype` is `kind`: a dtype, a kind's name ("integral", "real floating", ...)
    or a tuple of them (any one)."""
    if not isinstance(dtype, DType):
        raise DTypeError(f"isdtype needs a dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ArgumentError(f"unknown dtype kind {kind!r}; the kinds are {', '.join(KINDS)}")
        return dtype in KINDS[kind]
    return dtype is kind


def result_type(*arrays_and_dtypes: Tensor | DType | bool | int | float) -> DType:
    """The dtype of an operation on all arguments (arrays, dtypes and, as weak scalars,
    Python numbers), by pyburn's promotion table."""
    typed = [a.dtype if isinstance(a, Tensor) else a for a in arrays_and_dtypes
             if isinstance(a, (Tensor, DType))]
    if not typed:
        raise ArgumentError("result_type needs at least one array or dtype")
    dtype = typed[0]
    for other in typed[1:]:
        dtype = promote(dtype, other)
    for scalar in arrays_and_dtypes:
        if not isinstance(scalar, (Tensor, DType)):
            dtype = promote_with_scalar(dtype, scalar)
    return dtype


def can_cast(from_: DType | Tensor, to: DType, /) -> bool:
    """Whether promotion takes `from_` (a dtype, or an array's) to `to`."""
    source = from_.dtype if isinstance(from_, Tensor) else from_
    return promote(source, to) is to


def astype(x: Tensor, dtype: Any, /, *, copy: bool = True, device: Device | str | None = None
           ) -> Tensor:
    """`x` as `dtype` (on `device` if given); handles are immutable, so `copy` changes
    nothing that can be seen."""
    moved = x if device is None else x.to(device)
    return moved.cast(as_dtype(dtype))


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """The limits of a floating-point dtype (`finfo`)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """The limits of an integer dtype (`iinfo`)."""

    bits: int
    max: int
    min: int
    dtype: DType


#: (mantissa bits, largest exponent) of each float dtype (IEEE 754 binary16/32/64)
_FLOAT_FORMATS = {float16: (10, 15), float32: (23, 127), float64: (52, 1023)}


def finfo(type: DType | Tensor, /) -> finfo_object:  # noqa: A002 - the standard's name
    """Machine limits of a floating-point dtype (or an array's)."""
    dtype = type.dtype if isinstance(type, Tensor) else as_dtype(type)
    if dtype not in _FLOAT_FORMATS:
        raise DTypeError(f"finfo needs a floating-point dtype, got {dtype.name}")
    mantissa, top = _FLOAT_FORMATS[dtype]
    largest = (2.0 - 2.0**-mantissa) * 2.0**top
    return finfo_object(8 * dtype.itemsize, 2.0**-mantissa, largest, -largest,
                        2.0 ** (1 - top), dtype)


def iinfo(type: DType | Tensor, /) -> iinfo_object:  # noqa: A002 - the standard's name
    """Machine limits of an integer dtype (or an array's)."""
    dtype = type.dtype if isinstance(type, Tensor) else as_dtype(type)
    if not dtype.is_integer:
        raise DTypeError(f"iinfo needs an integer dtype, got {dtype.name}")
    bits = 8 * dtype.itemsize
    if dtype.kind == "u":
        return iinfo_object(bits, 2**bits - 1, 0, dtype)
    return iinfo_object(bits, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), dtype)

