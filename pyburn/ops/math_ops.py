"""Elementwise ops: dtype rules of the op table, broadcasting, and the composites built on them.

Every primitive in ``pyburn.ops.elementwise`` becomes a function here (``pyburn.exp(x)``) and a
method (``x.exp()``); its docstring comes from the table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor, check_dtype_on, install, result, wrap
from ..dtypes import (
    DType,
    bool_,
    default_float,
    default_int,
    promote,
    promote_with_scalar,
    scalar_dtype,
)
from ..errors import DeviceError, DTypeError
from ..precision import autocast_inputs
from ..shape import Shape, broadcast_shapes
from ..tape import is_grad_enabled
from .elementwise import BINARY, UNARY, ElementwiseOp
from .movement import broadcast_checked

Operand = Tensor | int | float | bool


def _domain_dtypes(op: ElementwiseOp, dtype: DType) -> tuple[DType, DType]:
    """(input dtype, result dtype) of `op` applied to operands promoted to `dtype`."""
    domain = op.domain
    if domain == "float":
        dtype = dtype if dtype.is_floating_point else default_float
        return dtype, dtype
    if domain in ("numeric", "rounding"):
        dtype = default_int if dtype.is_bool else dtype
        return dtype, dtype
    if domain == "compare":
        return dtype, bool_
    if domain == "logical":
        return bool_, bool_
    if dtype.is_floating_point:
        raise DTypeError(f"{op.name} needs integer or bool tensors, got {dtype.name}")
    return dtype, dtype


def operand(value: Operand, dtype: DType, shape: Shape, device) -> Tensor:
    """`value` (a tensor or a Python scalar) as a tensor of `dtype` broadcast to `shape`."""
    if isinstance(value, Tensor):
        t = value if value.dtype is dtype else value.cast(dtype)
        return t if t.shape == shape else broadcast_checked(t, shape)
    return constant(value, dtype, shape, device)


def constant(value: int | float | bool, dtype: DType, shape: Shape, device) -> Tensor:
    """A tensor of `shape` whose every element is `value`: one cached element, broadcast.

    Python numbers in tensor expressions (``x * 0.9``, an optimizer's betas) would otherwise
    cost an allocation, or on a GPU an upload, per use; handles are immutable, so one small
    handle per (backend, dtype, value, rank) serves them all.
    """
    backend = device.backend
    stored = _scalar_as(value, dtype)
    # repr keeps -0.0 apart from 0.0 and makes NaN a usable key
    key = (id(backend), dtype.name, repr(stored) if isinstance(stored, float) else stored,
           len(shape))
    h = _CONSTANTS.get(key)
    if h is None:
        if len(_CONSTANTS) >= _CONSTANTS_MAX:
            _CONSTANTS.clear()
        h = _CONSTANTS[key] = backend.full((1,) * len(shape), stored, dtype)
    if any(s != 1 for s in shape):
        h = backend.expand(h, shape)
    return wrap(h, shape, dtype, device)


_CONSTANTS: dict[tuple, object] = {}
_CONSTANTS_MAX = 4096


def _scalar_as(value: int | float | bool, dtype: DType) -> int | float | bool:
    if dtype.is_bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise DTypeError(f"cannot use {value} with an integer tensor of {dtype.name}")
        return int(value)
    return int(value)


def unary(name: str, x: Tensor) -> Tensor:
    """Apply the unary primitive `name` of the op table to `x`."""
    op = UNARY[name]
    if not isinstance(x, Tensor):
        raise DTypeError(f"{name} expects a tensor, got {type(x).__name__}")
    (x,) = autocast_inputs(name, x)
    if op.on_bool and x.dtype.is_bool:
        name, op = op.on_bool, UNARY[op.on_bool]
    dtype, out = _domain_dtypes(op, x.dtype)
    if op.domain == "rounding" and not dtype.is_floating_point:
        return x if x.dtype is dtype else x.cast(dtype)
    xc = x if x.dtype is dtype else x.cast(dtype)
    return result(x.device.backend.unary(name, xc._h, out), x.shape, out, op.rule, (xc,))


def binary(name: str, a: Operand, b: Operand) -> Tensor:
    """Apply the binary primitive `name` to two tensors, or a tensor and a Python scalar,
    with broadcasting and dtype promotion."""
    op = BINARY[name]
    if isinstance(a, Tensor):
        device = a.device
        if isinstance(b, Tensor):
            if b.device is not device:
                raise DeviceError(f"{name}: tensors are on different devices, "
                                  f"{device.name} and {b.device.name}")
            dtype = promote(a.dtype, b.dtype)
            shape = a.shape if a.shape == b.shape else broadcast_shapes(a.shape, b.shape)
        else:
            dtype = promote_with_scalar(a.dtype, _number(b, name))
            shape = a.shape
    elif isinstance(b, Tensor):
        device = b.device
        dtype = promote_with_scalar(b.dtype, _number(a, name))
        shape = b.shape
    else:
        raise DTypeError(f"{name} needs at least one tensor, got {type(a).__name__} and "
                         f"{type(b).__name__}")
    if op.on_bool and dtype.is_bool:
        name, op = op.on_bool, BINARY[op.on_bool]
    dtype, out = _domain_dtypes(op, dtype)
    check_dtype_on(dtype, device)
    ta = operand(a, dtype, shape, device)
    tb = operand(b, dtype, shape, device)
    return result(device.backend.binary(name, ta._h, tb._h, out), shape, out, op.rule, (ta, tb))


def _number(value: Any, name: str) -> int | float | bool:
    if isinstance(value, (bool, int, float)):
        return value
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()  # numpy scalars
    raise DTypeError(f"{name}: expected a tensor or a Python number, got {type(value).__name__}")


def _make_unary(name: str) -> Callable[[Tensor], Tensor]:
    def fn(x: Tensor) -> Tensor:
        return unary(name, x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = UNARY[name].doc
    return fn


def _make_binary(name: str) -> Callable[[Operand, Operand], Tensor]:
    def fn(a: Operand, b: Operand) -> Tensor:
        return binary(name, a, b)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = BINARY[name].doc
    return fn


PRIMITIVES: dict[str, Callable] = {name: _make_unary(name) for name in UNARY}
PRIMITIVES.update({name: _make_binary(name) for name in BINARY})
globals().update(PRIMITIVES)


# ---- composites -----------------------------------------------------------------------------
def square(x: Tensor) -> Tensor:
    """x * x."""
    return binary("mul", x, x)


def sigmoid_composite(x: Tensor) -> Tensor:
    """The logistic function 1 / (1 + exp(-x)) in primitives (`pyburn.ops.logistic.sigmoid`
    runs it where the backend does not offer the "activation" capability), computed as
    ``where(x >= 0, 1, e) / (1 + e)`` with ``e = exp(-|x|)``, so that neither the value nor
    the gradient meets an overflowing exp; x is floating point."""
    positive = binary("ge", x, 0)
    # -|x| spelled with where, not abs: abs's slope at 0 is 0 and would zero the gradient
    e = unary("exp", unary("neg", where(positive, x, unary("neg", x))))
    return binary("div", where(positive, 1.0, e), binary("add", e, 1.0))


def _floating(x: Tensor) -> Tensor:
    return x if x.dtype.is_floating_point else x.cast(default_float)


def div(a: Operand, b: Operand, *, rounding_mode: str | None = None) -> Tensor:
    """a / b; `rounding_mode` None (true division), "trunc" or "floor" as in PyTorch."""
    if rounding_mode is None:
        return binary("div", a, b)
    if rounding_mode == "floor":
        return binary("floor_divide", a, b)
    if rounding_mode == "trunc":
        q = binary("floor_divide", a, b)
        if q.dtype.is_floating_point:
            return unary("trunc", binary("div", a, b))
        # floor and trunc differ where the division is inexact and the quotient negative
        fix = binary("logical_and", binary("ne", binary("remainder", a, b), 0),
                     binary("lt", q, 0))
        return where(fix, binary("add", q, 1), q)
    raise DTypeError(f"rounding_mode is None, 'trunc' or 'floor', got {rounding_mode!r}")


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    """Elementwise ``a if condition else b`` with broadcasting; condition must be bool."""
    if not isinstance(condition, Tensor) or not condition.dtype.is_bool:
        got = condition.dtype.name if isinstance(condition, Tensor) else type(condition).__name__
        raise DTypeError(f"where needs a bool condition tensor, got {got}")
    device = condition.device
    shapes = [condition.shape]
    dtype: DType | None = None
    for v in (a, b):
        if isinstance(v, Tensor):
            if v.device is not device:
                raise DeviceError(f"where: tensors are on different devices, "
                                  f"{device.name} and {v.device.name}")
            shapes.append(v.shape)
            dtype = v.dtype if dtype is None else promote(dtype, v.dtype)
    if dtype is None:
        dtype = promote(scalar_dtype(a), scalar_dtype(b))
    for v in (a, b):
        if not isinstance(v, Tensor):
            dtype = promote_with_scalar(dtype, _number(v, "where"))
    shape = broadcast_shapes(*shapes)
    tc = operand(condition, bool_, shape, device)
    ta = operand(a, dtype, shape, device)
    tb = operand(b, dtype, shape, device)
    return result(device.backend.where(tc._h, ta._h, tb._h), shape, dtype, "where", (tc, ta, tb))


def clamp(x: Tensor, min: Operand | None = None, max: Operand | None = None) -> Tensor:  # noqa: A002
    """Limit values to [min, max] (either may be None; tensors broadcast; NaN stays NaN).
    The gradient goes to x wherever x is within the bounds, bounds included."""
    if min is None and max is None:
        raise DTypeError("clamp needs min or max")
    if not (x.device.is_autodiff and is_grad_enabled()):
        # nothing records a gradient: the same values, in two passes over x instead of four
        out = x if min is None else binary("maximum", x, min)
        return out if max is None else binary("minimum", out, max)
    out = x
    if min is not None:
        out = where(binary("lt", out, min), min, out)
    if max is not None:
        out = where(binary("gt", out, max), max, out)
    return out


def isclose(a: Tensor, b: Operand, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    """|a - b| <= atol + rtol * |b|, elementwise (infinities must match exactly)."""
    close = binary("le", unary("abs", binary("sub", a, b)),
                   binary("add", binary("mul", unary("abs", _as_float_operand(b)), rtol), atol))
    close = binary("logical_or", close, binary("eq", a, b))
    if equal_nan:
        nan_b = unary("isnan", b) if isinstance(b, Tensor) else math.isnan(float(b))
        close = binary("logical_or", close, binary("logical_and", unary("isnan", a), nan_b))
    return close


def _as_float_operand(b: Operand) -> Operand:
    return _floating(b) if isinstance(b, Tensor) else float(b)


def allclose(a: Tensor, b: Operand, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> bool:
    """True if every element of a is close to b (see `isclose`)."""
    return bool(isclose(a, b, rtol, atol, equal_nan).all().item())


def _scaled(b: Operand, alpha: float | int) -> Operand:
    """alpha * b: a Python number where b is one (``x.add(1.0, alpha=2)``)."""
    if alpha == 1:
        return b
    return binary("mul", b, alpha) if isinstance(b, Tensor) else b * alpha


def sub(a: Operand, b: Operand, *, alpha: float | int = 1) -> Tensor:
    """a - alpha * b."""
    return binary("sub", a, _scaled(b, alpha))


def add(a: Operand, b: Operand, *, alpha: float | int = 1) -> Tensor:
    """a + alpha * b."""
    return binary("add", a, _scaled(b, alpha))


COMPOSITES: dict[str, Callable] = {
    "square": square, "div": div, "true_divide": PRIMITIVES["div"],
    "where": lambda self, condition, other: where(condition, self, other),
    "clamp": clamp, "clip": clamp, "isclose": isclose, "allclose": allclose, "sub": sub,
    "add": add, "multiply": PRIMITIVES["mul"], "subtract": sub, "divide": div,
    "negative": PRIMITIVES["neg"], "absolute": PRIMITIVES["abs"], "arctan2": PRIMITIVES["atan2"],
}


def _operator(fn: Callable, reflected: bool = False) -> Callable:
    """A binary dunder: NotImplemented for operands that are neither tensors nor numbers,
    so Python can try the other operand's method."""

    def method(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, (Tensor, bool, int, float)):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    return method


_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div",
              "floordiv": "floor_divide", "mod": "remainder", "pow": "pow",
              "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
              "lshift": "left_shift", "rshift": "right_shift"}
_DUNDERS: dict[str, Callable] = {}
for _py, _op in _OPERATORS.items():
    _DUNDERS[f"__{_py}__"] = _operator(PRIMITIVES[_op])
    _DUNDERS[f"__r{_py}__"] = _operator(PRIMITIVES[_op], reflected=True)
for _py in ("eq", "ne", "lt", "le", "gt", "ge"):
    _DUNDERS[f"__{_py}__"] = _operator(PRIMITIVES[_py])
_DUNDERS.update({"__neg__": PRIMITIVES["neg"], "__abs__": PRIMITIVES["abs"],
                 "__pos__": lambda self: self, "__invert__": PRIMITIVES["bitwise_not"]})


def fill_(x: Tensor, value: Any) -> Tensor:
    """Set every element to `value`."""
    return x.assign_(constant(value, x.dtype, x.shape, x.device))


def zero_(x: Tensor) -> Tensor:
    """Set every element to 0."""
    return fill_(x, 0)


install(PRIMITIVES)
install(COMPOSITES)
install(_DUNDERS)
install({"fill_": fill_, "zero_": zero_})
