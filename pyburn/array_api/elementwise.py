"""The standard's elementwise functions: `SAME` maps each name onto pyburn's op of that name
(or of the name beside it), and the few the op table lacks are composed here from its ops.

pyburn's ops follow pyburn's per-op dtype rules (docs/dtypes.md): on the inputs the
standard defines, the results agree with it; float functions of integer arrays give float32.

>>> from pyburn import array_api as xp
>>> x = xp.asarray([-2.0, 0.5], device="flex")
>>> xp.copysign(xp.hypot(x, 1.5), x).tolist()
[-2.5, 1.5811388492584229]
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .._tensor import Tensor
from ..dtypes import promote, promote_with_scalar
from ..errors import DTypeError
from ..ops import math_ops
from ..ops.creation import full
from ..ops.math_ops import clamp, where

#: standard name -> pyburn op name, for the functions that are pyburn's ops as they are
SAME: dict[str, str] = {
    **{name: name for name in (
        "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
        "bitwise_or", "bitwise_xor", "ceil", "cos", "cosh", "exp", "expm1", "floor",
        "floor_divide", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "logical_and",
        "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "pow", "reciprocal",
        "remainder", "round", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")},
    "bitwise_invert": "bitwise_not", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "divide": "div", "equal": "eq", "greater": "gt",
    "greater_equal": "ge", "less": "lt", "less_equal": "le", "multiply": "mul",
    "negative": "neg", "not_equal": "ne", "square": "square", "subtract": "sub",
}
#: an array, or (the standard allows it for one operand) a Python scalar
Operand = Tensor | bool | int | float
_OPS = {**math_ops.PRIMITIVES, **math_ops.COMPOSITES}
#: the functions of `SAME`, by their standard names
FUNCTIONS: dict[str, Callable[..., Tensor]] = {name: _OPS[op] for name, op in SAME.items()}
_LN10, _LN2 = math.log(10.0), math.log(2.0)


def clip(x: Tensor, /, min: Operand | None = None, max: Operand | None = None) -> Tensor:  # noqa: A002
    """`pyburn.clamp`."""
    return clamp(x, min, max)


def positive(x: Tensor, /) -> Tensor:
    """`x` (unary plus)."""
    return x


def conj(x: Tensor, /) -> Tensor:
    """`x`: every pyburn dtype is real."""
    return x


def real(x: Tensor, /) -> Tensor:
    """`x`: every pyburn dtype is real."""
    return x


def imag(x: Tensor, /) -> Tensor:
    """Zeros: every pyburn dtype is real."""
    return x * 0


def log10(x: Tensor, /) -> Tensor:
    """Base-10 logarithm, as ``log(x) / ln 10``."""
    return math_ops.PRIMITIVES["log"](x) / _LN10


def _arrays(x1: Operand, x2: Operand) -> tuple[Tensor, Tensor]:
    """Both operands as arrays (the standard lets one of them be a Python scalar), the
    scalar in the array's dtype as a binary op would promote it."""
    if isinstance(x1, Tensor) and isinstance(x2, Tensor):
        return x1, x2
    array, scalar = (x1, x2) if isinstance(x1, Tensor) else (x2, x1)
    if not isinstance(array, Tensor):
        raise DTypeError(f"expected an array, got {type(x1).__name__} and {type(x2).__name__}")
    other = full((), scalar, promote_with_scalar(array.dtype, scalar), array.device)
    return (array, other) if array is x1 else (other, array)


def logaddexp(x1: Operand, x2: Operand, /) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow: the larger plus log1p of the rest."""
    a, b = map(_floating, _arrays(x1, x2))
    larger = math_ops.PRIMITIVES["maximum"](a, b)
    rest = math_ops.PRIMITIVES["log1p"](math_ops.PRIMITIVES["exp"](-abs(a - b)))
    # equal infinities give nan in a - b: their sum is the infinity itself
    return where(a == b, a + _LN2, larger + rest)


def _floating(x: Tensor) -> Tensor:
    """`x` as a float array (float32 for integers)."""
    return x if x.is_floating_point() else x.float()


def hypot(x1: Operand, x2: Operand, /) -> Tensor:
    """``sqrt(x1**2 + x2**2)``, scaled by the larger magnitude so that it neither overflows
    nor underflows; an infinite side gives inf, even beside nan."""
    a, b = map(abs, _arrays(x1, x2))
    big = math_ops.PRIMITIVES["maximum"](a, b)
    small = math_ops.PRIMITIVES["minimum"](a, b)
    ratio = where(big == 0, 0.0, small / big)
    out = big * math_ops.PRIMITIVES["sqrt"](1 + ratio * ratio)
    return where(math_ops.PRIMITIVES["isinf"](a) | math_ops.PRIMITIVES["isinf"](b), math.inf,
                 out)


def signbit(x: Tensor, /) -> Tensor:
    """Whether the sign bit is set: negative numbers and -0.0 (whose reciprocal is -inf);
    pyburn cannot read the sign of a NaN, which gives False."""
    if not x.is_floating_point():
        return x < 0
    return (x < 0) | ((x == 0) & (math_ops.PRIMITIVES["reciprocal"](x) < 0))


def copysign(x1: Operand, x2: Operand, /) -> Tensor:
    """The magnitude of `x1` with the sign (`signbit`) of `x2`, in their promoted dtype."""
    x1, x2 = _arrays(x1, x2)
    magnitude = abs(x1).cast(promote(x1.dtype, x2.dtype))
    return where(signbit(x2), -magnitude, magnitude)


#: the composites, by name
COMPOSED: dict[str, Callable[..., Tensor]] = {f.__name__: f for f in (
    clip, positive, conj, real, imag, log10, logaddexp, hypot, signbit, copysign)}
