"""The ONNX sequence and optional operators (pyburn/onnx/ops/sequence.py) against onnx's
reference: the sequences are built inside the reference graph from tensor inputs, and on the
pyburn side are plain lists."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator

import pyburn
from pyburn.onnx import ops

from .helpers import DEVICES, assert_matches, to_pyburn, wgpu_device

RNG = np.random.default_rng(4)
A, B, C = (RNG.standard_normal((2, k)).astype(np.float32) for k in (3, 1, 2))
OPSET = 18


def i64(value) -> np.ndarray:
    return np.array(value, dtype=np.int64)


def call(op_type: str, *inputs: Any, device: Any, **attrs: Any) -> Any:
    """pyburn's registered `op_type` on inputs (numpy arrays become tensors on `device`)."""
    spec = ops.lookup(op_type, OPSET)
    assert spec is not None, op_type
    if "device" in spec.given:
        attrs["device"] = device
    args = [to_pyburn(x, device) if isinstance(x, np.ndarray) else x for x in inputs]
    return spec.fn(*args, **attrs)


def reference(nodes: list, feeds: dict[str, np.ndarray]) -> Any:
    """The last node's first output through onnx's reference (a list for a sequence)."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
         for n, a in feeds.items()],
        [helper.make_empty_tensor_value_info(nodes[-1].output[0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


def construct(*names: str) -> Any:
    return helper.make_node("SequenceConstruct", list(names), ["seq"])


def assert_sequence(got: list, want: list, device) -> None:
    assert isinstance(got, list) and len(got) == len(want)
    for g, w in zip(got, want):
        assert_matches(g, np.asarray(w), device)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("position", [None, 0, 1, 2, -1, -2])
def test_sequence_insert(dev, position):
    device = pyburn.device(dev)
    feeds = {"a": A, "b": B, "c": C}
    inputs = ["seq", "c"] + ([] if position is None else ["p"])
    if position is not None:
        feeds["p"] = i64(position)
    want = reference([construct("a", "b"), helper.make_node("SequenceInsert", inputs, ["y"])],
                     feeds)
    if position == 2:  # onnx's reference wraps the end position round to the front
        want = [A, B, C]
    seq = call("SequenceConstruct", A, B, device=device)
    got = call("SequenceInsert", seq, C, None if position is None else i64(position),
               device=device)
    assert_sequence(got, want, device)
    assert len(seq) == 2  # the input sequence is left as it was


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("op_type, position", [
    ("SequenceAt", 0), ("SequenceAt", 2), ("SequenceAt", -2), ("SequenceErase", None),
    ("SequenceErase", 0), ("SequenceErase", -2), ("SequenceLength", None)])
def test_sequence_at_erase_length(dev, op_type, position):
    device = pyburn.device(dev)
    feeds = {"a": A, "b": B, "c": C}
    inputs = ["seq"] + ([] if position is None else ["p"])
    if position is not None:
        feeds["p"] = i64(position)
    want = reference([construct("a", "b", "c"), helper.make_node(op_type, inputs, ["y"])],
                     feeds)
    seq = call("SequenceConstruct", A, B, C, device=device)
    got = call(op_type, seq, *([] if position is None else [i64(position)]), device=device)
    if isinstance(want, list):
        assert_sequence(got, want, device)
    else:
        assert_matches(got, np.asarray(want), device)


def test_sequence_at_refuses_a_position_out_of_range():
    with pytest.raises(pyburn.IndexOutOfRange):
        call("SequenceAt", [to_pyburn(A, "flex")], i64(1), device=pyburn.device("flex"))


@pytest.mark.parametrize("dev", DEVICES)
def test_sequence_empty_has_length_zero(dev):
    device = pyburn.device(dev)
    empty = call("SequenceEmpty", device=device)
    assert empty == []
    assert_matches(call("SequenceLength", empty, device=device), i64(0), device)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("split, attrs", [
    (None, {}), (None, {"keepdims": 0, "axis": 1}), (i64(2), {"axis": 1}),
    (i64([1, 2, 3]), {"axis": 1}), (i64(1), {"axis": 0}), (i64([2, 4]), {"axis": -1})])
def test_split_to_sequence(dev, split, attrs):
    device = pyburn.device(dev)
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    feeds = {"x": x} if split is None else {"x": x, "s": split}
    node = helper.make_node("SplitToSequence", list(feeds), ["y"], **attrs)
    got = call("SplitToSequence", x, split, device=device, **attrs)
    assert_sequence(got, reference([node], feeds), device)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("axis, new_axis", [(1, 0), (-1, 0), (0, 1), (2, 1), (-1, 1), (-3, 1)])
def test_concat_from_sequence(dev, axis, new_axis):
    device = pyburn.device(dev)
    parts = [A, A * 2] if new_axis else [A, B, C]
    feeds = dict(zip("abc", parts))
    node = helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=axis, new_axis=new_axis)
    want = reference([construct(*feeds), node], feeds)
    got = call("ConcatFromSequence", call("SequenceConstruct", *parts, device=device),
               axis=axis, new_axis=new_axis, device=device)
    assert_matches(got, want, device)


@pytest.mark.parametrize("dev", DEVICES)
def test_optionals(dev):
    device = pyburn.device(dev)
    x = to_pyburn(A, device)
    assert call("Optional", x, device=device) is x
    assert call("Optional", device=device) is None
    assert call("OptionalHasElement", x, device=device).tolist() is True
    assert call("OptionalHasElement", None, device=device).tolist() is False
    assert call("OptionalHasElement", [x], device=device).dtype is pyburn.bool
    assert call("OptionalGetElement", [x], device=device) == [x]
    with pytest.raises(pyburn.ArgumentError):
        call("OptionalGetElement", None, device=device)


def test_sequence_ops_on_wgpu():
    device = wgpu_device()
    seq = call("SplitToSequence", A, i64([1, 2]), device=device, axis=1)
    assert_sequence(seq, [A[:, :1], A[:, 1:]], device)
    assert_matches(call("SequenceLength", seq, device=device), i64(2), device)
    assert_matches(call("ConcatFromSequence", seq, axis=1, device=device), A, device)
