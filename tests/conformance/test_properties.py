"""Property tests (hypothesis): broadcasting and indexing agree with numpy on random shapes
and keys. Desktop only: hypothesis and numpy are not in Pyodide."""

from __future__ import annotations

import operator

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import pyburn  # noqa: E402

from .helpers import BALANCED, STRICT, assert_matches, reference_results  # noqa: E402

# derandomize: the same examples on every run, so CI never flakes on a newly drawn case
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True)

BINARY = {"add": operator.add, "mul": operator.mul, "sub": operator.sub,
          "maximum": (pyburn.maximum, np.maximum), "lt": operator.lt, "eq": operator.eq}


def _floats(shape):
    return hnp.arrays(np.float32, shape, elements=st.floats(-8, 8, width=32))


def _check(got, expected_array, dtype: str, device) -> None:
    (expected,) = reference_results(expected_array, [], dtype)
    assert_matches(got, expected, BALANCED if dtype != "bool" else STRICT, device)


@PROPERTY
@given(data=st.data(), shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_side=0,
                                                                max_side=4, max_dims=4),
       name=st.sampled_from(sorted(BINARY)))
def test_binary_ops_broadcast_like_numpy(device, data, shapes, name):
    a = data.draw(_floats(shapes.input_shapes[0]), label="a")
    b = data.draw(_floats(shapes.input_shapes[1]), label="b")
    fn = BINARY[name]
    pb_fn, np_fn = fn if isinstance(fn, tuple) else (fn, fn)
    got = pb_fn(pyburn.tensor(a, device=device), pyburn.tensor(b, device=device))
    expected = np_fn(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == shapes.result_shape
    _check(got, expected, "bool" if expected.dtype == bool else "float32", device)


@PROPERTY
@given(a=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
       b=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
def test_shapes_that_do_not_broadcast_raise(device, a, b):
    try:
        result = np.broadcast_shapes(a, b)
    except ValueError:
        result = None
    x, y = pyburn.zeros(a, device=device), pyburn.zeros(b, device=device)
    if result is None:
        with pytest.raises(pyburn.ShapeError):
            x + y
    else:
        assert (x + y).shape == result


@st.composite
def _array_and_basic_index(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    index = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape), index


@PROPERTY
@given(case=_array_and_basic_index())
def test_basic_indexing_matches_numpy(device, case):
    """ints, negative ints, slices with any steps, None and Ellipsis."""
    a, index = case
    t = pyburn.tensor(a, device=device)
    _check(t[index], a[index], "int32", device)


@PROPERTY
@given(case=_array_and_basic_index(), value=st.integers(-100, 100))
def test_basic_setitem_matches_numpy(device, case, value):
    a, index = case
    t = pyburn.tensor(a, device=device)
    t[index] = value
    a = a.copy()
    a[index] = value
    _check(t, a, "int32", device)


@st.composite
def _array_and_integer_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
    index = draw(hnp.integer_array_indices(shape, result_shape=hnp.array_shapes(
        min_dims=0, max_dims=2, min_side=0, max_side=3)))
    return np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape), index


@PROPERTY
@given(case=_array_and_integer_index(), as_lists=st.booleans())
def test_integer_array_indexing_matches_numpy(device, case, as_lists):
    """Several index tensors broadcast together, negative entries included."""
    a, index = case
    t = pyburn.tensor(a, device=device)
    if "int64" not in device.caps:  # numpy's indices are int64; this device indexes with int32
        index = tuple(i.astype(np.int32) for i in index)
    key = tuple(i.tolist() if as_lists and i.ndim == 1 else pyburn.tensor(i, device=device)
                for i in index)
    _check(t[key], a[index], "int32", device)


@PROPERTY
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4), data=st.data())
def test_permute_then_inverse_is_identity(device, shape, data):
    perm = data.draw(st.permutations(range(len(shape))))
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    t = pyburn.tensor(a, device=device).permute(*perm)
    _check(t, np.transpose(a, perm), "int32", device)
    inverse = [perm.index(i) for i in range(len(shape))]
    _check(t.permute(*inverse).reshape(-1), a.reshape(-1), "int32", device)


@PROPERTY
@given(case=_array_and_basic_index(), mask_seed=st.integers(0, 2**32 - 1))
def test_bool_mask_of_a_view_matches_numpy(device, case, mask_seed):
    a, index = case
    view = a[index]
    mask = np.random.default_rng(mask_seed).random(view.shape) < 0.5
    t = pyburn.tensor(a, device=device)[index]
    _check(t[pyburn.tensor(mask, device=device)], view[mask], "int32", device)
