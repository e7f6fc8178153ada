"""Elementwise ops: unary math, arithmetic, comparisons, logic, bits, clamp and where."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

import pytest

import pyburn

from .helpers import FLOAT_DTYPES, PERMISSIVE, STRICT, VIEWS, np, pb


@dataclass(frozen=True)
class Unary:
    """A float unary op, its float64 numpy reference and an input range inside its domain."""

    name: str
    ref: Callable
    low: float = -2.0
    high: float = 2.0

    def __str__(self) -> str:
        return self.name


def _erf(a):
    return np.vectorize(math.erf, otypes=[np.float64])(a)


UNARY_FLOAT = [
    Unary("exp", lambda a: np.exp(a), -4, 4),
    Unary("exp2", lambda a: np.exp2(a), -4, 4),
    Unary("expm1", lambda a: np.expm1(a), -3, 3),
    Unary("log", lambda a: np.log(a), 0.05, 8),
    Unary("log2", lambda a: np.log2(a), 0.05, 8),
    Unary("log1p", lambda a: np.log1p(a), -0.9, 4),
    Unary("sqrt", lambda a: np.sqrt(a), 0, 8),
    Unary("rsqrt", lambda a: 1 / np.sqrt(a), 0.05, 8),
    Unary("reciprocal", lambda a: 1 / a, 0.25, 4),
    Unary("sigmoid", lambda a: 1 / (1 + np.exp(-a)), -6, 6),
    Unary("relu", lambda a: np.maximum(a, 0.0), -4, 4),
    Unary("sin", lambda a: np.sin(a), -4, 4),
    Unary("cos", lambda a: np.cos(a), -4, 4),
    Unary("tan", lambda a: np.tan(a), -1.4, 1.4),
    Unary("asin", lambda a: np.arcsin(a), -0.99, 0.99),
    Unary("acos", lambda a: np.arccos(a), -0.99, 0.99),
    Unary("atan", lambda a: np.arctan(a), -4, 4),
    Unary("sinh", lambda a: np.sinh(a), -3, 3),
    Unary("cosh", lambda a: np.cosh(a), -3, 3),
    Unary("tanh", lambda a: np.tanh(a), -3, 3),
    Unary("asinh", lambda a: np.arcsinh(a), -4, 4),
    Unary("acosh", lambda a: np.arccosh(a), 1, 6),
    Unary("atanh", lambda a: np.arctanh(a), -0.95, 0.95),
    Unary("erf", _erf, -3, 3),
]

# What each float op gives at the edges of its domain, for float32 and float64 (float16
# would overflow on some of these where float64 does not).
SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -3.0, 20.0]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", UNARY_FLOAT, ids=str)
def test_unary_float(check, case, dtype):
    check.require(dtype)
    x = check.floats((3, 5), dtype, case.low, case.high)
    check.op(lambda t: getattr(pyburn, case.name)(t), x, ref=case.ref)
    check.op(lambda t: getattr(t, case.name)(), x, ref=case.ref)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", UNARY_FLOAT, ids=str)
def test_unary_float_special_values(check, case, dtype):
    check.require(dtype)
    check.op(lambda t: getattr(t, case.name)(), check.tensor(SPECIALS, dtype), ref=case.ref)


# Far from zero, where GPU builtins promise nothing (WGSL: sin and cos to 2^-11 on [-pi, pi]
# only): the argument reduction must hold float32 accuracy up to the largest float32.
WIDE = [1e-3, -0.7, 3.0, 20.0, -100.5, 1234.5, -3e4, 65535.9, 65536.0, 1e5, -7.7e6, 1e10,
        -3e20, 1e30, 3.4e38]


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_of_wide_arguments(check, name):
    ref = next(c.ref for c in UNARY_FLOAT if c.name == name)
    check.op(lambda t: getattr(t, name)(), check.tensor(WIDE, "float32"), ref=ref)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "log1p", "sigmoid", "reciprocal"])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_float_op_on_integers_gives_float32(check, name, dtype):
    ref = next(c.ref for c in UNARY_FLOAT if c.name == name)
    x = check.values((2, 4), dtype) if dtype != "int32" else check.ints((2, 4), low=1, high=9)
    check.op(lambda t: getattr(t, name)(), x, ref=lambda a: ref(a.astype(np.float64)),
             dtype="float32")


NUMERIC_UNARY = {
    "neg": (lambda t: t.neg(), lambda a: -a),
    "neg_fn": (pb("neg"), lambda a: -a),
    "neg_operator": (lambda t: -t, lambda a: -a),
    "abs": (lambda t: t.abs(), np.abs),
    "abs_fn": (pb("abs"), np.abs),
    "abs_builtin": (abs, np.abs),
    "sign": (lambda t: t.sign(), np.sign),
    "sign_fn": (pb("sign"), np.sign),
    "square": (lambda t: t.square(), np.square),
    "square_fn": (pb("square"), np.square),
}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("name", NUMERIC_UNARY)
def test_numeric_unary_keeps_dtype(check, name, dtype):
    check.require(dtype)
    fn, ref = NUMERIC_UNARY[name]
    check.op(fn, check.values((4, 3), dtype), ref=ref, tol=STRICT)


def test_sign_of_special_values(check):
    check.op(lambda t: t.sign(), check.tensor([math.nan, -math.inf, -0.0, 0.0, 3.5, math.inf]),
             ref=np.sign)


ROUNDING = {"floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc}
HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -1.7, 1.2, -0.2, 1e7 + 0.5, math.nan, math.inf,
          -math.inf, -0.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ROUNDING)
def test_rounding(check, name, dtype):
    """round is half-to-even, like numpy's rint."""
    check.require(dtype)
    check.op(lambda t: getattr(t, name)(), check.tensor(HALVES, dtype), ref=ROUNDING[name],
             tol=STRICT)
    check.op(lambda t: getattr(pyburn, name)(t), check.floats((3, 4), dtype, -5, 5),
             ref=ROUNDING[name], tol=STRICT)


@pytest.mark.parametrize("name", ROUNDING)
def test_rounding_integers_is_identity(check, name):
    check.op(lambda t: getattr(t, name)(), check.ints((5,)), ref=lambda a: a)


# ---- binary arithmetic -------------------------------------------------------------------

@dataclass(frozen=True)
class Binary:
    """A binary op: pyburn call, numpy reference, and input ranges that keep it defined."""

    name: str
    fn: Callable
    ref: Callable
    a_range: tuple[float, float] = (-3.0, 3.0)
    b_range: tuple[float, float] = (-3.0, 3.0)

    def __str__(self) -> str:
        return self.name


def _away_from_zero(a):
    return np.where(np.abs(a) < 0.25, 0.25, a)


BINARY_FLOAT = [
    Binary("add", operator.add, operator.add),
    Binary("sub", operator.sub, operator.sub),
    Binary("mul", operator.mul, operator.mul),
    Binary("truediv", operator.truediv, operator.truediv, b_range=(0.25, 3.0)),
    Binary("floordiv", operator.floordiv, np.floor_divide, b_range=(0.25, 3.0)),
    Binary("mod", operator.mod, np.remainder, b_range=(-3.0, -0.25)),
    Binary("pow", operator.pow, np.power, a_range=(0.25, 3.0)),
    Binary("pow_fn", pb("pow"), np.power, a_range=(0.25, 3.0)),
    Binary("remainder", pb("remainder"), np.remainder, b_range=(0.25, 3.0)),
    Binary("fmod", pb("fmod"), np.fmod, b_range=(0.25, 3.0)),
    Binary("floor_divide", pb("floor_divide"), np.floor_divide, b_range=(-3.0, -0.25)),
    Binary("atan2", pb("atan2"), np.arctan2),
    Binary("minimum", pb("minimum"), np.minimum),
    Binary("maximum", pb("maximum"), np.maximum),
]

BROADCAST_SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),
    ((4,), (3, 4)),
    ((2, 1, 4), (3, 1)),
    ((), (3,)),
    ((2, 3), ()),
    ((0, 3), (1, 3)),
    ((2, 0, 1), (2, 1, 5)),
]


def _shape_id(shapes) -> str:
    return "x".join(str(s).replace(" ", "") for s in shapes)


@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("case", BINARY_FLOAT, ids=str)
def test_binary_float_broadcasting(check, case, shapes):
    a = check.floats(shapes[0], "float32", *case.a_range)
    b = check.floats(shapes[1], "float32", *case.b_range)
    check.op(case.fn, a, b, ref=case.ref)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
@pytest.mark.parametrize("case", BINARY_FLOAT, ids=str)
def test_binary_float_dtypes(check, case, dtype):
    check.require(dtype)
    a = check.floats((3, 4), dtype, *case.a_range)
    b = check.floats((3, 4), dtype, *case.b_range)
    check.op(case.fn, a, b, ref=case.ref)


@pytest.mark.parametrize("case", BINARY_FLOAT, ids=str)
def test_binary_float_special_values(check, case):
    """IEEE answers for NaN, infinities, zeros and division by zero."""
    edge = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -2.0]
    column = check.tensor([[v] for v in edge])
    row = check.tensor([edge])
    check.op(case.fn, column, row, ref=case.ref)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("case", BINARY_FLOAT[:4], ids=str)
def test_binary_non_contiguous(check, case, view):
    a = check.floats((3, 4), view=view)
    b = check.floats((3, 4), "float32", 0.25, 3.0, view="transposed")
    check.op(case.fn, a, b, ref=case.ref)


@pytest.mark.parametrize("view", VIEWS)
def test_unary_non_contiguous(check, view):
    check.op(lambda t: t.exp(), check.floats((2, 3, 4), view=view), ref=np.exp)


BINARY_INT = [
    Binary("add", operator.add, operator.add),
    Binary("sub", operator.sub, operator.sub),
    Binary("mul", operator.mul, operator.mul),
    Binary("floordiv", operator.floordiv, np.floor_divide),
    Binary("mod", operator.mod, np.remainder),
    Binary("fmod", pb("fmod"), np.fmod),
    Binary("pow", operator.pow, np.power, b_range=(0, 5)),
    Binary("minimum", pb("minimum"), np.minimum),
    Binary("maximum", pb("maximum"), np.maximum),
]


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("case", BINARY_INT, ids=str)
def test_binary_int(check, case, dtype):
    """Python semantics for // and % (floor, sign of the divisor); x // 0 and x % 0 give 0."""
    check.require(dtype)
    low = 0 if dtype == "uint8" else -9
    a = check.ints((4, 5), dtype, low, 10)
    b = check.ints((1, 5), dtype, *case.b_range) if case.name == "pow" else check.tensor(
        [[-3, -1, 0, 2, 5] if dtype != "uint8" else [3, 1, 0, 2, 5]], dtype)
    check.op(case.fn, a, b, ref=case.ref)


def test_true_division_of_ints_gives_float32(check):
    a, b = check.ints((3, 4)), check.tensor([[-3, -1, 0, 2]])
    check.op(operator.truediv, a, b, dtype="float32")
    check.op(lambda t: t / 2, a, ref=lambda x: x / 2, dtype="float32")


def test_int32_wraps_on_overflow(check):
    big = check.tensor([2**31 - 1, -(2**31), 65536, 46341], "int32")
    ones = check.tensor([1, -1, 65536, 46341], "int32")
    check.op(operator.add, big, ones)
    check.op(operator.mul, big, ones)
    check.op(lambda t: t - 1, big)


REFLECTED = {
    "radd": (lambda t: 2 + t, lambda a: 2 + a),
    "rsub": (lambda t: 2 - t, lambda a: 2 - a),
    "rmul": (lambda t: 3 * t, lambda a: 3 * a),
    "rtruediv": (lambda t: 2 / t, lambda a: 2 / a),
    "rfloordiv": (lambda t: 5 // t, lambda a: np.floor_divide(5.0, a)),
    "rmod": (lambda t: 5 % t, lambda a: np.remainder(5.0, a)),
    "rpow": (lambda t: 2**t, lambda a: 2.0**a),
    "pow_scalar": (lambda t: t**2, lambda a: a**2),
    "sub_scalar": (lambda t: t - 1.5, lambda a: a - 1.5),
    "mod_scalar": (lambda t: t % 1.5, lambda a: np.remainder(a, 1.5)),
    "add_alpha_scalar": (lambda t: t.add(1.5, alpha=2), lambda a: a + 3.0),
    "sub_alpha_scalar": (lambda t: t.sub(0.5, alpha=-3), lambda a: a + 1.5),
    "add_alpha_tensor": (lambda t: t.add(t, alpha=0.5), lambda a: a + 0.5 * a),
}


@pytest.mark.parametrize("name", REFLECTED)
def test_python_scalar_operands(check, name):
    fn, ref = REFLECTED[name]
    check.op(fn, check.floats((2, 5), "float32", 0.25, 3.0), ref=ref)


# ---- comparisons, logic, bits ------------------------------------------------------------

COMPARISONS = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float64"])
@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_give_bool(check, name, dtype):
    check.require(dtype)
    fn = COMPARISONS[name]
    a = check.tensor([[0, 1, 2], [1, 1, 0]], dtype) if dtype != "bool" else check.bools((2, 3))
    b = check.tensor([[1], [0]], dtype) if dtype != "bool" else check.bools((1, 3))
    check.op(fn, a, b)
    check.op(lambda t: fn(t, 1), a, ref=lambda x: fn(x, 1))
    check.op(lambda t: fn(1, t), a, ref=lambda x: fn(1, x))


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_with_nan(check, name):
    row = check.tensor([[math.nan, 1.0, math.inf, -math.inf]])
    column = check.tensor([[math.nan], [1.0], [math.inf]])
    check.op(COMPARISONS[name], row, column)


LOGICAL = {
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("dtype", ["bool", "float32", "int32"])
@pytest.mark.parametrize("name", LOGICAL)
def test_logical(check, name, dtype):
    if dtype == "bool":
        a, b = check.bools((2, 4)), check.bools((1, 4))
    else:
        a = check.tensor([[0, 1, 2, 0], [3, 0, 0, 1]], dtype)
        b = check.tensor([[0, 0, 1, 5]], dtype)
    check.op(getattr(pyburn, name), a, b, ref=LOGICAL[name])
    check.op(lambda x, y: getattr(x, name)(y), a, b, ref=LOGICAL[name])


@pytest.mark.parametrize("dtype", ["bool", "float32", "int32"])
def test_logical_not(check, dtype):
    x = check.values((3, 3), dtype) if dtype != "int32" else check.ints((3, 3), low=-1, high=2)
    check.op(pyburn.logical_not, x, ref=np.logical_not)
    check.op(lambda t: t.logical_not(), x, ref=np.logical_not)


BITWISE = {
    "and": (operator.and_, pb("bitwise_and")),
    "or": (operator.or_, pb("bitwise_or")),
    "xor": (operator.xor, pb("bitwise_xor")),
}


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "int64"])
@pytest.mark.parametrize("name", BITWISE)
def test_bitwise(check, name, dtype):
    check.require(dtype)
    op, fn = BITWISE[name]
    if dtype == "int32":  # every bit pattern, sign bit included
        a, b = check.ints((3, 4), dtype, -2**31, 2**31), check.ints((1, 4), dtype, -2**31, 2**31)
    else:
        a, b = check.values((3, 4), dtype), check.values((1, 4), dtype)
    check.op(op, a, b)
    check.op(fn, a, b, ref=op)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool", "int64"])
def test_bitwise_not(check, dtype):
    check.require(dtype)
    x = check.values((2, 5), dtype)
    check.op(operator.invert, x)
    check.op(pyburn.bitwise_not, x, ref=operator.invert)


def test_shifts(check):
    """<< wraps to int32; >> is arithmetic (sign-extending)."""
    a = check.tensor([1, -1, 12345, -12345, 2**30, 3, -(2**31), 7], "int32")
    s = check.tensor([0, 1, 4, 3, 1, 31, 5, 2], "int32")
    check.op(operator.lshift, a, s)
    check.op(operator.rshift, a, s)
    check.op(lambda t: t << 2, a, ref=lambda x: x << 2)
    check.op(lambda t: t >> 1, a, ref=lambda x: x >> 1)


# ---- clamp, where, classification ----------------------------------------------------------

CLAMPS = [{"min": -0.5, "max": 0.5}, {"min": 0.0}, {"max": 0.25}, {"min": 1, "max": 1}]


@pytest.mark.parametrize("bounds", CLAMPS, ids=lambda b: "-".join(f"{k}{v}" for k, v in b.items()))
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_clamp(check, dtype, bounds):
    check.require(dtype)
    bounds = bounds if dtype != "int32" else {k: int(v * 4) for k, v in bounds.items()}
    x = check.values((3, 4), dtype)
    check.op(lambda t: t.clamp(**bounds), x,
             ref=lambda a: np.clip(a, bounds.get("min"), bounds.get("max")))
    check.op(lambda t: pyburn.clamp(t, **bounds), x,
             ref=lambda a: np.clip(a, bounds.get("min"), bounds.get("max")))


def test_clamp_propagates_nan(check):
    check.op(lambda t: t.clamp(-1.0, 1.0), check.tensor([math.nan, 2.0, -2.0, 0.5]),
             ref=lambda a: np.clip(a, -1.0, 1.0))


def test_where_broadcasts(check):
    cond, a, b = check.bools((3, 1)), check.floats((1, 4)), check.floats((3, 4))
    check.op(pyburn.where, cond, a, b, ref=np.where)
    check.op(lambda c, x: pyburn.where(c, x, 0.0), cond, a, ref=lambda c, x: np.where(c, x, 0.0))
    check.op(lambda c, x: pyburn.where(c, 1.5, x), cond, b, ref=lambda c, x: np.where(c, 1.5, x))


def test_where_on_ints_and_bools(check):
    cond = check.bools((2, 3))
    check.op(pyburn.where, cond, check.ints((2, 3)), check.ints((2, 3)), ref=np.where)
    check.op(pyburn.where, cond, check.bools((2, 3)), check.bools((1, 3)), ref=np.where)


CLASSIFY = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32"])
@pytest.mark.parametrize("name", CLASSIFY)
def test_classification(check, name, dtype):
    check.require(dtype)
    x = check.tensor(SPECIALS, dtype) if dtype != "int32" else check.ints((4,))
    check.op(lambda t: getattr(t, name)(), x, ref=CLASSIFY[name])
    check.op(lambda t: getattr(pyburn, name)(t), x, ref=CLASSIFY[name])


def test_long_elementwise_chain(check):
    """A composite of many primitives keeps float32 accuracy."""
    x = check.floats((4, 6), "float32", -2, 2)
    check.op(lambda t: ((t * 2 + 1).exp() - t.sin().abs()).sqrt() / (t.square() + 1), x,
             ref=lambda a: np.sqrt(np.exp(a * 2 + 1) - np.abs(np.sin(a))) / (a * a + 1),
             tol=PERMISSIVE)
