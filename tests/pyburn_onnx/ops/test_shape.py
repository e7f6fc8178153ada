"""The ONNX shape operators (pyburn/onnx/ops/shape.py) against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape, allowzero", [
    ((4, 6), 0), ((-1, 4), 0), ((0, -1), 0), ((2, 0, 4), 0), ((24,), 0),
    ((1, -1, 2, 1), 0), ((2, 12), 1)])
def test_reshape(dev, shape, allowzero):
    check_node("Reshape", [X, i64(*shape)], {"allowzero": allowzero}, opset=14, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_reshape_allowzero_keeps_a_literal_zero(dev):
    empty = np.zeros((0, 3, 4), np.float32)
    check_node("Reshape", [empty, i64(3, 4, 0)], {"allowzero": 1}, opset=14, device=dev)


def test_reshape_refuses_zero_with_minus_one_under_allowzero():
    with pytest.raises(pyburn.ShapeError):
        run_pyburn("Reshape", [X, i64(0, -1)], {"allowzero": 1}, opset=14, device="flex")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1, -3])
def test_flatten(dev, axis):
    check_node("Flatten", [X], {"axis": axis}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axes", [None, [0], [-1], [0, 2]])
def test_squeeze(dev, axes):
    x = RNG.standard_normal((1, 3, 1)).astype(np.float32)
    check_node("Squeeze", [x, None if axes is None else i64(*axes)], opset=13, device=dev)
    check_node("Squeeze", [x], {} if axes is None else {"axes": axes}, opset=11, device=dev)


def test_squeeze_refuses_a_dim_that_is_not_one():
    with pytest.raises(pyburn.ShapeError):
        run_pyburn("Squeeze", [X, i64(1)], {}, opset=13, device="flex")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axes", [[0], [3], [-1], [1, 0], [0, 4], [-1, -5], [2, 0, 4]])
def test_unsqueeze(dev, axes):
    check_node("Unsqueeze", [X, i64(*axes)], opset=13, device=dev)
    # onnx's reference inserts the attribute's axes one by one (wrong for unsorted axes);
    # the spec, like opset 13, places them in the output
    check_node("Unsqueeze", [X], {"axes": axes}, opset=11, device=dev,
               expected=[np.expand_dims(X, tuple(axes))])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1], [1, 0, 2]])
def test_transpose(dev, perm):
    check_node("Transpose", [X], {} if perm is None else {"perm": perm}, opset=13,
               device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("x_shape, shape", [
    ((3, 1), (2, 1, 6)), ((3, 1), (3, 4)), ((1, 4), (1,)), ((2, 3, 4), (1, 1)), ((3,), ())])
def test_expand_is_bidirectional(dev, x_shape, shape):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    check_node("Expand", [x, i64(*shape)], opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space(dev, mode):
    x = RNG.standard_normal((2, 8, 2, 3)).astype(np.float32)
    check_node("DepthToSpace", [x], {"blocksize": 2, "mode": mode}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_space_to_depth(dev):
    x = RNG.standard_normal((2, 2, 4, 6)).astype(np.float32)
    check_node("SpaceToDepth", [x], {"blocksize": 2}, opset=13, device=dev)


def test_shape_ops_on_wgpu():
    dev = wgpu_device()
    check_node("Reshape", [X, i64(0, -1)], opset=14, device=dev)
    check_node("Transpose", [X], {"perm": [2, 0, 1]}, opset=13, device=dev)
    check_node("Expand", [X[:, :1], i64(2, 1, 3, 4)], opset=13, device=dev)
    check_node("DepthToSpace", [np.arange(32, dtype=np.float32).reshape(1, 8, 2, 2)],
               {"blocksize": 2, "mode": "CRD"}, opset=13, device=dev)
