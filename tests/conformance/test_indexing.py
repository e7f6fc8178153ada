"""Indexing: t[key] and t[key] = v (basic and advanced), index_put, gather/scatter, selection,
sorting, one_hot, tril/triu."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

import pyburn

from .helpers import nest, np

E = Ellipsis
S = slice(None)

# (id, key maker): the maker gets the `check` fixture, for keys that hold index tensors (the
# tensors become numpy arrays for the reference). The indexed tensor has shape (3, 4, 5).
KEYS: list[tuple[str, Callable]] = [
    ("int", lambda c: 1),
    ("neg_int", lambda c: -1),
    ("int_pair", lambda c: (1, 2)),
    ("neg_pair", lambda c: (-3, -4)),
    ("to_0d", lambda c: (2, -1, 4)),
    ("slice", lambda c: slice(1, 3)),
    ("slice_steps", lambda c: (slice(None, None, 2), slice(1, None, 3))),
    ("slice_step_start_stop", lambda c: (S, S, slice(4, 0, 1))),
    ("slice_neg_bounds", lambda c: slice(-3, -1)),
    ("slice_past_end", lambda c: (S, slice(1, 100, 2))),
    ("slice_empty", lambda c: slice(3, 1)),
    ("none", lambda c: None),
    ("none_mixed", lambda c: (None, 1, None, slice(0, 2))),
    ("ellipsis_last", lambda c: (E, 1)),
    ("ellipsis_first", lambda c: (0, E)),
    ("ellipsis_none", lambda c: (E, None)),
    ("ellipsis_mid", lambda c: (1, E, slice(None, None, 2))),
    ("mask_full", lambda c: c.bools((3, 4, 5))),
    ("mask_first_dims", lambda c: c.bools((3, 4))),
    ("mask_0d_true", lambda c: c.tensor(True)),
    ("mask_0d_false", lambda c: (c.tensor(False), 1)),
    ("mask_then_slice", lambda c: (c.bools((3,)), slice(1, 3))),
    ("mask_after_slice", lambda c: (S, c.bools((4,)))),
    ("int_tensor", lambda c: c.ints((2,), low=-3, high=3)),
    ("int_tensor_2d", lambda c: c.ints((2, 2), low=0, high=3)),
    ("int_tensor_0d", lambda c: c.tensor(2, "int32")),
    ("int_tensor_empty", lambda c: c.tensor([], "int32")),
    ("int64_tensor", lambda c: c.ints((3,), "int64", low=-3, high=3)),
    ("list", lambda c: [0, 2, 1, 2]),
    ("list_neg", lambda c: [-1, 0]),
    ("list_in_dim_1", lambda c: (S, [3, 0])),
    ("tensors_broadcast", lambda c: (c.ints((2, 1), low=0, high=3), c.ints((3,), low=0, high=4))),
    ("tensors_adjacent", lambda c: (S, c.ints((2,), low=0, high=4), c.ints((2,), low=0, high=5))),
    ("tensors_separated", lambda c: (c.ints((2,), low=0, high=3), S, c.ints((2,), low=0, high=5))),
    ("tensor_and_slices", lambda c: (c.ints((2, 2), low=0, high=3), slice(1, 3), S)),
    ("tensor_and_none", lambda c: (None, c.ints((2,), low=0, high=3))),
    ("tensor_ellipsis_tensor", lambda c: (c.ints((4,), low=0, high=3), E,
                                          c.ints((4,), low=0, high=5))),
]


def _get(t, key):
    return t[key]


@pytest.mark.parametrize("name,make_key", KEYS, ids=[k[0] for k in KEYS])
def test_getitem(check, name, make_key):
    if name.startswith("int64"):
        check.require("int64")
    check.op(_get, check.floats((3, 4, 5)), make_key(check))


def test_int_with_index_tensor_follows_torch(check):
    """An int is a basic index applied first (torch), not one of the advanced indices (numpy):
    for x of shape (3, 4, 5), x[1, :, idx] has shape (4, len(idx)), not (len(idx), 4)."""
    idx = check.ints((3,), low=-5, high=5)
    check.op(lambda t, i: t[1, :, i], check.floats((3, 4, 5)), idx, ref=lambda a, i: a[1][:, i])
    check.op(lambda t, i: t[i, 2], check.floats((3, 4, 5)), check.ints((2,), low=0, high=3),
             ref=lambda a, i: a[:, 2][i])


@pytest.mark.parametrize("view", ["transposed", "stepped", "expanded", "permuted"])
@pytest.mark.parametrize("name,make_key", KEYS[::3], ids=[k[0] for k in KEYS[::3]])
def test_getitem_of_views(check, name, make_key, view):
    if name.startswith("int64"):
        check.require("int64")
    check.op(_get, check.floats((3, 4, 5), view=view), make_key(check))


@pytest.mark.parametrize("dtype", ["int32", "bool", "float16", "int64", "uint8"])
def test_getitem_keeps_dtype(check, dtype):
    check.require(dtype)
    x = check.values((3, 4), dtype)
    for key in (1, (slice(None), slice(None, None, 2)), [2, 0], (None, -1)):
        check.op(_get, x, key)


def test_getitem_of_empty(check):
    x = check.floats((0, 3))
    check.op(_get, x, (slice(None), 1))
    check.op(_get, x, check.tensor([], "int32"))
    check.op(_get, check.floats((3, 0)), 2)


# ---- assignment ----------------------------------------------------------------------------

def _set(t, key, value):
    t[key] = value
    return t


SET_KEYS: list[tuple[str, Callable, Callable]] = [
    ("int_scalar", lambda c: 1, lambda c: 0.5),
    ("slice_tensor", lambda c: (S, slice(1, 3)), lambda c: c.floats((2, 5))),
    ("steps_scalar", lambda c: (slice(None, None, 2), S, slice(1, None, 2)), lambda c: -7.0),
    ("ellipsis_tensor", lambda c: (E, -1), lambda c: c.floats((4,))),
    ("mask_scalar", lambda c: c.bools((3, 4, 5)), lambda c: 0.0),
    ("mask_rows", lambda c: c.tensor([True, False, True]), lambda c: c.floats((4, 5))),
    ("list_tensor", lambda c: [0, 2], lambda c: c.floats((2, 4, 5))),
    ("tensors_scalar", lambda c: (c.tensor([0, 2, 1]), S, c.tensor([4, 0, 1])), lambda c: 9.0),
    ("none_int", lambda c: (None, 0), lambda c: c.floats((1, 4, 5))),
    ("int_value", lambda c: 2, lambda c: 3),
]


@pytest.mark.parametrize("name,make_key,make_value", SET_KEYS, ids=[k[0] for k in SET_KEYS])
def test_setitem(check, name, make_key, make_value):
    check.op(_set, check.floats((3, 4, 5)), make_key(check), make_value(check))


def test_setitem_casts_to_the_target_dtype(check):
    check.op(_set, check.ints((3, 4)), 1, 2.7, ref=lambda a, k, v: _set(a, k, int(v)))
    check.op(_set, check.bools((2, 3)), (slice(None), 0), 1)


def test_setitem_rebinds_the_same_object(check):
    t = pyburn.zeros(3, device=check.device)
    same = t
    t[1] = 5.0
    assert same is t and same.tolist() == [0.0, 5.0, 0.0]


def test_index_put(check):
    x = check.floats((4, 3))
    rows, cols = check.tensor([0, 3, 1]), check.tensor([2, 0, 1])

    def put(a, r, c, v):
        a[r, c] = v
        return a

    def accumulate(a, r, v):
        np.add.at(a, r, v)
        return a

    check.op(lambda t, r, c, v: t.index_put((r, c), v), x, rows, cols, check.floats((3,)),
             ref=put)
    check.op(lambda t, r, c: pyburn.index_put(t, (r, c), 1.5), x, rows, cols,
             ref=lambda a, r, c: put(a, r, c, 1.5))
    dup = check.tensor([1, 3, 1, 1])
    check.op(lambda t, r, v: t.index_put((r,), v, accumulate=True), x, dup,
             check.floats((4, 3)), ref=accumulate)


# ---- gather / scatter ------------------------------------------------------------------------

def _gather(a, dim, index):
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return a[tuple(grids)]


def _scatter(a, dim, index, src, reduce=None):
    out = a.copy()
    grids = list(np.indices(index.shape))
    grids[dim] = index
    if np.ndim(src) == 0:
        src = np.full(index.shape, src)
    src = src[tuple(slice(0, n) for n in index.shape)]
    if reduce == "add":
        np.add.at(out, tuple(grids), src)
    else:
        out[tuple(grids)] = src
    return out


def _unique_index(check, shape: tuple[int, ...], dim: int, size: int):
    """An int32 index of `shape` whose entries along `dim` are distinct values below `size`,
    so that a scatter never writes one place twice."""
    dim %= len(shape)
    out = [0] * math.prod(shape)
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    for start in range(math.prod(shape)):
        if (start // strides[dim]) % shape[dim]:
            continue
        picks = check.rng.sample(range(size), shape[dim])
        for j, v in enumerate(picks):
            out[start + j * strides[dim]] = v
    return check.tensor(nest(out, shape), "int32")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(check, dim):
    x = check.floats((3, 4, 5))
    index = check.ints((2, 3, 4), low=0, high=(3, 4, 5)[dim])
    check.op(lambda t, i: t.gather(dim, i), x, index, ref=lambda a, i: _gather(a, dim % 3, i))
    check.op(lambda t, i: pyburn.gather(t, dim, i), x, index,
             ref=lambda a, i: _gather(a, dim % 3, i))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter(check, dim):
    x = check.floats((3, 4, 5))
    index = _unique_index(check, (2, 3, 4), dim, (3, 4, 5)[dim])
    src = check.floats((3, 4, 5))
    d = dim % 3
    check.op(lambda t, i, s: t.scatter(dim, i, s), x, index, src,
             ref=lambda a, i, s: _scatter(a, d, i, s))
    check.op(lambda t, i: t.scatter(dim, i, 2.5), x, index, ref=lambda a, i: _scatter(a, d, i, 2.5))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_accumulates_duplicates(check, dim):
    x = check.floats((3, 4, 5))
    index = check.ints((3, 4, 5), low=0, high=(3, 4, 5)[dim])
    src = check.floats((3, 4, 5))
    d = dim % 3
    check.op(lambda t, i, s: t.scatter_add(dim, i, s), x, index, src,
             ref=lambda a, i, s: _scatter(a, d, i, s, "add"))
    check.op(lambda t, i, s: t.scatter(dim, i, s, reduce="add"), x, index, src,
             ref=lambda a, i, s: _scatter(a, d, i, s, "add"))


def test_index_select_and_take(check):
    x = check.floats((3, 4, 5))
    idx = check.tensor([3, 0, 0, 2])
    check.op(lambda t, i: t.index_select(1, i), x, idx, ref=lambda a, i: np.take(a, i, axis=1))
    check.op(lambda t, i: pyburn.index_select(t, -1, i), x, idx,
             ref=lambda a, i: np.take(a, i, axis=-1))
    check.op(lambda t, i: t.index_select(0, i), x, check.tensor([], "int32"),
             ref=lambda a, i: np.take(a, i, axis=0))
    flat = check.tensor([[0, 59], [17, -1]])
    check.op(lambda t, i: t.take(i), x, flat, ref=lambda a, i: np.take(a, i))


def test_masked_fill_and_select(check):
    x, mask = check.floats((3, 5)), check.bools((1, 5))
    check.op(lambda t, m: t.masked_fill(m, -1.0), x, mask, ref=lambda a, m: np.where(m, -1.0, a))
    check.op(lambda t, m: t.masked_select(m), x, mask,
             ref=lambda a, m: a[np.broadcast_to(m, a.shape)])
    full = check.bools((3, 5))
    check.op(lambda t, m: pyburn.masked_select(t, m), x, full, ref=lambda a, m: a[m])
    ints = check.ints((3, 5))
    check.op(lambda t, m: t.masked_fill(m, 7), ints, full, ref=lambda a, m: np.where(m, 7, a))


@pytest.mark.parametrize("shape", [(3, 4), (5,), (2, 3, 2), (0, 3)], ids=str)
def test_nonzero(check, shape):
    x = check.ints(shape, low=-1, high=2)
    check.op(lambda t: t.nonzero(), x, ref=np.argwhere, dtype="int32")
    check.op(lambda t: t.nonzero(as_tuple=True), x, ref=np.nonzero,
             dtype=("int32",) * len(shape))
    check.op(lambda t: pyburn.nonzero(t), check.floats(shape), ref=np.argwhere, dtype="int32")


# ---- sorting -------------------------------------------------------------------------------

def _argsort(a, axis, descending):
    """Stable; descending keeps equal elements in their original order, like torch."""
    return np.argsort(-a if descending else a, axis=axis, kind="stable")


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_sort_is_stable(check, dim, descending):
    for x in (check.ints((4, 6), low=-2, high=3), check.floats((4, 6))):
        def ref(a):
            i = _argsort(a, dim, descending)
            return np.take_along_axis(a, i, axis=dim), i

        result = check.op(lambda t: t.sort(dim=dim, descending=descending), x, ref=ref,
                          dtype=(None, "int32"))
        assert result.values is result[0] and result.indices is result[1]
        check.op(lambda t: t.argsort(dim=dim, descending=descending), x,
                 ref=lambda a: _argsort(a, dim, descending), dtype="int32")


def test_sort_puts_nan_last_ascending_and_first_descending(check):
    x = check.tensor([[3.0, math.nan, -math.inf, 1.0, math.inf], [0.0, -1.0, 2.0, math.nan, 5.0]])

    def ref(a, descending):
        i = np.argsort(a, axis=1, kind="stable")
        i = np.flip(i, 1) if descending else i
        return np.take_along_axis(a, i, axis=1), i

    check.op(lambda t: pyburn.sort(t), x, ref=lambda a: ref(a, False), dtype=(None, "int32"))
    check.op(lambda t: t.sort(descending=True), x, ref=lambda a: ref(a, True),
             dtype=(None, "int32"))


@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("k,dim", [(1, -1), (3, -1), (6, 1), (2, 0), (0, -1)])
def test_topk(check, k, dim, largest):
    # distinct values: which of two equal elements topk returns is not specified
    flat = check.rng.sample(range(-50, 50), 24)
    x = check.tensor(nest([v / 4 for v in flat], (4, 6)), "float32")

    def ref(a):
        i = np.argsort(-a if largest else a, axis=dim, kind="stable")
        i = np.take(i, range(k), axis=dim)
        return np.take_along_axis(a, i, axis=dim), i

    result = check.op(lambda t: t.topk(k, dim=dim, largest=largest), x, ref=ref,
                      dtype=(None, "int32"))
    assert result.values is result[0] and result.indices is result[1]


# ---- one_hot, triangles ----------------------------------------------------------------------

@pytest.mark.parametrize("num_classes", [-1, 5, 7])
def test_one_hot(check, num_classes):
    x = check.tensor([[0, 4, 2], [1, 1, 3]])
    n = 5 if num_classes == -1 else num_classes
    check.op(lambda t: pyburn.one_hot(t, num_classes), x, ref=lambda a: np.eye(n, dtype=int)[a])
    check.op(lambda t: pyburn.one_hot(t, num_classes=num_classes), x,
             ref=lambda a: np.eye(n, dtype=int)[a])


@pytest.mark.parametrize("diagonal", [0, 1, -1, 2, -3, 5])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangles(check, name, diagonal):
    ref = getattr(np, name)
    for x in (check.floats((3, 4)), check.ints((2, 4, 3)), check.floats((4, 3), view="transposed")):
        check.op(lambda t: getattr(t, name)(diagonal), x, ref=lambda a: ref(a, diagonal))
        check.op(lambda t: getattr(pyburn, name)(t, diagonal=diagonal), x,
                 ref=lambda a: ref(a, diagonal))
