"""Reductions over dims (int, tuple, negative, keepdim), arg-reductions, norms and scans."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest

import pyburn

from .helpers import BALANCED, PERMISSIVE, STRICT, VIEWS, Tol, np


def _logsumexp(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


@dataclass(frozen=True)
class Reduction:
    """A reduction: its numpy reference (taking axis and keepdims), the tolerance preset its
    accumulation allows, and the input range it needs."""

    name: str
    ref: Callable
    tol: dict[str, Tol]
    low: float = -2.0
    high: float = 2.0

    def __str__(self) -> str:
        return self.name


REDUCTIONS = [
    Reduction("sum", lambda a, **k: np.sum(a, **k), PERMISSIVE),
    Reduction("mean", lambda a, **k: np.mean(a, **k), PERMISSIVE),
    Reduction("prod", lambda a, **k: np.prod(a, **k), BALANCED, 0.5, 1.5),
    Reduction("amax", lambda a, **k: np.amax(a, **k), STRICT),
    Reduction("amin", lambda a, **k: np.amin(a, **k), STRICT),
    Reduction("var", lambda a, **k: np.var(a, ddof=1, **k), PERMISSIVE),
    Reduction("std", lambda a, **k: np.std(a, ddof=1, **k), PERMISSIVE),
    Reduction("logsumexp", _logsumexp, BALANCED, -5, 5),
    Reduction("all", lambda a, **k: np.all(a, **k), STRICT),
    Reduction("any", lambda a, **k: np.any(a, **k), STRICT),
]

DIMS = [0, 1, -1, 2, (0, 2), (-1, -2), (0, 1, 2)]


def _reduce_call(name: str, dim, keepdim: bool) -> Callable:
    return lambda t: getattr(t, name)(dim=dim, keepdim=keepdim)


def _input(check, case: Reduction, shape=(2, 3, 4)):
    if case.name in ("all", "any"):  # mostly True, so that `all` is not False everywhere
        return check.bools(shape, p=0.8)
    return check.floats(shape, "float32", case.low, case.high)


@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("case", REDUCTIONS, ids=str)
def test_reduce_dims(check, case, dim, keepdim):
    x = _input(check, case)
    check.op(_reduce_call(case.name, dim, keepdim), x,
             ref=lambda a: case.ref(a, axis=dim, keepdims=keepdim), tol=case.tol)


@pytest.mark.parametrize("case", REDUCTIONS, ids=str)
def test_reduce_all_elements(check, case):
    """No dim: reduce everything to a 0-d tensor."""
    x = _input(check, case)
    check.op(lambda t: getattr(t, case.name)(), x, ref=lambda a: case.ref(a),
             tol=case.tol)
    if case.name not in ("var", "std", "logsumexp"):
        check.op(lambda t: getattr(pyburn, case.name)(t, 1), x,
                 ref=lambda a: case.ref(a, axis=1), tol=case.tol)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", ["sum", "amax", "mean"])
def test_reduce_non_contiguous(check, name, view):
    case = next(c for c in REDUCTIONS if c.name == name)
    x = check.floats((3, 4, 5), view=view)
    check.op(_reduce_call(name, (0, -1), False), x, ref=lambda a: case.ref(a, axis=(0, -1)),
             tol=case.tol)


@pytest.mark.parametrize("dtype", ["float16", "float64", "int32", "int64"])
@pytest.mark.parametrize("name", ["sum", "amax", "amin", "prod"])
def test_reduce_dtypes(check, name, dtype):
    """Sums and products keep the input dtype (small values: no overflow)."""
    check.require(dtype)
    case = next(c for c in REDUCTIONS if c.name == name)
    if dtype.startswith("int"):
        x = check.ints((3, 4), dtype, -3, 4)
    else:
        x = check.floats((3, 4), dtype, 0.5, 1.5)
    check.op(_reduce_call(name, 1, False), x, ref=lambda a: case.ref(a, axis=1), tol=PERMISSIVE,
             dtype=dtype)


def test_sum_and_mean_of_ints_and_bools(check):
    """sum of bool gives int32, sum of int32 stays int32, mean of ints gives float32."""
    b, i = check.bools((3, 5)), check.ints((3, 5))
    check.op(lambda t: t.sum(), b, ref=np.sum, dtype="int32")
    check.op(lambda t: t.sum(dim=0), b, ref=lambda a: np.sum(a, axis=0), dtype="int32")
    check.op(lambda t: t.sum(dim=1), i, ref=lambda a: np.sum(a, axis=1), dtype="int32")
    check.op(lambda t: t.mean(), i, ref=np.mean, dtype="float32")
    check.op(lambda t: t.mean(dim=0), i, ref=lambda a: np.mean(a, axis=0), dtype="float32")


def test_sum_of_int32_wraps(check):
    check.op(lambda t: t.sum(), check.tensor([2**31 - 1, 1, 5], "int32"),
             ref=lambda a: np.sum(a).astype(np.int32))


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_correction(check, name, correction):
    x = check.floats((4, 6))
    ref = getattr(np, name)
    check.op(lambda t: getattr(t, name)(dim=1, correction=correction), x,
             ref=lambda a: ref(a, axis=1, ddof=correction), tol=PERMISSIVE)
    check.op(lambda t: getattr(t, name)(correction=correction), x,
             ref=lambda a: ref(a, ddof=correction), tol=PERMISSIVE)


def test_var_is_accurate_with_a_large_mean(check):
    """var must not be computed as E[x^2] - E[x]^2, which loses everything in float32."""
    x = check.floats((2, 50), "float32", 1e4 - 1, 1e4 + 1)
    check.op(lambda t: t.var(dim=1), x, ref=lambda a: np.var(a, axis=1, ddof=1), tol=PERMISSIVE)


def test_logsumexp_is_stable(check):
    x = check.tensor([[1000.0, 1000.0, 990.0], [-1000.0, -1000.0, -1e4],
                      [-math.inf, 0.0, -math.inf]])
    check.op(lambda t: t.logsumexp(dim=1), x, ref=lambda a: _logsumexp(a, axis=1))
    check.op(lambda t: t.logsumexp(dim=-1, keepdim=True), x,
             ref=lambda a: _logsumexp(a, axis=-1, keepdims=True))


# ---- max / min with indices, argmax / argmin ------------------------------------------------

@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("dim", [0, 1, -1, -3])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_dim_give_values_and_int32_indices(check, name, dim, keepdim):
    x = check.floats((3, 4, 5))
    amax, argmax = (np.amax, np.argmax) if name == "max" else (np.amin, np.argmin)
    result = check.op(lambda t: getattr(t, name)(dim, keepdim=keepdim), x,
                      ref=lambda a: (amax(a, axis=dim, keepdims=keepdim),
                                     argmax(a, axis=dim, keepdims=keepdim)),
                      dtype=("float32", "int32"))
    assert result.values is result[0] and result.indices is result[1]


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_without_dim_give_0d(check, name):
    for x in (check.floats((3, 4)), check.ints((5,))):
        check.op(lambda t: getattr(t, name)(), x, ref=getattr(np, "a" + name))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (1, True), (-1, False),
                                         (-1, True), (-2, True)])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(check, name, dim, keepdim):
    """int32 indices; no dim means the index into the flattened tensor."""
    ref = getattr(np, name)
    kwargs = {"dim": dim, "keepdim": keepdim} if dim is not None else {}
    for x in (check.floats((4, 5)), check.ints((4, 5), low=-2, high=3)):  # ints: many ties
        check.op(lambda t: getattr(t, name)(**kwargs), x,
                 ref=lambda a: ref(a, axis=dim, keepdims=keepdim) if dim is not None else ref(a),
                 dtype="int32")


def test_nan_propagates_through_max_and_argmax(check):
    """max/min propagate NaN; argmax/argmin point at the first NaN."""
    x = check.tensor([[1.0, math.nan, 3.0, math.nan], [2.0, 5.0, -1.0, 0.0]])
    check.op(lambda t: t.amax(dim=1), x, ref=lambda a: np.amax(a, axis=1))
    check.op(lambda t: t.amin(dim=1), x, ref=lambda a: np.amin(a, axis=1))
    check.op(lambda t: t.max(1), x, ref=lambda a: (np.amax(a, axis=1), np.argmax(a, axis=1)),
             dtype=("float32", "int32"))
    check.op(lambda t: t.argmin(dim=1), x, ref=lambda a: np.argmin(a, axis=1), dtype="int32")
    check.op(lambda t: t.sum(dim=1), x, ref=lambda a: np.sum(a, axis=1))


# ---- empty tensors -------------------------------------------------------------------------

EMPTY_REDUCTIONS = {
    "sum": lambda a, **k: np.sum(a, **k),
    "prod": lambda a, **k: np.prod(a, **k),
    "mean": lambda a, **k: np.mean(a, **k),
    "any": lambda a, **k: np.any(a, **k),
    "all": lambda a, **k: np.all(a, **k),
}


@pytest.mark.parametrize("name", EMPTY_REDUCTIONS)
def test_reduce_over_zero_size_dim(check, name):
    """The identity (0, 1, NaN for mean, False, True) and the other dims kept."""
    ref = EMPTY_REDUCTIONS[name]
    x = check.floats((2, 0, 3)) if name not in ("any", "all") else check.bools((2, 0, 3))
    check.op(lambda t: getattr(t, name)(dim=1), x, ref=lambda a: ref(a, axis=1))
    check.op(lambda t: getattr(t, name)(), x, ref=lambda a: ref(a))
    check.op(lambda t: getattr(t, name)(dim=0), x, ref=lambda a: ref(a, axis=0))


# ---- norms ---------------------------------------------------------------------------------

def _norm(a, p, axis=None, keepdims=False):
    m = np.abs(a)
    if p == math.inf:
        return np.amax(m, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return np.amin(m, axis=axis, keepdims=keepdims)
    if p == 1:
        return np.sum(m, axis=axis, keepdims=keepdims)
    return np.sqrt(np.sum(m * m, axis=axis, keepdims=keepdims))


NORMS = [(p, dim) for p in (2, 1, math.inf, -math.inf) for dim in (None, 1, -1, (0, 1))]
NORMS += [("fro", None), ("fro", (0, 1)), ("fro", (-1, -2))]


@pytest.mark.parametrize("p,dim", NORMS, ids=[f"{p}-{d}" for p, d in NORMS])
def test_norm(check, p, dim):
    x = check.floats((3, 4))
    check.op(lambda t: t.norm(p=p, dim=dim), x, ref=lambda a: _norm(a, p, dim))
    if dim is not None:
        check.op(lambda t: pyburn.norm(t, p=p, dim=dim, keepdim=True), x,
                 ref=lambda a: _norm(a, p, dim, keepdims=True))


# ---- scans ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scans(check, name, dim):
    ref = getattr(np, name)
    x = check.floats((3, 5), "float32", 0.5, 1.5)
    check.op(lambda t: getattr(t, name)(dim), x, ref=lambda a: ref(a, axis=dim))
    check.op(lambda t: getattr(pyburn, name)(t, dim=dim), x, ref=lambda a: ref(a, axis=dim))
    check.op(lambda t: getattr(t, name)(dim), check.ints((3, 5), low=-3, high=4),
             ref=lambda a: ref(a, axis=dim))


def test_scan_dtypes_and_views(check):
    check.op(lambda t: t.cumsum(0), check.bools((6,)), ref=lambda a: np.cumsum(a), dtype="int32")
    check.op(lambda t: t.cumsum(-1), check.floats((3, 4), view="transposed"),
             ref=lambda a: np.cumsum(a, axis=-1))
    check.op(lambda t: t.cumsum(1), check.floats((2, 0)), ref=lambda a: np.cumsum(a, axis=1))
