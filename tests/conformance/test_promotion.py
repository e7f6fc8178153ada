"""Dtype promotion between tensors and with weak Python scalars, and dtype conversions."""

from __future__ import annotations

import math
import operator

import pytest

import pyburn

from .helpers import STRICT, np

# (a dtype, b dtype, result of a + b): bool < ints < floats, the wider wins in a category;
# arithmetic on two bools treats them as int32.
TENSOR_PROMOTION = [
    ("bool", "bool", "int32"),
    ("bool", "uint8", "uint8"),
    ("bool", "int32", "int32"),
    ("bool", "float32", "float32"),
    ("uint8", "uint8", "uint8"),
    ("uint8", "int32", "int32"),
    ("uint8", "float16", "float16"),
    ("int32", "int64", "int64"),
    ("int32", "float32", "float32"),
    ("int64", "float32", "float32"),
    ("int32", "float16", "float16"),
    ("float16", "float32", "float32"),
    ("float32", "float64", "float64"),
    ("int64", "float64", "float64"),
]


@pytest.mark.parametrize("a_dtype,b_dtype,result", TENSOR_PROMOTION,
                         ids=["+".join(c[:2]) for c in TENSOR_PROMOTION])
def test_tensor_tensor_promotion(check, a_dtype, b_dtype, result):
    check.require(a_dtype, b_dtype)
    a, b = check.values((2, 3), a_dtype), check.values((1, 3), b_dtype)

    def as_int(x):  # numpy adds bools with "or"; pyburn counts them as int32
        return x.astype(np.int32) if x.dtype == np.bool_ else x

    check.op(operator.add, a, b, ref=lambda x, y: as_int(x) + as_int(y), dtype=result)
    check.op(operator.mul, b, a, ref=lambda x, y: as_int(x) * as_int(y), dtype=result)


# (tensor dtype, scalar, op, result dtype): scalars never widen a tensor of their category.
SCALAR_PROMOTION = [
    ("int32", 1, "add", "int32"),
    ("int32", 1.5, "add", "float32"),
    ("int32", True, "add", "int32"),
    ("uint8", 3, "add", "uint8"),
    ("uint8", 0.5, "mul", "float32"),
    ("int64", 7, "mul", "int64"),
    ("int64", 0.5, "mul", "float32"),
    ("bool", 1, "add", "int32"),
    ("bool", 2.5, "mul", "float32"),
    ("bool", True, "add", "int32"),
    ("float16", 2.0, "mul", "float16"),
    ("float16", 3, "add", "float16"),
    ("float32", 2, "sub", "float32"),
    ("float64", 1.5, "add", "float64"),
]
OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}


@pytest.mark.parametrize("dtype,scalar,op,result", SCALAR_PROMOTION,
                         ids=[f"{c[0]}-{c[2]}-{c[1]!r}" for c in SCALAR_PROMOTION])
def test_python_scalar_is_weak(check, dtype, scalar, op, result):
    check.require(dtype)
    fn = OPS[op]
    x = check.values((2, 3), dtype)

    def widened(a):
        return a.astype(np.int64) if a.dtype.kind in "bu" else a

    check.op(lambda t: fn(t, scalar), x, ref=lambda a: fn(widened(a), scalar), dtype=result)
    check.op(lambda t: fn(scalar, t), x, ref=lambda a: fn(scalar, widened(a)), dtype=result)


def test_uint8_wraps_with_python_int(check):
    x = check.tensor([0, 1, 200, 255], "uint8")
    check.op(lambda t: t + 100, x, ref=lambda a: (a.astype(np.int64) + 100) % 256)
    check.op(lambda t: t - 1, x, ref=lambda a: (a.astype(np.int64) - 1) % 256)


def test_comparison_promotes_before_comparing(check):
    ints, floats = check.tensor([1, 2, 3]), check.tensor([1.5, 2.0, 2.5])
    check.op(operator.lt, ints, floats)
    check.op(operator.eq, ints, floats)
    check.op(lambda t: t == 2.0, ints, ref=lambda a: a == 2.0)
    check.op(lambda t: t > 1.5, ints, ref=lambda a: a > 1.5)


def test_where_promotes_branches(check):
    cond = check.bools((2, 3))
    check.op(pyburn.where, cond, check.ints((2, 3)), check.floats((2, 3)), ref=np.where)
    check.op(lambda c, x: pyburn.where(c, x, 0.5), cond, check.ints((2, 3)),
             ref=lambda c, x: np.where(c, x, 0.5), dtype="float32")


def test_cat_promotes(check):
    check.op(lambda a, b: pyburn.cat([a, b]), check.ints((2,)), check.floats((3,)),
             ref=lambda a, b: np.concatenate([a, b]))


# ---- conversions -------------------------------------------------------------------------

CASTS = [
    ("float32", "int32", [-2.7, -0.5, 0.0, 0.9, 3.99, 100.5]),
    ("float32", "bool", [-2.0, 0.0, -0.0, 0.1, math.nan, math.inf]),
    ("float32", "float16", [0.1, 1 / 3, 65504.0, 1e-8, -2.5, 70000.0]),
    ("float32", "uint8", [0.0, 1.5, 200.7, 255.0]),
    ("float64", "float32", [0.1, 1 / 3, 1e-50, 1e40, -2.5, math.nan]),
    ("int32", "float32", [16777217, -3, 0, 2**31 - 1]),
    ("int32", "uint8", [300, -1, 255, 256, 0]),
    ("int32", "bool", [0, 1, -5, 7]),
    ("int64", "int32", [2**40 + 5, -(2**33) - 1, 12]),
    ("bool", "float32", [True, False]),
    ("bool", "int32", [True, False]),
    ("uint8", "int32", [0, 255, 128]),
]


def _cast_ref(target: str):
    def ref(a):
        if target == "bool":
            return a != 0
        if a.dtype.kind == "f" and target in ("int32", "uint8"):
            a = np.trunc(a).astype(np.int64)  # toward zero, then wrap like a C cast
        if target == "float16":
            return a.astype(np.float16).astype(np.float64)
        if target == "float32":
            return a.astype(np.float32).astype(np.float64)
        return a.astype(target)

    return ref


@pytest.mark.parametrize("source,target,values", CASTS, ids=[f"{c[0]}-{c[1]}" for c in CASTS])
def test_cast(check, source, target, values):
    """Floats truncate toward zero, ints wrap, anything nonzero is True."""
    check.require(source, target)
    x = check.tensor(values, source)
    dtype = getattr(pyburn, target)
    check.op(lambda t: t.to(dtype), x, ref=_cast_ref(target), dtype=target, tol=STRICT)
    check.op(lambda t: t.cast(dtype), x, ref=_cast_ref(target), dtype=target, tol=STRICT)


SHORTHANDS = {"float": "float32", "double": "float64", "half": "float16", "int": "int32",
              "long": "int64", "bool": "bool"}


@pytest.mark.parametrize("method", SHORTHANDS)
def test_cast_shorthands(check, method):
    target = SHORTHANDS[method]
    check.require(target)
    check.op(lambda t: getattr(t, method)(), check.floats((2, 3), "float32", -3, 3),
             ref=_cast_ref(target), dtype=target, tol=STRICT)


def test_cast_to_same_dtype_keeps_values(check):
    x = check.floats((3,))
    check.op(lambda t: t.to(pyburn.float32), x, ref=lambda a: a, tol=STRICT)


def test_dtype_names_and_aliases():
    assert pyburn.bool is pyburn.bool_
    names = ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"]
    assert [getattr(pyburn, n).name for n in names] == names
