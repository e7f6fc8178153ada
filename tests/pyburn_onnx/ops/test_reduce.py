"""The ONNX reductions and scans (pyburn/onnx/ops/reduce.py) against onnx's reference."""

from __future__ import annotations

import numpy as np
import pytest

from .helpers import DEVICES, check_node, wgpu_device

RNG = np.random.default_rng(0)
X = (RNG.uniform(0.5, 2.0, (2, 3, 4)) * RNG.choice([-1, 1], (2, 3, 4))).astype(np.float32)
POSITIVE = np.abs(X)
INTS = RNG.integers(-5, 6, (2, 3, 4)).astype(np.int32)
EMPTY = np.zeros((2, 0, 4), np.float32)

REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
AXES = [None, [0], [1], [-1], [0, 2], [-3, -2, -1]]


def _data(op: str) -> np.ndarray:
    return POSITIVE if op == "ReduceLogSum" else X


def _axes_input_opset(op: str) -> int:
    return 13 if op == "ReduceSum" else 18


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_attribute(dev, op, axes, keepdims):
    attrs = {"keepdims": keepdims} | ({} if axes is None else {"axes": axes})
    check_node(op, [_data(op)], attrs, opset=11, device=dev, rtol=2e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", AXES + [[]], ids=str)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_input(dev, op, axes, keepdims):
    inputs = [_data(op)] + ([] if axes is None else [np.array(axes, np.int64)])
    check_node(op, inputs, {"keepdims": keepdims}, opset=_axes_input_opset(op), device=dev,
               rtol=2e-5)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [None, []], ids=str)
def test_reduce_noop_with_empty_axes(dev, op, axes):
    inputs = [_data(op)] + ([] if axes is None else [np.array(axes, np.int64)])
    check_node(op, inputs, {"noop_with_empty_axes": 1}, opset=_axes_input_opset(op),
               device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", [op for op in REDUCE if op != "ReduceMean"])
def test_reduce_empty_set(dev, op):
    check_node(op, [EMPTY, np.array([1], np.int64)], {"keepdims": 1}, opset=20, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"])
def test_reduce_ints_and_bools(dev, op):
    check_node(op, [INTS, np.array([1], np.int64)], {"keepdims": 0}, opset=20, device=dev)
    if op in ("ReduceMax", "ReduceMin"):
        check_node(op, [INTS > 0, np.array([2], np.int64)], opset=20, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reduce(dev, op, axis, keepdims, last):
    ties = np.round(X)  # repeated extremes tell first from last
    check_node(op, [ties], {"axis": axis, "keepdims": keepdims, "select_last_index": last},
               opset=13, device=dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op, opset", [("CumSum", 14), ("CumProd", 26)])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
def test_scan(dev, op, opset, axis, exclusive, reverse):
    for x in (X, INTS):
        check_node(op, [x, np.array(axis, np.int32)], {"exclusive": exclusive,
                                                       "reverse": reverse},
                   opset=opset, device=dev)


def test_wgpu_subset():
    dev = wgpu_device()
    check_node("ReduceSum", [X, np.array([1], np.int64)], opset=13, device=dev)
    check_node("ReduceLogSumExp", [X], {"axes": [0, 2]}, opset=13, device=dev)
    check_node("ReduceMax", [EMPTY, np.array([1], np.int64)], opset=18, device=dev)
    check_node("ArgMax", [np.round(X)], {"axis": 1, "select_last_index": 1}, opset=13,
               device=dev)
    check_node("CumSum", [X, np.array(1, np.int32)], {"exclusive": 1, "reverse": 1}, opset=14,
               device=dev)
