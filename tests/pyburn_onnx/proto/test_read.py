"""pyburn's reader against the ``onnx`` package on real files: every model and every test
value of the ONNX node test suite, and tensors in every data type and storage field."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from pyburn.onnx import ir, proto

from .reference import (
    MODELS,
    array_of,
    assert_array,
    assert_model,
    assert_sparse,
    assert_tensor,
    case_id,
    sample,
    value_files,
)

SAMPLE = sample(MODELS, 200)


@pytest.mark.parametrize("path", SAMPLE, ids=case_id)
def test_node_suite_model_matches_onnx(path):
    with open(path, "rb") as f:
        data = f.read()
    assert_model(proto.read_model(data), onnx.load_from_string(data))


def test_every_node_suite_model_matches_onnx():
    assert len(MODELS) == 1765
    for path in MODELS:
        assert_model(proto.load_model(path), onnx.load(path))


def test_load_model_reads_the_same_as_read_model():
    for path in SAMPLE[:50]:
        with open(path, "rb") as f:
            assert_model(proto.load_model(path), onnx.load_from_string(f.read()))


VALUE_FILES = value_files()


def _reference_value(path: str, kind: str):
    message = {"tensor": onnx.TensorProto, "sequence": onnx.SequenceProto,
               "optional": onnx.OptionalProto}[kind]()
    with open(path, "rb") as f:
        message.ParseFromString(f.read())
    return message


def _assert_value(ours, message, where: str) -> None:
    if isinstance(message, onnx.TensorProto):
        assert_tensor(ours, message, where)
    elif isinstance(message, onnx.SequenceProto):
        assert isinstance(ours, list) and len(ours) == len(message.tensor_values), where
        for i, (v, t) in enumerate(zip(ours, message.tensor_values)):
            assert_tensor(v, t, f"{where}[{i}]")
    else:
        if message.HasField("tensor_value"):
            _assert_value(ours, message.tensor_value, where)
        elif message.HasField("sequence_value"):
            _assert_value(ours, message.sequence_value, where)
        else:
            assert ours is None, where


def test_every_tensor_file_matches_numpy_helper():
    tensors = [path for path, kind in VALUE_FILES if kind == "tensor"]
    assert len(tensors) > 5900
    for path in tensors:
        with open(path, "rb") as f:
            ours = proto.read_tensor(f.read())
        _assert_value(ours, _reference_value(path, "tensor"), case_id(path))


def test_every_sequence_and_optional_file_matches_onnx():
    others = [(path, kind) for path, kind in VALUE_FILES if kind != "tensor"]
    assert len(others) == 57
    for path, kind in others:
        with open(path, "rb") as f:
            ours = proto.read_value(f.read(), kind)
        _assert_value(ours, _reference_value(path, kind), case_id(path))


# ---- every data type, in raw_data and in its typed field -----------------------------------
def _typed_tensor(code: int, dims: tuple[int, ...], rng: np.random.Generator
                  ) -> onnx.TensorProto:
    """A TensorProto of type `code` whose values sit in the typed field helper uses."""
    n = int(np.prod(dims))
    name = onnx.TensorProto.DataType.Name(code)
    if code == onnx.TensorProto.STRING:
        return helper.make_tensor("t", code, dims, [f"s{i}é".encode() for i in range(n)])
    if name.startswith(("COMPLEX",)):
        values = rng.normal(size=n) + 1j * rng.normal(size=n)
    elif name in ("BOOL",):
        values = rng.integers(0, 2, n).astype(bool)
    elif name.startswith(("UINT", "INT")):
        bits = int("".join(c for c in name if c.isdigit()))
        signed = name.startswith("INT")
        low, high = (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)
        values = rng.integers(low, high, n, dtype=np.uint64 if name == "UINT64" else np.int64,
                              endpoint=True)
    else:  # the float types: values each type can hold, plus a zero and a negative
        values = (rng.normal(size=n) * 4).astype(np.float32)
    return helper.make_tensor("t", code, dims, values.tolist() if name != "BOOL" else values)


CODES = [c for c in onnx.TensorProto.DataType.values() if c != onnx.TensorProto.UNDEFINED]


@pytest.mark.parametrize("code", CODES, ids=onnx.TensorProto.DataType.Name)
@pytest.mark.parametrize("dims", [(), (0,), (3,), (2, 5), (3, 1, 3)], ids=str)
def test_every_dtype_in_its_typed_field_reads_as_raw_bytes(code, dims):
    rng = np.random.default_rng(code * 31 + len(dims))
    t = _typed_tensor(code, dims, rng)
    assert not t.HasField("raw_data") or code in (onnx.TensorProto.STRING,)
    ours = proto.read_tensor(t.SerializeToString())
    assert_tensor(ours, t, "typed")
    if code != onnx.TensorProto.STRING:  # and the same values again from raw_data
        raw = numpy_helper.from_array(numpy_helper.to_array(t), "t")
        assert_tensor(proto.read_tensor(raw.SerializeToString()), raw, "raw")


def test_raw_data_is_a_zero_copy_view_of_the_input():
    t = numpy_helper.from_array(np.arange(1000, dtype=np.float32), "w")
    model = helper.make_model(helper.make_graph([], "g", [], [], [t]))
    data = bytearray(model.SerializeToString())
    raw = proto.read_model(data).graph.initializers["w"].raw
    assert isinstance(raw, memoryview) and raw.obj is data


def test_unicode_and_invalid_utf8_strings_survive():
    node = helper.make_node("Foo", ["x"], ["y"], name="nœud", mode=b"\xff\xfeok",
                            modes=[b"a", "ü".encode()])
    graph = helper.make_graph([node], "gräph", [], [])
    m = proto.read_model(helper.make_model(graph).SerializeToString())
    attrs = m.graph.nodes[0].attrs
    assert m.graph.name == "gräph" and m.graph.nodes[0].name == "nœud"
    assert attrs["modes"] == ["a", "ü"]
    assert attrs["mode"].encode("utf-8", "surrogateescape") == b"\xff\xfeok"
    assert proto.write_model(m) == helper.make_model(graph).SerializeToString()


def test_sparse_initializer_and_attribute_read_dense():
    values = numpy_helper.from_array(np.array([1.5, -2.0, 3.0], dtype=np.float32), "s")
    linear = numpy_helper.from_array(np.array([1, 5, 10], dtype=np.int64), "i")
    coords = numpy_helper.from_array(np.array([[0, 1], [1, 2], [2, 3]], dtype=np.int64), "c")
    sparse_linear = helper.make_sparse_tensor(values, linear, [3, 4])
    sparse_coords = helper.make_sparse_tensor(values, coords, [3, 4])
    node = helper.make_node("Constant", [], ["y"], sparse_value=sparse_coords)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info(
        "y", onnx.TensorProto.FLOAT, [3, 4])], sparse_initializer=[sparse_linear])
    model = helper.make_model(graph)
    ours = proto.read_model(model.SerializeToString())
    assert_sparse(ours.graph.initializers["s"], sparse_linear, "initializer")
    assert_sparse(ours.graph.nodes[0].attrs["sparse_value"], sparse_coords, "attribute")
    dense = array_of(ours.graph.initializers["s"])
    assert dense.ravel()[[1, 5, 10]].tolist() == [1.5, -2.0, 3.0] and dense.sum() == 2.5


def test_types_of_graph_values():
    T = onnx.TensorProto
    infos = [
        helper.make_tensor_value_info("t", T.FLOAT, [2, "n", None]),
        helper.make_tensor_value_info("unranked", T.INT64, None),
        helper.make_tensor_value_info("scalar", T.BOOL, []),
        helper.make_tensor_sequence_value_info("seq", T.FLOAT16, [3]),
        helper.make_value_info("opt", helper.make_optional_type_proto(
            helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.INT8, [1])))),
        helper.make_value_info("map", helper.make_map_type_proto(
            T.INT64, helper.make_tensor_type_proto(T.DOUBLE, [4]))),
        helper.make_sparse_tensor_value_info("sp", T.FLOAT, [5, 5]),
        onnx.ValueInfoProto(name="untyped"),
    ]
    graph = helper.make_graph([], "g", infos, [])
    ours = proto.read_model(helper.make_model(graph).SerializeToString()).graph.inputs
    got = [(v.name, v.kind, v.dtype, v.shape) for v in ours]
    assert got == [("t", "tensor", "float32", (2, "n", None)),
                   ("unranked", "tensor", "int64", None), ("scalar", "tensor", "bool", ()),
                   ("seq", "sequence", "float16", (3,)), ("opt", "optional", "int8", (1,)),
                   ("map", "map", "float64", (4,)), ("sp", "sparse_tensor", "float32", (5, 5)),
                   ("untyped", "tensor", None, None)]


def test_attribute_types_and_functions():
    T = onnx.TensorProto
    body = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "body",
                             [helper.make_tensor_value_info("a", T.FLOAT, [])],
                             [helper.make_tensor_value_info("b", T.FLOAT, [])])
    node = helper.make_node(
        "Custom", ["x"], ["y"], domain="my.domain", f=0.25, i=-7, s="text", floats=[1.5, 2],
        ints=[-1, 2**40], strings=["a", "b"], t=numpy_helper.from_array(np.eye(2), "e"),
        g=body, graphs=[body, body], tensors=[numpy_helper.from_array(np.int8([1, -2]))],
        tp=helper.make_tensor_type_proto(T.INT32, [2]))
    call = helper.make_node("Fn", ["x"], ["z"], domain="local", alpha=2.0)
    fn_body = helper.make_node("Mul", ["a", "a"], ["b"])
    ref = onnx.AttributeProto(name="beta", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT)
    fn_body.attribute.append(ref)
    fn = helper.make_function("local", "Fn", ["a"], ["b"], [fn_body],
                              [helper.make_opsetid("", 18)], attributes=["alpha"],
                              attribute_protos=[helper.make_attribute("gamma", 3)])
    graph = helper.make_graph([node, call], "g", [], [])
    model = helper.make_model(graph, functions=[fn], opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
        producer_name="me", doc_string="docs")
    helper.set_model_props(model, {"author": "x"})
    ours = proto.read_model(model.SerializeToString())
    assert_model(ours, model)
    attrs = ours.graph.nodes[0].attrs
    assert attrs["i"] == -7 and attrs["ints"] == [-1, 2**40] and attrs["s"] == "text"
    assert isinstance(attrs["g"], ir.Graph) and attrs["tp"].dtype == "int32"
    f = ours.functions[("local", "Fn")]
    assert f.nodes[0].attrs["beta"] == ir.AttributeRef("alpha")
    assert f.attributes == ["alpha", "gamma"] and f.attribute_defaults == {"gamma": 3}


def test_string_tensor_and_values():
    t = helper.make_tensor("s", onnx.TensorProto.STRING, [2], [b"ab", b"\xff"])
    td = proto.read_tensor(t.SerializeToString())
    assert td.dtype == "string" and td.data() == [b"ab", b"\xff"]


def test_map_file():
    keys = np.array([3, 1], dtype=np.int64)
    values = helper.make_sequence("v", onnx.SequenceProto.TENSOR,
                                  [numpy_helper.from_array(np.float32([1, 2])),
                                   numpy_helper.from_array(np.float32([3]))])
    m = onnx.MapProto(name="m", key_type=onnx.TensorProto.INT64, keys=keys.tolist(),
                      values=values)
    ours = proto.read_value(m.SerializeToString(), "map")
    assert list(ours) == [3, 1]
    assert_array(array_of(ours[1]), np.float32([3]), "map[1]")
    string_keys = onnx.MapProto(key_type=onnx.TensorProto.STRING, string_keys=[b"k"],
                                values=helper.make_sequence("v", onnx.SequenceProto.TENSOR,
                                                            [numpy_helper.from_array(
                                                                np.int32([7]))]))
    assert list(proto.read_value(string_keys.SerializeToString(), "map")) == ["k"]
