"""Linear algebra: matmul (1-d, 2-d, batched with broadcasting), dot, outer, einsum."""

from __future__ import annotations

import operator

import pytest

import pyburn

from .helpers import BALANCED, PERMISSIVE, np, pb

MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((1, 1), (1, 1)),
    ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)),
    ((5, 2, 3), (3,)),
    ((5, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 4)),
    ((1, 2, 3), (4, 1, 3, 2)),
    ((0, 3), (3, 4)),
    ((2, 0), (0, 3)),
    ((4, 2, 0), (0,)),
    ((2, 3, 0), (0, 4)),  # the batched-rows path with nothing to sum
    ((16, 33), (33, 17)),
]


def _id(shapes) -> str:
    return "@".join(str(s).replace(" ", "") for s in shapes)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=_id)
def test_matmul(check, shapes):
    """torch semantics: 1-d operands gain and lose a dim; batch dims broadcast."""
    a, b = check.floats(shapes[0]), check.floats(shapes[1])
    tol = PERMISSIVE if shapes[1][0] > 8 else BALANCED  # long dot products accumulate error
    check.op(operator.matmul, a, b, tol=tol)
    check.op(pb("matmul"), a, b, ref=operator.matmul, tol=tol)


@pytest.mark.parametrize("dtype", ["float64", "float16", "int32", "int64"])
def test_matmul_dtypes(check, dtype):
    check.require(dtype)
    a, b = check.values((3, 5), dtype), check.values((5, 2), dtype)
    check.op(operator.matmul, a, b, tol=PERMISSIVE)


def test_matmul_promotes(check):
    check.op(operator.matmul, check.ints((2, 3)), check.floats((3, 2)))


@pytest.mark.parametrize("view", ["transposed", "stepped", "expanded", "permuted", "sliced"])
def test_matmul_of_views(check, view):
    a, b = check.floats((3, 4, 5), view=view), check.floats((3, 5, 2), view="transposed")
    check.op(operator.matmul, a, b)
    check.op(lambda x: x @ x.transpose(-1, -2), a, ref=lambda x: x @ np.swapaxes(x, -1, -2))


def test_dot_and_outer(check):
    a, b = check.floats((5,)), check.floats((5,))
    check.op(pb("dot"), a, b, ref=np.dot)
    check.op(lambda x, y: x.dot(y), a, b, ref=np.dot)
    check.op(pb("outer"), a, check.floats((3,)), ref=np.outer)
    check.op(lambda x, y: x.outer(y), a, check.ints((2,)), ref=np.outer)
    check.op(pb("dot"), check.ints((4,)), check.ints((4,)), ref=np.dot)


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,i->", [(5,), (5,)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ij,kj", [(2, 3), (4, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum(check, equation, shapes):
    xs = tuple(check.floats(s) for s in shapes)
    check.op(lambda *ts: pyburn.einsum(equation, *ts), *xs,
             ref=lambda *a: np.einsum(equation, *a), tol=BALANCED)


def test_einsum_of_views(check):
    a, b = check.floats((3, 4), view="transposed"), check.floats((4, 2), view="stepped")
    check.op(lambda x, y: pyburn.einsum("ij,jk->ik", x, y), a, b,
             ref=lambda x, y: np.einsum("ij,jk->ik", x, y))
