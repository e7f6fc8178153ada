"""Elementwise ONNX operators: math, comparison, logic, bitwise, Clip, Where, Max/Min/Mean/Sum.

Most are one pyburn primitive each and are registered from the two tables below. ONNX
broadcasts like numpy from opset 7 (the legacy ``broadcast``/``axis`` attributes of opsets 1
and 6 are not supported) and gives every operand the same type, so pyburn's promotion never
changes a dtype here; the few ops whose ONNX result differs from pyburn's (integer Div
truncates, Pow keeps the base's type, Mod has two meanings) have their own functions.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import re
from collections.abc import Callable

import pyburn

from ... import Tensor
from ..registry import check, onnx_op

# ONNX name -> (first opset with today's semantics, pyburn function)
_UNARY: dict[str, tuple[int, Callable[[Tensor], Tensor]]] = {
    "Abs": (6, pyburn.abs), "Neg": (6, pyburn.neg), "Sign": (9, pyburn.sign),
    "Floor": (6, pyburn.floor), "Ceil": (6, pyburn.ceil),
    "Round": (11, pyburn.round),  # half to even, as ONNX asks
    "Exp": (6, pyburn.exp), "Log": (6, pyburn.log), "Sqrt": (6, pyburn.sqrt),
    "Reciprocal": (6, pyburn.reciprocal), "Erf": (9, pyburn.erf),
    "Sin": (7, pyburn.sin), "Cos": (7, pyburn.cos), "Tan": (7, pyburn.tan),
    "Asin": (7, pyburn.asin), "Acos": (7, pyburn.acos), "Atan": (7, pyburn.atan),
    "Sinh": (9, pyburn.sinh), "Cosh": (9, pyburn.cosh), "Asinh": (9, pyburn.asinh),
    "Acosh": (9, pyburn.acosh), "Atanh": (9, pyburn.atanh),
    "IsNaN": (9, pyburn.isnan), "Not": (1, pyburn.logical_not),
    "BitwiseNot": (18, pyburn.bitwise_not),
}

_BINARY: dict[str, tuple[int, Callable[[Tensor, Tensor], Tensor]]] = {
    "Add": (7, pyburn.add), "Sub": (7, pyburn.sub), "Mul": (7, pyburn.mul),
    "Equal": (7, pyburn.eq), "Greater": (7, pyburn.gt), "Less": (7, pyburn.lt),
    "GreaterOrEqual": (12, pyburn.ge), "LessOrEqual": (12, pyburn.le),
    "And": (7, pyburn.logical_and), "Or": (7, pyburn.logical_or),
    "Xor": (7, pyburn.logical_xor),
    "BitwiseAnd": (18, pyburn.bitwise_and), "BitwiseOr": (18, pyburn.bitwise_or),
    "BitwiseXor": (18, pyburn.bitwise_xor),
}


def _publish(op: Callable, op_type: str, since: int, doc: str) -> None:
    """Register `op` and make it a module attribute under op_type in snake case (a trailing
    underscore where that is a keyword or builtin), so generated code can name it."""
    name = re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", op_type).lower()
    if keyword.iskeyword(name) or hasattr(builtins, name):
        name += "_"
    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    globals()[name] = onnx_op(op_type, since=since)(op)


def _register_unary(op_type: str, since: int, fn: Callable[[Tensor], Tensor]) -> None:
    def op(x: Tensor) -> Tensor:
        return fn(x)

    _publish(op, op_type, since, f"{op_type}: pyburn.{fn.__name__}(x) elementwise.")


def _register_binary(op_type: str, since: int, fn: Callable[[Tensor, Tensor], Tensor]) -> None:
    def op(a: Tensor, b: Tensor) -> Tensor:
        return fn(a, b)

    _publish(op, op_type, since, f"{op_type}: pyburn.{fn.__name__}(a, b) with numpy "
                                 f"broadcasting.")


for _name, (_since, _fn) in _UNARY.items():
    _register_unary(_name, _since, _fn)
for _name, (_since, _fn) in _BINARY.items():
    _register_binary(_name, _since, _fn)


@onnx_op("Div", since=7)
def div(a: Tensor, b: Tensor) -> Tensor:
    """Div: a / b; integers divide truncating toward zero (C's rule)."""
    if a.dtype.is_floating_point:
        return pyburn.div(a, b)
    return pyburn.div(a, b, rounding_mode="trunc")


@onnx_op("Pow", since=7)
def pow_(a: Tensor, b: Tensor) -> Tensor:
    """Pow: a ** b, in a's dtype (the exponent may have another type from opset 12)."""
    return pyburn.pow(a, b).cast(a.dtype)


@onnx_op("Mod", since=10)
def mod(a: Tensor, b: Tensor, *, fmod: int = 0) -> Tensor:
    """Mod: the remainder with the divisor's sign (fmod=0, integers only) or the dividend's
    (fmod=1, C's fmod)."""
    if fmod:
        return pyburn.fmod(a, b)
    check(not a.dtype.is_floating_point,
          f"Mod of {a.dtype.name} tensors needs fmod=1 (fmod=0 is for integers)")
    return pyburn.remainder(a, b)


@onnx_op("BitShift", since=11)
def bit_shift(x: Tensor, y: Tensor, *, direction: str) -> Tensor:
    """BitShift: x << y or x >> y elementwise. uint16/uint32 are held in wider signed types,
    so a left shift that overflows them keeps the high bits."""
    check(direction in ("LEFT", "RIGHT"), f"direction is LEFT or RIGHT, got {direction!r}")
    return pyburn.left_shift(x, y) if direction == "LEFT" else pyburn.right_shift(x, y)


@onnx_op("IsInf", since=10)
def is_inf(x: Tensor, *, detect_negative: int = 1, detect_positive: int = 1) -> Tensor:
    """IsInf: True where x is an infinity of a detected sign."""
    found = x.isinf()
    if not detect_negative:
        found = found & (x > 0)
    if not detect_positive:
        found = found & (x < 0)
    return found


@onnx_op("Where", since=9)
def where(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """Where: x where condition, else y, all three broadcast together."""
    return pyburn.where(condition, x, y)


def _fold(fn: Callable[[Tensor, Tensor], Tensor], inputs: tuple[Tensor, ...],
          op_type: str) -> Tensor:
    check(len(inputs) > 0, f"{op_type} needs at least one input")
    return functools.reduce(fn, inputs)


@onnx_op("Max", since=6)
def max_(*inputs: Tensor) -> Tensor:
    """Max: the elementwise maximum of all inputs, broadcast together (NaN wins)."""
    return _fold(pyburn.maximum, inputs, "Max")


@onnx_op("Min", since=6)
def min_(*inputs: Tensor) -> Tensor:
    """Min: the elementwise minimum of all inputs, broadcast together (NaN wins)."""
    return _fold(pyburn.minimum, inputs, "Min")


@onnx_op("Sum", since=6)
def sum_(*inputs: Tensor) -> Tensor:
    """Sum: the elementwise sum of all inputs, broadcast together."""
    return _fold(pyburn.add, inputs, "Sum")


@onnx_op("Mean", since=6)
def mean(*inputs: Tensor) -> Tensor:
    """Mean: the elementwise mean of all inputs, broadcast together."""
    total = _fold(pyburn.add, inputs, "Mean")
    return total if len(inputs) == 1 else total / len(inputs)


# float32's largest finite value: Clip-6's default bounds
_FLT_MAX = 3.4028234663852886e38


@onnx_op("Clip", since=6)
def clip_6(x: Tensor, *, min: float = -_FLT_MAX, max: float = _FLT_MAX) -> Tensor:  # noqa: A002
    """Clip (opsets 6-10): x limited to the attributes [min, max]."""
    return pyburn.clamp(x, min, max)


@onnx_op("Clip", since=11)
def clip(x: Tensor, min: Tensor | None = None, max: Tensor | None = None) -> Tensor:  # noqa: A002
    """Clip: x limited to the optional scalar inputs [min, max]; where min > max every value
    becomes max (NaN stays NaN)."""
    if min is None and max is None:
        return x
    return pyburn.clamp(x, _scalar(min), _scalar(max))


def _scalar(bound: Tensor | None) -> Tensor | None:
    """A one-element bound as a 0-d tensor, so that it cannot add a dim to a 0-d x."""
    if bound is None:
        return None
    check(bound.numel() == 1, f"Clip bounds are scalars, got shape {bound.shape}")
    return bound.reshape(())
