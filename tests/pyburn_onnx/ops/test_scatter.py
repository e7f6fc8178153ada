"""The ONNX scatter operators and Col2Im (pyburn/onnx/ops/scatter.py) against onnx's
reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(3)
DATA = RNG.standard_normal((3, 4, 5)).astype(np.float32)
REDUCTIONS = ["none", "add", "mul", "max", "min"]


def i64(values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def unique_indices(shape: tuple[int, ...], axis: int, size: int) -> np.ndarray:
    """Indices along `axis` with no repeats within a line (defined for every reduction)."""
    lines = np.argsort(RNG.random(shape[:axis] + (size,) + shape[axis + 1:]), axis=axis)
    return np.take(lines, range(shape[axis]), axis=axis) - RNG.integers(0, 2) * size


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_scatter_elements(dev, reduction, axis):
    d = axis % DATA.ndim
    shape = tuple(2 if k == d else s for k, s in enumerate(DATA.shape))
    indices = unique_indices(shape, d, DATA.shape[d])
    updates = RNG.standard_normal(shape).astype(np.float32)
    check_node("ScatterElements", [DATA, indices, updates],
               {"axis": axis, "reduction": reduction}, opset=18, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_elements_combines_repeated_indices(dev, reduction):
    data = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]], np.float32)
    indices = i64([[1, 1, -4, 3, 1, 3]])
    updates = np.array([[1.5, -2.0, 3.0, 0.5, 4.0, 9.0]], np.float32)
    check_node("ScatterElements", [data, indices, updates],
               {"axis": 1, "reduction": reduction}, opset=18, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_scatter_is_scatter_elements(dev):
    indices = i64([[1, 0, 2], [0, 2, 1]])
    updates = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
    data = np.zeros((3, 3), np.int64)
    want = check_node("ScatterElements", [data, indices, updates], {"axis": 1}, opset=11,
                      device=dev)
    # onnx's reference has no Scatter
    check_node("Scatter", [data, indices, updates], {"axis": 1}, opset=10, device=dev,
               expected=[want[0].numpy()])


def test_scatter_elements_refuses_an_index_out_of_range():
    with pytest.raises(pyburn.IndexOutOfRange):
        run_pyburn("ScatterElements", [DATA[0], i64([[4]]), DATA[0, :1, :1]], {"axis": 0},
                   opset=13, device="flex")


ND_CASES = [  # data shape, indices
    ((4, 3), [[1], [3]]),
    ((4, 3), [[1, 2], [0, 0], [3, -1]]),
    ((2, 3, 4), [[[0, 1], [1, 2]], [[1, 0], [0, -3]]]),
    ((5,), [[4], [0], [-2]]),
    ((2, 3), [[]]),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape, indices", ND_CASES)
def test_scatter_nd(dev, reduction, shape, indices):
    data = RNG.standard_normal(shape).astype(np.float32)
    indices = i64(indices).reshape(np.array(indices).shape[:-1] + (-1,))
    k = indices.shape[-1]
    updates = RNG.standard_normal(indices.shape[:-1] + shape[k:]).astype(np.float32)
    usable = reduction in ("none", "add", "mul") and indices.min(initial=0) >= 0 and k
    check = check_node if usable else _check_against_numpy
    check("ScatterND", [data, indices, updates], {"reduction": reduction}, opset=18, device=dev)


def _check_against_numpy(op: str, inputs: list, attrs: dict, *, opset: int, device) -> None:
    """onnx's reference ScatterND fails on negative indices, on empty index rows and for
    max/min on most shapes: the expected values come from numpy."""
    data, indices, updates = inputs
    out = data.copy()
    combine = {"none": lambda a, b: b, "add": np.add, "mul": np.multiply, "max": np.maximum,
               "min": np.minimum}[attrs["reduction"]]
    for pos in np.ndindex(indices.shape[:-1]):
        target = tuple(indices[pos])
        out[target] = combine(out[target], updates[pos])
    check_node(op, inputs, attrs, opset=opset, device=device, expected=[out])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_combines_repeated_indices(dev, reduction):
    data = RNG.standard_normal((4, 2)).astype(np.float32)
    indices = i64([[1], [3], [1], [1], [0]])
    updates = RNG.standard_normal((5, 2)).astype(np.float32)
    check_node("ScatterND", [data, indices, updates], {"reduction": reduction}, opset=18,
               device=dev)


COL2IM = [  # image, block, attributes
    ((5, 5), (1, 5), {}),
    ((6, 5), (2, 2), {"strides": [2, 1]}),
    ((5, 6), (2, 3), {"dilations": [2, 1]}),
    ((4, 5), (3, 2), {"pads": [1, 0, 2, 1]}),
    ((3, 4, 5), (2, 1, 2), {"strides": [1, 2, 2], "pads": [0, 1, 1, 1, 0, 1]}),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("image, block, attrs", COL2IM)
def test_col2im(dev, image, block, attrs):
    n = len(image)
    pads = attrs.get("pads", [0] * 2 * n)
    strides, dilations = attrs.get("strides", [1] * n), attrs.get("dilations", [1] * n)
    counts = [(image[i] + pads[i] + pads[n + i] - dilations[i] * (block[i] - 1) - 1)
              // strides[i] + 1 for i in range(n)]
    x = RNG.standard_normal((2, 3 * int(np.prod(block)), int(np.prod(counts))))
    check_node("Col2Im", [x.astype(np.float32), i64(image), i64(block)], attrs, opset=18,
               device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis, write", [(-2, None), (-2, [0, 3]), (1, [2, 1]), (2, [1, 0])])
def test_tensor_scatter(dev, mode, axis, write):
    # (onnx's reference, like the spec's pseudocode, also wraps the leading indices round the
    # cache length in circular mode: the leading dims here are shorter, where that is moot)
    cache = RNG.standard_normal((2, 3, 4, 3)).astype(np.float32)
    shape = list(cache.shape)
    shape[axis] = 2
    update = RNG.standard_normal(shape).astype(np.float32)
    if mode == "linear" and write is not None:  # keep the writes inside the cache
        write = [min(w, cache.shape[axis] - 2) for w in write]
    inputs = [cache, update, None if write is None else i64(write)]
    check_node("TensorScatter", inputs, {"axis": axis, "mode": mode}, opset=24, device=dev)


def test_scatter_ops_on_wgpu():
    dev = wgpu_device()
    data = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]], np.float32)
    updates = np.array([[1.5, -2.0, 3.0]], np.float32)
    for reduction in ("add", "max"):
        check_node("ScatterElements", [data, i64([[1, 1, -2]]), updates],
                   {"axis": 1, "reduction": reduction}, opset=18, device=dev)
    check_node("ScatterND", [data.reshape(5, 1), i64([[4], [0]]), updates[:, :2].T],
               {"reduction": "mul"}, opset=18, device=dev)
    check_node("Col2Im", [np.ones((1, 4, 6), np.float32), i64([3, 4]), i64([2, 2])],
               opset=18, device=dev)
