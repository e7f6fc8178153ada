"""The ONNX indexing operators (pyburn/onnx/ops/indexing.py) against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(2)
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)


def i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis, indices", [
    (0, [2, 0]), (1, [[0, -1], [3, 1]]), (-1, [4, -5, 0]), (2, 3), (0, -1)])
def test_gather(dev, axis, indices):
    check_node("Gather", [X, i64(indices)], {"axis": axis}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_gather_with_no_indices(dev):
    # onnx's reference answers shape (0,) whatever the axis
    check_node("Gather", [X, i64([])], {"axis": 1}, opset=13, device=dev,
               expected=[np.zeros((3, 0, 5), np.float32)])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("indices", [[3], 3, -4])
def test_gather_refuses_an_index_out_of_range(dev, indices):
    with pytest.raises(pyburn.IndexOutOfRange):
        run_pyburn("Gather", [X, i64(indices)], {"axis": 0}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_elements(dev, axis):
    size = X.shape[axis]
    shape = tuple(2 if d == axis % X.ndim else s for d, s in enumerate(X.shape))
    indices = RNG.integers(-size, size, shape)
    # onnx's reference fails on a negative axis
    want = np.take_along_axis(X, np.where(indices < 0, indices + size, indices), axis)
    check_node("GatherElements", [X, indices], {"axis": axis}, opset=13, device=dev,
               expected=[want])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("indices, batch_dims", [
    ([[0, 1], [2, 3]], 0),
    ([[[1]], [[0]]], 0),
    ([[2, 1, 4], [-1, -4, 0]], 0),
    ([[1, 2], [0, 0], [3, 1]], 1),
    ([[[1], [3]], [[0], [2]], [[2], [2]]], 1),
    ([[[4]], [[0]], [[-1]]], 2),
])
def test_gather_nd(dev, indices, batch_dims):
    x = X if batch_dims < 2 else X[:, :1]
    indices = i64(indices)
    if batch_dims == 2:
        indices = indices.reshape(3, 1, 1)
    check_node("GatherND", [x, indices], {"batch_dims": batch_dims}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [-1, 0, 1, -2])
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.int32])
def test_one_hot(dev, axis, dtype):
    indices = np.array([[0, 3, -1], [-4, 2, 1]], dtype=dtype)
    values = np.array([2.0, 7.0], np.float32)
    check_node("OneHot", [indices, np.array(4, np.int64), values], {"axis": axis}, opset=11,
               device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_one_hot_ignores_indices_out_of_range(dev):
    # onnx's reference wraps them modulo depth; the spec gives the off value everywhere
    indices = i64([1, 5, -6])
    values = np.array([0, 1], np.int64)
    want = np.array([[0, 1, 0], [0, 0, 0], [0, 0, 0]], np.int64)
    check_node("OneHot", [indices, np.array(3.0, np.float32), values], opset=11, device=dev,
               expected=[want])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("x", [
    np.array([[1, 0], [0, 3]], np.int64), np.array([0.0, 2.0, 0.0, -1.0], np.float32),
    np.array([[[True, False]], [[False, True]]]), np.zeros((2, 3), np.float32)])
def test_non_zero(dev, x):
    check_node("NonZero", [x], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("k, axis, largest", [(2, -1, 1), (3, 1, 0), (1, 0, 1), (5, 2, 0)])
def test_top_k(dev, k, axis, largest):
    check_node("TopK", [X, i64([k])], {"axis": axis, "largest": largest}, opset=11,
               device=dev, outputs=2)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("largest", [0, 1])
def test_top_k_ties_keep_the_lower_index_first(dev, largest):
    x = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 0, 0, 0, 0]], np.int64)
    check_node("TopK", [x, i64([4])], {"largest": largest}, opset=11, device=dev, outputs=2)


@pytest.mark.parametrize("dev", DEVICES)
def test_top_k_before_opset_11(dev):
    check_node("TopK", [X, i64([2])], {"axis": 1}, opset=10, device=dev, outputs=2)
    check_node("TopK", [X], {"k": 3}, opset=9, device=dev, outputs=2)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("k", [None, 0, 1, -1, 3, -5, 9])
@pytest.mark.parametrize("upper", [0, 1])
def test_trilu(dev, k, upper):
    inputs = [X[:, :, :4] if k is None else X, None if k is None else i64(k)]
    check_node("Trilu", inputs, {"upper": upper}, opset=14, device=dev)


UNIQUE = [
    (np.array([2, 1, 1, 3, 4, 3], np.float32), None),
    (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.int64), 0),
    (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4]], np.int64), None),
    (np.array([[[1, 1], [0, 1], [2, 1], [0, 1]], [[1, 1], [0, 1], [2, 1], [0, 1]]],
              np.float32), 1),
    (np.array([[3, 1, 3], [2, 0, 2]], np.int64), -1),
    (np.array([7], np.int32), None),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("x, axis", UNIQUE)
def test_unique_sorted(dev, x, axis):
    attrs = {"sorted": 1} if axis is None else {"sorted": 1, "axis": axis}
    check_node("Unique", [x], attrs, opset=11, device=dev, outputs=4)


def first_seen_unique(x: np.ndarray, axis: int | None) -> list[np.ndarray]:
    """Unique with sorted=0 from numpy's sorted unique (onnx's reference takes the
    values along axis 0 of the unflattened input, which is wrong elsewhere)."""
    flat = x.reshape(-1) if axis is None else x
    d = 0 if axis is None else axis
    _, first, inverse, counts = np.unique(flat, True, True, True, axis=d)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return [np.take(flat, first[order], axis=d), first[order].astype(np.int64),
            rank[inverse.reshape(-1)].astype(np.int64), counts[order].astype(np.int64)]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("x, axis", UNIQUE)
def test_unique_in_order_of_appearance(dev, x, axis):
    attrs = {"sorted": 0} if axis is None else {"sorted": 0, "axis": axis}
    check_node("Unique", [x], attrs, opset=11, device=dev, outputs=4,
               expected=first_seen_unique(x, axis))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("batch_axis, time_axis", [(1, 0), (0, 1), (2, 0), (0, 2)])
def test_reverse_sequence(dev, batch_axis, time_axis):
    batch, steps = X.shape[batch_axis], X.shape[time_axis]
    lens = RNG.integers(1, steps + 1, batch)
    check_node("ReverseSequence", [X, lens],
               {"batch_axis": batch_axis, "time_axis": time_axis}, opset=10, device=dev)


def test_indexing_ops_on_wgpu():
    dev = wgpu_device()
    check_node("Gather", [X, i64([[0, -1], [3, 1]])], {"axis": 1}, opset=13, device=dev)
    check_node("GatherND", [X, i64([[1, 2], [0, 0], [3, 1]])], {"batch_dims": 1}, opset=13,
               device=dev)
    check_node("TopK", [X, i64([2])], {"axis": 1}, opset=11, device=dev, outputs=2)
    check_node("NonZero", [np.array([[1, 0], [0, 3]], np.int32)], opset=13, device=dev)
