"""The ONNX slicing, joining and padding operators (pyburn/onnx/ops/slicing.py) against
onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyburn

from .helpers import DEVICES, check_node, run_pyburn, wgpu_device

RNG = np.random.default_rng(1)
X = RNG.standard_normal((4, 5, 6)).astype(np.float32)
BIG, SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


SLICES = [  # starts, ends, axes, steps
    ([1], [3], None, None),
    ([0, 1], [2, 4], [0, 2], None),
    ([-3], [-1], [-1], None),
    ([1, 0], [BIG, 2], [1, 0], [2, 1]),
    ([SMALL], [BIG], [2], [3]),
    ([BIG], [SMALL], [1], [-1]),
    ([-1], [0], [0], [-1]),
    ([4], [-100], [2], [-2]),
    ([10], [20], [0], None),
    ([3], [1], [1], None),
    ([0, 0, 5], [4, 5, 0], [0, 1, 2], [-1, 2, -2]),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
def test_slice(dev, starts, ends, axes, steps):
    inputs = [X, i64(*starts), i64(*ends)]
    inputs.append(None if axes is None else i64(*axes))
    inputs.append(None if steps is None else i64(*steps))
    check_node("Slice", inputs, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("starts, ends, axes", [([1], [3], None), ([0, -2], [2, BIG], [2, 0])])
def test_slice_attributes_before_opset_10(dev, starts, ends, axes):
    attrs = {"starts": starts, "ends": ends}
    if axes is not None:
        attrs["axes"] = axes
    check_node("Slice", [X], attrs, opset=9, device=dev)


def test_slice_refuses_a_zero_step():
    with pytest.raises(pyburn.ArgumentError):
        run_pyburn("Slice", [X, i64(0), i64(2), i64(0), i64(0)], {}, opset=13, device="flex")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis, split", [(0, [1, 3]), (1, [2, 0, 3]), (-1, [6])])
def test_split_sizes(dev, axis, split):
    n = len(split)
    check_node("Split", [X, i64(*split)], {"axis": axis}, opset=13, device=dev, outputs=n)
    check_node("Split", [X], {"axis": axis, "split": split}, opset=11, device=dev, outputs=n)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis, num_outputs", [(0, 2), (1, 3), (2, 4), (-1, 6)])
def test_split_num_outputs_leaves_a_smaller_last_piece(dev, axis, num_outputs):
    check_node("Split", [X], {"axis": axis, "num_outputs": num_outputs}, opset=18,
               device=dev, outputs=num_outputs)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_concat(dev, axis):
    parts = [RNG.standard_normal(tuple(k + 1 if d == axis % 3 else s
                                       for d, s in enumerate((2, 3, 4)))).astype(np.float32)
             for k in range(3)]
    check_node("Concat", parts, {"axis": axis}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_concat_with_an_empty_input(dev):
    parts = [np.ones((2, 0), np.int64), np.arange(6, dtype=np.int64).reshape(2, 3)]
    check_node("Concat", parts, {"axis": 1}, opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("repeats", [(1, 1, 1), (2, 1, 3), (1, 0, 2)])
def test_tile(dev, repeats):
    check_node("Tile", [X[:2, :3, :2], i64(*repeats)], opset=13, device=dev)


PADS = [  # pads, axes
    ([0, 1, 2, 1, 0, 3], None),
    ([1, 0, 0, 2, 2, 1], None),
    ([2, 3], [1]),
    ([1, 1, 2, 0], [-1, 0]),
]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads, axes", PADS)
def test_pad(dev, mode, pads, axes):
    inputs = [X, i64(*pads), np.array(1.5, np.float32) if mode == "constant" else None]
    if axes is not None:
        inputs.append(i64(*axes))
    check_node("Pad", inputs, {"mode": mode}, opset=19, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_attributes_before_opset_11(dev, mode):
    check_node("Pad", [X], {"mode": mode, "pads": [1, 0, 2, 0, 3, 1], "value": 2.0}, opset=10,
               device=dev)


@pytest.mark.parametrize("dev", DEVICES)
def test_pad_reflects_again_past_the_size(dev):
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    check_node("Pad", [x, i64(5, 0, 4, 7)], {"mode": "reflect"}, opset=18, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_negative_pads_crop(dev, mode):
    # numpy (and so onnx's reference) cannot crop: crop, then pad what remains
    pads = [-1, 2, 0, -2]  # (dim0 begin, dim1 begin, dim0 end, dim1 end)
    inputs = [X[0], i64(*pads)]
    cropped = X[0][1:, :-2]
    want = check_node("Pad", [cropped, i64(0, 2, 0, 0)], {"mode": mode}, opset=19, device=dev)
    check_node("Pad", inputs, {"mode": mode}, opset=19, device=dev,
               expected=[want[0].numpy()])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("shape, axes", [
    ((2, 7, 3), None), ((6, 5, 9), None), ((3, 8), [0, 2]), ((7,), [-2])])
def test_center_crop_pad(dev, shape, axes):
    check_node("CenterCropPad", [X, i64(*shape)], {} if axes is None else {"axes": axes},
               opset=18, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis, condition", [
    (None, [0, 1, 1, 0, 1]), (0, [1, 0, 1, 1]), (1, [0, 1]), (-1, [1, 0, 0, 1, 1, 0])])
def test_compress(dev, axis, condition):
    attrs = {} if axis is None else {"axis": axis}
    check_node("Compress", [X, np.array(condition, bool)], attrs, opset=11, device=dev)


def test_slicing_ops_on_wgpu():
    dev = wgpu_device()
    # (int64 inputs hold as int32 there, so the INT64_MAX/MIN cases run on cpu and flex)
    check_node("Slice", [X, i64(100, 1), i64(-100, 4), i64(1, 2), i64(-2, 1)], opset=13,
               device=dev)
    check_node("Split", [X, i64(2, 3)], {"axis": 1}, opset=13, device=dev, outputs=2)
    check_node("Pad", [X, i64(0, 1, 2, 1, 0, 3)], {"mode": "reflect"}, opset=13, device=dev)
    check_node("Concat", [X, X], {"axis": -1}, opset=13, device=dev)
