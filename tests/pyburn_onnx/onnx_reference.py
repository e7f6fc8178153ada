"""An independent path from files to `pyburn.onnx.ir` through the `onnx` package (protobuf's
own parser): the reference the pure-Python reader is compared with, and the node suite's
second reader (``--reader onnx``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from pyburn.onnx import ir

_NUMPY_OF = {"float32": "<f4", "uint8": "u1", "int8": "i1", "uint16": "<u2", "int16": "<i2",
             "int32": "<i4", "int64": "<i8", "bool": "?", "float16": "<f2", "float64": "<f8",
             "uint32": "<u4", "uint64": "<u8"}


def tensor_data(t: onnx.TensorProto) -> ir.TensorData:
    """A TensorProto as `ir.TensorData` (raw little-endian bytes)."""
    dtype = ir.DTYPE_NAMES[t.data_type]
    if dtype == "string":
        return ir.TensorData(t.name, dtype, tuple(t.dims), list(t.string_data))
    if dtype in _NUMPY_OF:
        array = numpy_helper.to_array(t).astype(_NUMPY_OF[dtype])
        raw = array.tobytes()
    elif dtype == "bfloat16":
        # numpy_helper gives float32 (or ml_dtypes) values: keep the top half of each
        array = np.asarray(numpy_helper.to_array(t), dtype=np.float32)
        raw = (array.view(np.uint32) >> 16).astype("<u2").tobytes()
    else:
        raw = _raw_bits(t)
    return ir.TensorData(t.name, dtype, tuple(t.dims), raw)


def _raw_bits(t: onnx.TensorProto) -> bytes:
    if t.HasField("raw_data"):
        return t.raw_data
    return np.asarray(t.int32_data, dtype="<i4").astype("u1").tobytes()


def _attr(a: onnx.AttributeProto) -> Any:
    if a.ref_attr_name:
        return ir.AttributeRef(a.ref_attr_name)
    kind = a.type
    A = onnx.AttributeProto
    return {
        A.FLOAT: lambda: a.f, A.INT: lambda: a.i, A.STRING: lambda: a.s.decode(),
        A.TENSOR: lambda: tensor_data(a.t), A.GRAPH: lambda: graph(a.g),
        A.FLOATS: lambda: list(a.floats), A.INTS: lambda: list(a.ints),
        A.STRINGS: lambda: [s.decode() for s in a.strings],
        A.TENSORS: lambda: [tensor_data(t) for t in a.tensors],
        A.GRAPHS: lambda: [graph(g) for g in a.graphs],
    }.get(kind, lambda: None)()


def _value_info(v: onnx.ValueInfoProto) -> ir.ValueInfo:
    t = v.type
    if t.HasField("tensor_type"):
        dims = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                     for d in t.tensor_type.shape.dim) if t.tensor_type.HasField("shape") \
            else None
        return ir.ValueInfo(v.name, ir.DTYPE_NAMES.get(t.tensor_type.elem_type), dims)
    kind = t.WhichOneof("value") or "tensor"
    return ir.ValueInfo(v.name, None, None, kind.removesuffix("_type"))


def node(n: onnx.NodeProto) -> ir.Node:
    """A NodeProto as `ir.Node`."""
    return ir.Node(n.op_type, list(n.input), list(n.output),
                   {a.name: _attr(a) for a in n.attribute}, n.name, n.domain)


def graph(g: onnx.GraphProto) -> ir.Graph:
    """A GraphProto as `ir.Graph`."""
    return ir.Graph([node(n) for n in g.node], [_value_info(v) for v in g.input],
                    [_value_info(v) for v in g.output],
                    {t.name: tensor_data(t) for t in g.initializer},
                    {v.name: _value_info(v) for v in g.value_info}, g.name)


def model(m: onnx.ModelProto) -> ir.Model:
    """A ModelProto as `ir.Model`."""
    functions = {}
    for f in m.functions:
        defaults = {a.name: _attr(a) for a in f.attribute_proto}
        functions[(f.domain, f.name)] = ir.Function(
            f.name, f.domain, list(f.input), list(f.output), [node(n) for n in f.node],
            list(f.attribute) + list(defaults), defaults,
            {o.domain: o.version for o in f.opset_import})
    return ir.Model(graph(m.graph), {o.domain: o.version for o in m.opset_import},
                    m.ir_version, m.producer_name, functions=functions)


def load(path: str) -> ir.Model:
    """The model file at `path` as `ir.Model`."""
    return model(onnx.load(path))
