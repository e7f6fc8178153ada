"""pyburn's writer: what it writes is valid to ``onnx.checker`` and reads back, through the
``onnx`` package, as what was read in the first place."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import pyburn
from pyburn.onnx import ir, proto

from .reference import MODELS, assert_model, assert_tensor, case_id, value_files


def test_every_node_suite_model_round_trips_through_onnx():
    for path in MODELS:
        with open(path, "rb") as f:
            original = f.read()
        ours = proto.read_model(original)
        written = onnx.load_from_string(proto.write_model(ours))
        onnx.checker.check_model(written)
        assert_model(ours, written)
        # and reads back as the original (by value: typed tensor fields become raw_data)
        assert_model(proto.read_model(written.SerializeToString()),
                     onnx.load_from_string(original))


def test_a_file_onnx_wrote_is_written_back_byte_for_byte():
    # raw_data everywhere, no empty optional strings: nothing for the reader to normalise
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "w")
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, ["n", 2])],
                              [helper.make_tensor_value_info("y", 1, ["n", 3])], [w])
    data = helper.make_model(graph, producer_name="p").SerializeToString()
    assert proto.write_model(proto.read_model(data)) == data


def test_tensor_files_round_trip():
    for path, kind in value_files()[::7]:
        if kind != "tensor":
            continue
        with open(path, "rb") as f:
            data = f.read()
        ref = onnx.TensorProto()
        ref.ParseFromString(data)
        written = onnx.TensorProto()
        written.ParseFromString(proto.write_tensor(proto.read_tensor(data)))
        assert_tensor(proto.read_tensor(data), written, case_id(path))
        assert_tensor(proto.read_tensor(written.SerializeToString()), ref, case_id(path))


def test_sparse_tensors_stay_sparse():
    values = numpy_helper.from_array(np.float32([1, 2]), "s")
    indices = numpy_helper.from_array(np.int64([0, 3]), "i")
    sparse = helper.make_sparse_tensor(values, indices, [2, 2])
    node = helper.make_node("Constant", [], ["y"], sparse_value=sparse)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", 1, [2, 2])],
                              sparse_initializer=[sparse])
    model = helper.make_model(graph)
    written = onnx.load_from_string(proto.write_model(proto.read_model(
        model.SerializeToString())))
    onnx.checker.check_model(written)
    assert written.graph.sparse_initializer[0] == sparse
    assert written.graph.node[0].attribute[0].sparse_tensor == sparse


def test_attribute_types_from_python_values():
    td = ir.TensorData("t", "int64", (2,), (5).to_bytes(8, "little") * 2)
    body = ir.Graph([], [], [])
    node = ir.Node("Custom", ["x"], ["y"], {
        "int": 3, "flag": True, "float": 0.5, "text": "abc", "raw": b"\x00\xff",
        "ints": [1, -2], "floats": [1, 2.5], "strings": ["a", b"b"], "empty": [],
        "tensor": td, "tensors": [td], "graph": body, "graphs": [body, body],
        "type": ir.ValueInfo("", "float16", (2, "n")), "ref": ir.AttributeRef("outer"),
    })
    graph = ir.Graph([node], [], [])
    written = onnx.load_from_string(proto.write_model(ir.Model(graph, {"": 18})))
    A = onnx.AttributeProto
    attrs = {a.name: a for a in written.graph.node[0].attribute}
    assert {k: a.type for k, a in attrs.items() if k != "ref"} == {
        "int": A.INT, "flag": A.INT, "float": A.FLOAT, "text": A.STRING, "raw": A.STRING,
        "ints": A.INTS, "floats": A.FLOATS, "strings": A.STRINGS, "empty": A.INTS,
        "tensor": A.TENSOR, "tensors": A.TENSORS, "graph": A.GRAPH, "graphs": A.GRAPHS,
        "type": A.TYPE_PROTO}
    assert attrs["flag"].i == 1 and list(attrs["floats"].floats) == [1.0, 2.5]
    assert attrs["raw"].s == b"\x00\xff" and list(attrs["strings"].strings) == [b"a", b"b"]
    assert numpy_helper.to_array(attrs["tensor"].t).tolist() == [5, 5]
    assert attrs["ref"].ref_attr_name == "outer"
    assert attrs["type"].tp == helper.make_tensor_type_proto(onnx.TensorProto.FLOAT16,
                                                             [2, "n"])


@pytest.mark.parametrize("attrs, message", [
    ({"bad": object()}, "Custom node 'y': attribute 'bad' holds"),
    ({"mixed": [1, "a"]}, "attribute 'mixed' holds"),
    ({"t": ir.TensorData("t", "float32", (2,), b"1234")}, "takes 8 bytes, but it holds 4"),
    ({"t": ir.TensorData("t", "float33", (1,), b"1234")}, "'float33', which is not an ONNX"),
])
def test_unwritable_values_say_what_and_where(attrs, message):
    model = ir.Model(ir.Graph([ir.Node("Custom", [], ["y"], attrs)], [], []), {"": 18})
    with pytest.raises(pyburn.ArgumentError, match=message):
        proto.write_model(model)


def test_save_model_is_atomic_and_loads_back(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    source = MODELS[100]
    model = proto.load_model(source)
    proto.save_model(model, path)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx"]  # no temporary file left behind
    onnx.checker.check_model(str(path))
    assert_model(proto.load_model(path), onnx.load(source))


def test_save_with_external_data(tmp_path):
    big = numpy_helper.from_array(np.arange(3000, dtype=np.float32).reshape(30, 100), "big")
    small = numpy_helper.from_array(np.float32([1, 2]), "small")
    node = helper.make_node("Add", ["big", "small"], ["y"])
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", 1, [30, 100])],
                              [big, small])
    model = helper.make_model(graph)
    proto.save_model(proto.read_model(model.SerializeToString()), tmp_path / "m.onnx",
                     external_data="weights.bin", threshold=1024)
    assert (tmp_path / "weights.bin").stat().st_size == 12000
    loaded = onnx.load(str(tmp_path / "m.onnx"))  # onnx reads the external file itself
    onnx.checker.check_model(loaded)
    assert_model(proto.load_model(tmp_path / "m.onnx"), loaded)
    assert loaded.graph.initializer[1].HasField("raw_data")  # under the threshold: inline
    # saving a model whose data is still in its external file reads it while writing
    proto.save_model(proto.load_model(tmp_path / "m.onnx"), tmp_path / "copy.onnx")
    assert_model(proto.load_model(tmp_path / "copy.onnx"), loaded)


def test_a_model_past_two_gigabytes_needs_external_data():
    def never() -> bytes:
        raise AssertionError("no data should be read to find the size")

    huge = ir.TensorData("w", "float32", (1 << 29,), load=never)  # 2 GiB of float32
    model = ir.Model(ir.Graph([], [], [], {"w": huge}), {"": 18})
    with pytest.raises(pyburn.ArgumentError, match="past protobuf's limit of 2 GiB"):
        proto.write_model(model)
