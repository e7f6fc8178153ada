"""What the ``onnx`` package (protobuf's own parser, numpy_helper) says a file holds, compared
field by field with what pyburn's reader made of it.

`assert_model` walks an `ir.Model` and the `onnx.ModelProto` side by side and fails with the
path of the first difference. Tensor values are compared bit for bit: our normalised raw
bytes are handed to ``numpy_helper.to_array`` as raw_data and must give the same array as
numpy_helper gives for the original proto (which may store them in a typed field).
"""

from __future__ import annotations

import glob
import os
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from pyburn.onnx import ir
from pyburn.onnx.proto import SparseTensorData

SUITE = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
MODELS = sorted(glob.glob(os.path.join(SUITE, "*", "model.onnx")))
A = onnx.AttributeProto


def sample(items: list[str], n: int) -> list[str]:
    """Every k-th of `items`, about `n` of them (a deterministic spread over the suite)."""
    step = max(1, len(items) // n)
    return items[::step]


def case_id(path: str) -> str:
    """A node-suite case's folder name, for test ids."""
    return os.path.basename(os.path.dirname(path)) if path.endswith(".onnx") else \
        "/".join(path.split(os.sep)[-3:])


def value_files() -> list[tuple[str, str]]:
    """Every test_data_set_0 .pb file of the suite, with the kind of the graph value it holds
    ("tensor", "sequence" or "optional")."""
    found = []
    for model in MODELS:
        graph = onnx.load(model, load_external_data=False).graph
        for prefix, infos in (("input", graph.input), ("output", graph.output)):
            for i, info in enumerate(infos):
                path = os.path.join(os.path.dirname(model), "test_data_set_0",
                                    f"{prefix}_{i}.pb")
                if os.path.exists(path):
                    kind = (info.type.WhichOneof("value") or "tensor_type").removesuffix("_type")
                    found.append((path, kind))
    return found


def code_of(dtype: str | None) -> int:
    """The ONNX data type code of a dtype name (0 for None)."""
    return 0 if dtype is None else ir.DTYPE_CODES[dtype]


def array_of(td: ir.TensorData) -> np.ndarray:
    """`td`'s values through onnx's own decoding of raw_data."""
    data = td.data()
    if td.dtype == "string":
        return np.array([bytes(s).decode() for s in data], dtype=object).reshape(td.dims)
    proto = helper.make_tensor(td.name, code_of(td.dtype), td.dims, bytes(data), raw=True)
    return numpy_helper.to_array(proto)


def assert_array(ours: np.ndarray, ref: np.ndarray, where: str) -> None:
    """Same shape, dtype and bits (strings: same text)."""
    assert ours.shape == ref.shape, f"{where}: shape {ours.shape} != {ref.shape}"
    if ref.dtype == object or ref.dtype.kind in "US":
        assert [str(s) for s in ours.ravel()] == [str(s) for s in ref.ravel()], where
        return
    assert ours.dtype == ref.dtype, f"{where}: dtype {ours.dtype} != {ref.dtype}"
    assert ours.tobytes() == ref.tobytes(), f"{where}: values differ"


def assert_tensor(td: ir.TensorData, t: onnx.TensorProto, where: str) -> None:
    """`td` holds what the TensorProto `t` holds."""
    assert td.name == t.name, f"{where}: name {td.name!r} != {t.name!r}"
    assert tuple(td.dims) == tuple(t.dims), f"{where}: dims"
    assert code_of(td.dtype) == t.data_type, f"{where}: dtype {td.dtype} != {t.data_type}"
    assert_array(array_of(td), numpy_helper.to_array(t), where)


def assert_sparse(td: ir.TensorData, s: onnx.SparseTensorProto, where: str) -> None:
    """`td` is the sparse tensor `s`, and reads as its dense form."""
    assert isinstance(td, SparseTensorData), where
    assert tuple(td.dims) == tuple(s.dims), where
    assert_tensor(td.values, s.values, where + ".values")
    assert_tensor(td.indices, s.indices, where + ".indices")
    dense = numpy_helper.to_array(s.values)
    expected = np.zeros(tuple(s.dims), dtype=dense.dtype)
    indices = numpy_helper.to_array(s.indices)
    flat = indices if indices.ndim == 1 else np.ravel_multi_index(indices.T, tuple(s.dims))
    expected.ravel()[flat] = dense
    assert_array(array_of(td), expected, where + " (dense)")


def type_of(t: onnx.TypeProto) -> tuple[str, int, Any]:
    """``(kind, elem_type, shape)`` of a TypeProto, as `ir.ValueInfo` describes it: the
    outermost kind, the innermost tensor's type and shape."""
    which = t.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        tt = getattr(t, which)
        shape = tuple(d.dim_value if d.HasField("dim_value") else
                      (d.dim_param if d.HasField("dim_param") else None)
                      for d in tt.shape.dim) if tt.HasField("shape") else None
        return which.removesuffix("_type"), tt.elem_type, shape
    if which in ("sequence_type", "optional_type"):
        return which.removesuffix("_type"), *type_of(getattr(t, which).elem_type)[1:]
    if which == "map_type":
        return "map", *type_of(t.map_type.value_type)[1:]
    return ("opaque" if which else "tensor"), 0, None


def assert_value_info(v: ir.ValueInfo, p: onnx.ValueInfoProto | onnx.TypeProto,
                      where: str) -> None:
    """`v` describes the value `p` (a ValueInfoProto, or a TypeProto attribute)."""
    if isinstance(p, onnx.ValueInfoProto):
        assert v.name == p.name, f"{where}: name {v.name!r} != {p.name!r}"
        p = p.type
    kind, code, shape = type_of(p)
    assert (v.kind, code_of(v.dtype), v.shape) == (kind, code, shape), \
        f"{where}: {v} != {kind, code, shape}"


def assert_attribute(value: Any, a: onnx.AttributeProto, where: str) -> None:
    """`value` is what the AttributeProto `a` holds."""
    where = f"{where}.{a.name}"
    if a.ref_attr_name:
        assert value == ir.AttributeRef(a.ref_attr_name), where
        return
    single = {A.FLOAT: lambda v, x: v == x, A.INT: lambda v, x: v == x,
              A.STRING: lambda v, x: v.encode("utf-8", "surrogateescape") == x}
    if a.type in single:
        expected = {A.FLOAT: a.f, A.INT: a.i, A.STRING: a.s}[a.type]
        assert type(value) is {A.FLOAT: float, A.INT: int, A.STRING: str}[a.type], where
        assert single[a.type](value, expected) or (value != value and expected != expected), \
            f"{where}: {value!r} != {expected!r}"
    elif a.type == A.FLOATS:
        assert np.array_equal(np.float32(value), np.float32(list(a.floats)), equal_nan=True), \
            where
    elif a.type == A.INTS:
        assert value == list(a.ints), where
    elif a.type == A.STRINGS:
        assert [s.encode("utf-8", "surrogateescape") for s in value] == list(a.strings), where
    elif a.type == A.TENSOR:
        assert_tensor(value, a.t, where)
    elif a.type == A.TENSORS:
        assert len(value) == len(a.tensors), where
        for i, (v, t) in enumerate(zip(value, a.tensors)):
            assert_tensor(v, t, f"{where}[{i}]")
    elif a.type == A.GRAPH:
        assert_graph(value, a.g, where)
    elif a.type == A.GRAPHS:
        assert len(value) == len(a.graphs), where
        for i, (v, g) in enumerate(zip(value, a.graphs)):
            assert_graph(v, g, f"{where}[{i}]")
    elif a.type == A.SPARSE_TENSOR:
        assert_sparse(value, a.sparse_tensor, where)
    elif a.type == A.TYPE_PROTO:
        assert_value_info(value, a.tp, where)
    else:
        raise AssertionError(f"{where}: attribute type {a.type} not covered by the test")


def assert_node(n: ir.Node, p: onnx.NodeProto, where: str) -> None:
    """`n` is the NodeProto `p`."""
    assert (n.op_type, n.inputs, n.outputs, n.name, n.domain, n.doc) == \
        (p.op_type, list(p.input), list(p.output), p.name, p.domain, p.doc_string), where
    assert list(n.attrs) == [a.name for a in p.attribute], where
    for a in p.attribute:
        assert_attribute(n.attrs[a.name], a, f"{where}[{n.op_type}]")


def assert_graph(g: ir.Graph, p: onnx.GraphProto, where: str = "graph") -> None:
    """`g` is the GraphProto `p`."""
    assert (g.name, g.doc) == (p.name, p.doc_string), where
    assert len(g.nodes) == len(p.node), where
    for i, (n, q) in enumerate(zip(g.nodes, p.node)):
        assert_node(n, q, f"{where}.node[{i}]")
    for ours, theirs, what in ((g.inputs, p.input, "input"), (g.outputs, p.output, "output"),
                               (list(g.value_info.values()), p.value_info, "value_info")):
        assert len(ours) == len(theirs), f"{where}.{what}"
        for i, (v, q) in enumerate(zip(ours, theirs)):
            assert_value_info(v, q, f"{where}.{what}[{i}]")
    dense = [t for t in g.initializers.values() if not isinstance(t, SparseTensorData)]
    sparse = [t for t in g.initializers.values() if isinstance(t, SparseTensorData)]
    assert len(dense) == len(p.initializer) and len(sparse) == len(p.sparse_initializer)
    for t, q in zip(dense, p.initializer):
        assert_tensor(t, q, f"{where}.initializer[{q.name}]")
    for t, q in zip(sparse, p.sparse_initializer):
        assert_sparse(t, q, f"{where}.sparse_initializer[{q.values.name}]")


def assert_model(m: ir.Model, p: onnx.ModelProto) -> None:
    """`m` is the ModelProto `p`, field by field."""
    assert m.opsets == {o.domain: o.version for o in p.opset_import}
    assert (m.ir_version, m.producer_name, m.producer_version, m.domain, m.model_version,
            m.doc) == (p.ir_version, p.producer_name, p.producer_version, p.domain,
                       p.model_version, p.doc_string)
    assert m.metadata == {e.key: e.value for e in p.metadata_props}
    assert_graph(m.graph, p.graph)
    assert len(m.functions) == len(p.functions)
    for f in p.functions:
        fn = m.functions[(f.domain, f.name)]
        assert (fn.inputs, fn.outputs) == (list(f.input), list(f.output))
        assert fn.opsets == {o.domain: o.version for o in f.opset_import}
        assert fn.attributes == list(f.attribute) + [a.name for a in f.attribute_proto]
        for a in f.attribute_proto:
            assert_attribute(fn.attribute_defaults[a.name], a, f"function {f.name}")
        for i, (n, q) in enumerate(zip(fn.nodes, f.node, strict=True)):
            assert_node(n, q, f"function {f.name}.node[{i}]")
