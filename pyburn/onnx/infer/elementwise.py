"""Inference rules of elementwise operators: one for every op whose output is like its
first input, one for every broadcasting op (comparisons and logic give bool), Where and
Cast. Small known values are computed too (shape arithmetic: ``Mul(Shape(x)[0], 4)``),
with symbolic dims surviving the identities (``batch + 0``, ``batch * 1``, ``batch == batch``).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from .. import ir
from .core import (
    Context,
    Ins,
    Known,
    arg,
    broadcast,
    constant,
    dtype_attr,
    index_map,
    numel,
    product,
    rule,
    small,
)


def _numbers(*xs: Any) -> bool:
    return all(isinstance(x, (int, float)) for x in xs)


def _exact(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` on numbers; None (unknown) when an element is symbolic or unknown."""
    return lambda *xs: fn(*xs) if _numbers(*xs) else None


def _add(a: Any, b: Any) -> Any:
    if _numbers(a, b):
        return a + b
    return a if b == 0 else b if a == 0 else None


def _sub(a: Any, b: Any) -> Any:
    if _numbers(a, b):
        return a - b
    return a if b == 0 else 0 if a == b and isinstance(a, str) else None


def _mul(a: Any, b: Any) -> Any:
    if _numbers(a, b):
        return a * b
    return a if b == 1 else b if a == 1 else 0 if 0 in (a, b) else None


def _div(a: Any, b: Any) -> Any:
    if b == 1:
        return a
    if not _numbers(a, b) or b == 0:
        return None
    if isinstance(a, int) and isinstance(b, int):
        quotient = abs(a) // abs(b)  # integer division truncates toward zero in ONNX
        return quotient if (a >= 0) == (b > 0) else -quotient
    return a / b


def _equal(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    if _numbers(a, b) or a == b:
        return a == b
    return None  # a name against a number, or two names: unknown


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *xs: pick(xs) if _numbers(*xs) else xs[0] if len(set(xs)) == 1 else None


_UNARY_VALUES: dict[str, Callable[[Any], Any]] = {
    "Identity": lambda a: a,
    "Neg": _exact(operator.neg),
    "Abs": _exact(abs),
    "Floor": _exact(lambda a: float(math.floor(a)) if math.isfinite(a) else a),
    "Ceil": _exact(lambda a: float(math.ceil(a)) if math.isfinite(a) else a),
    "Not": lambda a: (not a) if isinstance(a, bool) else None,
}

_BINARY_VALUES: dict[str, Callable[..., Any]] = {
    "Add": _add, "Sub": _sub, "Mul": _mul, "Div": _div,
    "Max": _extreme(max), "Min": _extreme(min), "Sum": lambda *xs: _fold(_add, xs),
    "Equal": _equal,
    "Less": _exact(operator.lt), "LessOrEqual": _exact(operator.le),
    "Greater": _exact(operator.gt), "GreaterOrEqual": _exact(operator.ge),
    "And": _exact(lambda a, b: bool(a and b)), "Or": _exact(lambda a, b: bool(a or b)),
    "Xor": _exact(lambda a, b: bool(a) != bool(b)),
}


#: reductions computed on known 1-d values (a flattened size: ReduceProd(Shape(x)[1:]))
REDUCTIONS: dict[str, Callable[[tuple[Any, ...]], Any]] = {
    "ReduceSum": lambda xs: _fold(_add, xs), "ReduceProd": product,
    "ReduceMax": lambda xs: _extreme(max)(*xs), "ReduceMin": lambda xs: _extreme(min)(*xs)}


def _fold(fn: Callable[[Any, Any], Any], xs: tuple[Any, ...]) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    return out


def _mod(node: ir.Node) -> Callable[[Any, Any], Any]:
    if node.attrs.get("fmod", 0):
        return _exact(lambda a, b: type(a)(math.fmod(a, b)) if b else None)
    return _exact(lambda a, b: a % b if b else None)


def values(fn: Callable[..., Any] | None, ins: list[Known], shape: Any) -> tuple | None:
    """`fn` applied element by element to inputs broadcast to `shape`, when all their
    elements (maybe symbolic) are known and the result is small."""
    if fn is None or not small(shape) or any(k.value is None or numel(k.shape) is None
                                             for k in ins):
        return None
    maps = [index_map(k.shape, shape) for k in ins]  # type: ignore[arg-type]
    return tuple(fn(*(k.value[m[j]] for k, m in zip(ins, maps)))  # type: ignore[index]
                 for j in range(numel(shape) or 0))


@rule("Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Ceil", "Celu",
      "Clip", "Cos", "Cosh", "CumProd", "CumSum", "Elu", "Erf", "Exp", "Floor", "Gelu",
      "GroupNormalization", "HardSigmoid", "HardSwish", "Hardmax", "Identity",
      "InstanceNormalization", "LRN", "LeakyRelu", "Log", "LogSoftmax", "LpNormalization",
      "MeanVarianceNormalization", "Mish", "Neg", "Not", "PRelu", "RMSNormalization",
      "Reciprocal", "Relu", "ReverseSequence", "RotaryEmbedding", "Round", "Scatter",
      "ScatterElements", "ScatterND", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh",
      "Softmax", "Softplus", "Softsign", "Sqrt", "Swish", "Tan", "Tanh", "TensorScatter",
      "ThresholdedRelu", "Trilu")
def like_input(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Ops whose output has their first input's dtype and shape (PRelu's slope, Clip's
    bounds, the scatter updates and the normalisations' scales only broadcast into it)."""
    x = ins[0] or Known()
    fn = _UNARY_VALUES.get(node.op_type)
    return Known(x.dtype, x.shape, values(fn, [x], x.shape) if fn else None, x.kind)


@rule("IsNaN", "IsInf")
def test_elements(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Elementwise tests: bool of the input's shape."""
    return Known("bool", (ins[0] or Known()).shape)


@rule("Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "BitwiseAnd", "BitwiseOr",
      "BitwiseXor", "Max", "Min", "Sum", "Mean", "Equal", "Less", "LessOrEqual", "Greater",
      "GreaterOrEqual", "And", "Or", "Xor")
def broadcasting(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Multidirectional broadcasting: the broadcast shape, bool for comparisons and logic,
    else the first input's dtype (Pow's base's)."""
    given = [k or Known() for k in ins]
    shape = broadcast(*(k.shape for k in given))
    fn = _mod(node) if node.op_type == "Mod" else _BINARY_VALUES.get(node.op_type)
    if node.op_type in ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And",
                        "Or", "Xor"):
        dtype: str | None = "bool"
    else:
        dtype = given[0].dtype or (None if node.op_type == "Pow" else
                                   next((k.dtype for k in given if k.dtype), None))
    return Known(dtype, shape, values(fn, given, shape))


@rule("Where")
def where(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Where(cond, x, y): the broadcast of all three, x's dtype."""
    given = [k or Known() for k in ins]
    shape = broadcast(*(k.shape for k in given))

    def pick(c: Any, x: Any, y: Any) -> Any:
        return x if c is True else y if c is False else x if x == y else None

    return Known(given[1].dtype or given[2].dtype, shape, values(pick, given, shape))


@rule("Cast", "CastLike")
def cast(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Cast to `to` (CastLike: to the second input's dtype); elements converted too."""
    x = ins[0] or Known()
    if node.op_type == "Cast":
        dtype = dtype_attr(node, "to", None)
    else:
        dtype = (arg(ins, 1) or Known()).dtype
    convert = _converter(dtype)
    value = None
    if x.value is not None and convert is not None:
        value = tuple(convert(v) for v in x.value)
    return Known(dtype, x.shape, value)


def _converter(dtype: str | None) -> Callable[[Any], Any] | None:
    """How one element converts to `dtype` (symbolic dims survive numeric casts)."""
    if dtype == "bool":
        return lambda v: bool(v) if _numbers(v) else None
    if dtype is None or not (dtype.startswith(("int", "uint", "float"))):
        return None
    if dtype.startswith("float"):
        return lambda v: float(v) if _numbers(v) else v
    return lambda v: (int(v) if not isinstance(v, float) or math.isfinite(v) else None) \
        if _numbers(v) else v


@rule("Constant")
def constant_node(node: ir.Node, ins: Ins, ctx: Context) -> Known | None:
    """Constant: the attribute's type, shape and (small) value."""
    for key, value in node.attrs.items():
        if isinstance(value, ir.TensorData):
            return Known(value.dtype, tuple(value.dims), constant(value))
        if key in ("value_int", "value_float"):
            kind = "int64" if key == "value_int" else "float32"
            return Known(kind, (), (int(value) if kind == "int64" else float(value),))
        if key in ("value_ints", "value_floats"):
            kind = "int64" if key == "value_ints" else "float32"
            items = tuple(int(v) if kind == "int64" else float(v) for v in value)
            return Known(kind, (len(items),), items)
        if key in ("value_string", "value_strings"):
            return Known("string", () if key == "value_string" else (len(value),))
    return None


@rule("RandomNormalLike", "RandomUniformLike", "Bernoulli", "EyeLike")
def random_like(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Ops that make a tensor of their input's shape, of dtype `dtype` (else the input's)."""
    x = ins[0] or Known()
    return Known(dtype_attr(node, "dtype", x.dtype), x.shape)
