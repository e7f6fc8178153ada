"""Damaged and malformed models: each problem raises `pyburn.FormatError` saying where (the
byte offset and field, or the node), and random damage never lets anything else escape."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import pyburn
from pyburn.onnx import ir, proto
from pyburn.onnx.proto import codec

from .reference import MODELS


def _case(name: str) -> bytes:
    path = next(p for p in MODELS if f"/{name}/" in p)
    with open(path, "rb") as f:
        return f.read()


def _use(model: ir.Model) -> None:
    """Read every constant of a model that was read without error (lazy data included)."""
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for t in graph.initializers.values():
            t.data()
        for node in graph.nodes:
            for value in node.attrs.values():
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, ir.TensorData):
                        v.data()
                    elif isinstance(v, ir.Graph):
                        graphs.append(v)


def test_truncation_at_every_byte():
    data = _case("test_conv_with_strides_and_asymmetric_padding")
    offsets = 0
    for n in range(len(data)):
        try:
            _use(proto.read_model(data[:n]))
        except pyburn.FormatError as exc:
            offsets += " at byte " in str(exc)
    # a cut between two fields leaves a shorter valid message (a graph with fewer inputs,
    # a model with no graph); every other cut is named with its offset
    assert offsets > 0.9 * len(data)


def test_a_bad_length_inside_a_tensor_names_the_field():
    model = helper.make_model(helper.make_graph(
        [], "g", [], [], [numpy_helper.from_array(np.zeros(64, np.float32), "w")]))
    data = bytearray(model.SerializeToString())
    at = data.index(b"\x4a\x80\x02") + 1  # raw_data (field 9): 256 bytes
    data[at] = 0x81  # now 257
    with pytest.raises(pyburn.FormatError, match=rf"length 257 runs past the end of the "
                                                 rf".* at byte {at} in TensorProto\.raw_data "
                                                 rf"\(ModelProto\.graph\.initializer\[0\]"
                                                 rf"\.raw_data\)"):
        proto.read_model(bytes(data))


@pytest.mark.parametrize("tensor, match", [
    (onnx.TensorProto(data_type=1, dims=[2], raw_data=bytes(4)),
     "raw_data holds 4 bytes, but float32 of that shape takes 8"),
    (onnx.TensorProto(data_type=1, dims=[3], float_data=[1, 2]),
     "holds 2 values in float_data, but float32 of shape \\[3\\] needs 3 float_data values"),
    (onnx.TensorProto(data_type=7, dims=[1]), "holds no data, but int64 of shape \\[1\\] needs 1"),
    (onnx.TensorProto(data_type=99, dims=[1]), "has data type 99, which ONNX does not define"),
    (onnx.TensorProto(dims=[1], float_data=[1]), "has no data type"),
    (onnx.TensorProto(data_type=1, dims=[-1]), "negative dimensions \\[-1\\]"),
    (onnx.TensorProto(data_type=8, dims=[2], string_data=[b"a"]),
     "string_data holds 1 strings, but the shape \\[2\\] has 2 elements"),
    (onnx.TensorProto(data_type=1, dims=[1], raw_data=bytes(4),
                      segment=onnx.TensorProto.Segment(begin=0, end=1)), "segment"),
])
def test_bad_constants_name_their_node(tensor, match):
    node = helper.make_node("Constant", [], ["c_out"], name="c", value=tensor)
    data = helper.make_model(helper.make_graph([node], "g", [], [])).SerializeToString()
    with pytest.raises(pyburn.FormatError, match="Constant node 'c', attribute 'value': "
                                                 f"tensor ''.*{match}"):
        proto.read_model(data)


def test_bad_attributes_and_graphs():
    bad_type = onnx.NodeProto()  # an attribute type onnx's Python classes refuse to set
    bad_type.ParseFromString(b"".join(codec.encode("NodeProto", {
        "input": ["x"], "output": ["y"], "name": "r", "op_type": "Relu",
        "attribute": [{"name": "a", "type": 42}]}).chunks()))
    no_value = helper.make_node("If", ["x"], ["y"])
    no_value.attribute.add(name="then_branch", type=onnx.AttributeProto.GRAPH)
    twice = helper.make_node("Relu", ["x"], ["z"], alpha=1.0)
    twice.attribute.append(helper.make_attribute("alpha", 2.0))
    init = numpy_helper.from_array(np.float32([1]), "w")
    for nodes, inits, match in [
        ([bad_type], [], "Relu node 'r', attribute 'a': it has type 42, which ONNX does not "
                         "define"),
        ([no_value], [], "If node 'y', attribute 'then_branch': it has type GRAPH but holds "
                         "no value"),
        ([twice], [], "Relu node 'z' has two attributes named 'alpha'"),
        ([], [init, init], "graph 'g' has two initializers named 'w'"),
    ]:
        data = helper.make_model(helper.make_graph(nodes, "g", [], [], inits))
        with pytest.raises(pyburn.FormatError, match=match):
            proto.read_model(data.SerializeToString())
    with pytest.raises(pyburn.FormatError, match="the model has no graph"):
        proto.read_model(b"")


def test_random_damage_lets_only_format_errors_escape():
    """Byte flips, insertions, deletions, truncations and duplicated runs over real models
    (seeded): reading either works or raises a PyburnError."""
    sources = [_case(name) for name in ("test_conv_with_strides_padding", "test_if",
                                        "test_loop11", "test_string_split_basic",
                                        "test_constant", "test_scan9_sum",
                                        "test_dequantizelinear_int4")]
    rng = random.Random(20260101)
    outcomes = {"read": 0, "refused": 0}
    for case in range(4000):
        data = bytearray(sources[case % len(sources)])
        for _ in range(rng.choice((1, 1, 2, 4))):
            _damage(data, rng)
        try:
            _use(proto.read_model(bytes(data)))
            outcomes["read"] += 1
        except pyburn.PyburnError:
            outcomes["refused"] += 1
    assert outcomes["read"] > 100 and outcomes["refused"] > 1000, outcomes


def _damage(data: bytearray, rng: random.Random) -> None:
    at = rng.randrange(len(data) + 1)
    kind = rng.randrange(5)
    if kind == 0 and at < len(data):
        data[at] ^= 1 << rng.randrange(8)
    elif kind == 1:
        data[at:at] = bytes([rng.choice((0x00, 0x7F, 0x80, 0xFF, rng.randrange(256)))])
    elif kind == 2:
        del data[at:at + rng.randrange(1, 4)]
    elif kind == 3:
        del data[at:]
    else:
        data[at:at] = data[rng.randrange(len(data) + 1):][:rng.randrange(1, 16)]
