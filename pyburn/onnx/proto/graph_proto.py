"""ModelProto, GraphProto, NodeProto, AttributeProto, ValueInfoProto, TypeProto and
FunctionProto (as `codec` dicts) to `pyburn.onnx.ir` and back.

Attributes become plain Python values: FLOAT a float, INT an int, STRING a str (UTF-8; bytes
that are not UTF-8 survive through ``surrogateescape``, so writing gives back the same bytes),
TENSOR an `ir.TensorData`, SPARSE_TENSOR a `SparseTensorData`, GRAPH an `ir.Graph`,
TYPE_PROTO an `ir.ValueInfo` with an empty name, the plural types lists of those, and a
reference to a calling function's attribute an `ir.AttributeRef`. Writing picks the type
from the value (an empty list is written as INTS).

Types: `ir.ValueInfo.kind` is the outermost kind ("tensor", "sequence", "optional", "map",
"sparse_tensor", "opaque"), with `dtype` and `shape` those of the tensor inside, however
deeply nested. A missing type reads as a tensor of unknown dtype and shape, and is written
as no type.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import ArgumentError, FormatError
from ..ir import AttributeRef, Function, Graph, Model, Node, TensorData, ValueInfo
from .tensor_proto import (
    ExternalSink,
    Origin,
    SparseTensorData,
    dtype_code,
    dtype_name,
    read_sparse,
    read_tensor,
    write_sparse,
    write_tensor,
)

Shape = tuple[int | str | None, ...]


# ---- types -------------------------------------------------------------------------------
def read_type(tp: dict[str, Any]) -> tuple[str, str | None, Shape | None]:
    """``(kind, dtype, shape)`` of a TypeProto (see the module docstring)."""
    for key, kind in (("tensor_type", "tensor"), ("sparse_tensor_type", "sparse_tensor")):
        if key in tp:
            t = tp[key]
            shape = t.get("shape")
            return kind, dtype_name(t.get("elem_type", 0)), \
                None if shape is None else tuple(_dim(d) for d in shape.get("dim", ()))
    for key, kind, inner in (("sequence_type", "sequence", "elem_type"),
                             ("optional_type", "optional", "elem_type"),
                             ("map_type", "map", "value_type")):
        if key in tp:
            _, dtype, shape = read_type(tp[key].get(inner, {}))
            return kind, dtype, shape
    if "opaque_type" in tp:
        return "opaque", None, None
    return "tensor", None, None


def _dim(d: dict[str, Any]) -> int | str | None:
    if "dim_value" in d:
        return d["dim_value"]
    return d.get("dim_param")


def write_type(kind: str, dtype: str | None, shape: Shape | None, what: str
               ) -> dict[str, Any] | None:
    """The TypeProto dict of ``(kind, dtype, shape)``; None for a tensor of unknown dtype
    and shape. `what` names the value in errors."""
    if kind == "tensor" and dtype is None and shape is None:
        return None
    leaf: dict[str, Any] = {}
    if dtype is not None:
        leaf["elem_type"] = dtype_code(dtype, what)
    if shape is not None:
        leaf["shape"] = {"dim": [_write_dim(d, what) for d in shape]}
    tensor = {"tensor_type": leaf}
    forms: dict[str, Callable[[], dict[str, Any]]] = {
        "tensor": lambda: tensor,
        "sparse_tensor": lambda: {"sparse_tensor_type": leaf},
        "sequence": lambda: {"sequence_type": {"elem_type": tensor}},
        "optional": lambda: {"optional_type": {"elem_type": tensor}},
        "map": lambda: {"map_type": {"value_type": tensor}},
        "opaque": lambda: {"opaque_type": {}},
    }
    if kind not in forms:
        raise ArgumentError(f"{what} has kind {kind!r}; ONNX values are one of "
                            f"{', '.join(forms)}")
    return forms[kind]()


def _write_dim(d: int | str | None, what: str) -> dict[str, Any]:
    if d is None:
        return {}
    if isinstance(d, str):
        return {"dim_param": d}
    if isinstance(d, numbers.Integral) and not isinstance(d, bool):
        return {"dim_value": int(d)}
    raise ArgumentError(f"{what} has dimension {d!r}; dimensions are ints, names or None")


def read_value_info(v: dict[str, Any]) -> ValueInfo:
    """A ValueInfoProto as `ir.ValueInfo`."""
    kind, dtype, shape = read_type(v.get("type", {}))
    return ValueInfo(v.get("name", ""), dtype, shape, kind, v.get("doc_string", ""))


def write_value_info(v: ValueInfo) -> dict[str, Any]:
    """`v` as a ValueInfoProto dict."""
    out: dict[str, Any] = {"name": v.name}
    tp = write_type(v.kind, v.dtype, v.shape, f"value {v.name!r}")
    if tp is not None:
        out["type"] = tp
    if v.doc:
        out["doc_string"] = v.doc
    return out


# ---- attributes --------------------------------------------------------------------------
@dataclass(frozen=True)
class _AttrType:
    """One AttributeProto type: its code, the field holding its value, whether that field
    is repeated, and how one value is read and written."""

    name: str
    code: int
    field: str
    plural: bool
    read: Callable[[Any, Origin], Any]
    write: Callable[[Any, ExternalSink | None], Any]


def _text(s: Any, _: Origin) -> str:
    return str(s, "utf-8", "surrogateescape")


def _utf8(s: Any, _: ExternalSink | None) -> bytes:
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)


def _type_proto(tp: Any, _: Origin) -> ValueInfo:
    kind, dtype, shape = read_type(tp)
    return ValueInfo("", dtype, shape, kind)


def _write_type_proto(v: ValueInfo, _: ExternalSink | None) -> dict[str, Any]:
    return write_type(v.kind, v.dtype, v.shape, "a TYPE_PROTO attribute") or {}


def _same(v: Any, _: Any) -> Any:
    return v


_SINGLE = [
    ("FLOAT", 1, "f", _same, lambda v, _: float(v)),
    ("INT", 2, "i", _same, lambda v, _: int(v)),
    ("STRING", 3, "s", _text, _utf8),
    ("TENSOR", 4, "t", lambda t, o: read_tensor(t, o), write_tensor),
    ("GRAPH", 5, "g", lambda g, o: read_graph(g, o), lambda g, s: write_graph(g, s)),
    ("SPARSE_TENSOR", 11, "sparse_tensor", lambda t, o: read_sparse(t, o), write_sparse),
    ("TYPE_PROTO", 13, "tp", _type_proto, _write_type_proto),
]
_PLURAL = {"FLOAT": (6, "floats"), "INT": (7, "ints"), "STRING": (8, "strings"),
           "TENSOR": (9, "tensors"), "GRAPH": (10, "graphs"),
           "SPARSE_TENSOR": (12, "sparse_tensors"), "TYPE_PROTO": (14, "type_protos")}
ATTRIBUTE_TYPES: dict[int, _AttrType] = {}
for _name, _code, _field, _read, _write in _SINGLE:
    ATTRIBUTE_TYPES[_code] = _AttrType(_name, _code, _field, False, _read, _write)
    _pcode, _pfield = _PLURAL[_name]
    ATTRIBUTE_TYPES[_pcode] = _AttrType(_name + "S", _pcode, _pfield, True, _read, _write)
_BY_NAME = {t.name: t for t in ATTRIBUTE_TYPES.values()}
_INTS = _BY_NAME["INTS"]
#: proto2 defaults of the scalar attribute fields, for attributes that leave them out
_DEFAULTS = {"f": 0.0, "i": 0, "s": b""}


def read_attribute(a: dict[str, Any], origin: Origin) -> Any:
    """An AttributeProto's value (see the module docstring)."""
    if "ref_attr_name" in a:
        return AttributeRef(a["ref_attr_name"])
    code = a.get("type", 0)
    if code == 0:  # files older than IR version 0.0.2 leave the type to the field set
        code = next((t.code for t in ATTRIBUTE_TYPES.values() if t.field in a), 0)
        if code == 0:
            raise FormatError("it has no type and holds no value")
    kind = ATTRIBUTE_TYPES.get(code)
    if kind is None:
        raise FormatError(f"it has type {code}, which ONNX does not define")
    if kind.plural:
        values = a.get(kind.field, ())
        return list(values) if kind.read is _same else [kind.read(v, origin) for v in values]
    value = a.get(kind.field, _DEFAULTS.get(kind.field))
    if value is None:
        raise FormatError(f"it has type {kind.name} but holds no value")
    return kind.read(value, origin)


def write_attribute(name: str, value: Any, sink: ExternalSink | None) -> dict[str, Any]:
    """The AttributeProto dict of attribute `name` holding `value`."""
    if isinstance(value, AttributeRef):
        return {"name": name, "ref_attr_name": value.ref}
    kind = _attribute_type(value)
    if kind is None:
        raise ArgumentError(f"attribute {name!r} holds {value!r}, which is no ONNX "
                            f"attribute value")
    if kind is _INTS and all(type(v) is int for v in value):  # nothing to convert
        items: Any = value
    elif kind.plural:
        items = [kind.write(v, sink) for v in value]
    else:
        items = kind.write(value, sink)
    return {"name": name, kind.field: items, "type": kind.code}


def _attribute_type(value: Any) -> _AttrType | None:
    """The attribute type that holds `value`, or None."""
    if isinstance(value, (list, tuple)):
        if all(type(v) is int for v in value):  # the common case, empty lists included
            return _INTS
        singles = {_single_type(v) for v in value}
        if singles == {"INT", "FLOAT"}:
            singles = {"FLOAT"}
        return _BY_NAME[singles.pop() + "S"] if len(singles) == 1 and None not in singles \
            else None
    single = _single_type(value)
    return None if single is None else _BY_NAME[single]


_EXACT = {int: "INT", bool: "INT", float: "FLOAT", str: "STRING", bytes: "STRING"}


def _single_type(v: Any) -> str | None:
    exact = _EXACT.get(type(v))  # the common cases, before the slower checks below
    if exact is not None:
        return exact
    if isinstance(v, numbers.Integral):
        return "INT"
    if isinstance(v, numbers.Real):
        return "FLOAT"
    if isinstance(v, (str, bytes)):
        return "STRING"
    if isinstance(v, SparseTensorData):
        return "SPARSE_TENSOR"
    if isinstance(v, TensorData):
        return "TENSOR"
    if isinstance(v, Graph):
        return "GRAPH"
    if isinstance(v, ValueInfo):
        return "TYPE_PROTO"
    return None


# ---- nodes and graphs --------------------------------------------------------------------
def read_node(n: dict[str, Any], origin: Origin) -> Node:
    """A NodeProto as `ir.Node`; errors in its attributes name the node."""
    node = Node(n.get("op_type", ""), list(n.get("input", ())), list(n.get("output", ())),
                name=n.get("name", ""), domain=n.get("domain", ""),
                doc=n.get("doc_string", ""))
    for a in n.get("attribute", ()):
        name = a.get("name", "")
        if name in node.attrs:
            raise FormatError(f"{node.label()} has two attributes named {name!r}")
        try:
            node.attrs[name] = read_attribute(a, origin)
        except FormatError as exc:
            raise FormatError(f"{node.label()}, attribute {name!r}: {exc}") from None
    return node


def write_node(node: Node, sink: ExternalSink | None) -> dict[str, Any]:
    """`node` as a NodeProto dict."""
    out: dict[str, Any] = {"input": list(node.inputs), "output": list(node.outputs),
                           "op_type": node.op_type}
    if node.name:
        out["name"] = node.name
    if node.domain:
        out["domain"] = node.domain
    if node.doc:
        out["doc_string"] = node.doc
    try:
        out["attribute"] = [write_attribute(k, v, sink) for k, v in node.attrs.items()]
    except ArgumentError as exc:
        raise ArgumentError(f"{node.label()}: {exc}") from None
    return out


def read_graph(g: dict[str, Any], origin: Origin) -> Graph:
    """A GraphProto as `ir.Graph` (sparse initializers join the others, dense on use)."""
    name = g.get("name", "")
    graph = Graph([read_node(n, origin) for n in g.get("node", ())],
                  [read_value_info(v) for v in g.get("input", ())],
                  [read_value_info(v) for v in g.get("output", ())],
                  name=name, doc=g.get("doc_string", ""))
    tensors = [read_tensor(t, origin, f"initializer {t.get('name', '')!r} of graph {name!r}")
               for t in g.get("initializer", ())]
    tensors += [read_sparse(s, origin, f"sparse initializer of graph {name!r}")
                for s in g.get("sparse_initializer", ())]
    for t in tensors:
        if t.name in graph.initializers:
            raise FormatError(f"graph {name!r} has two initializers named {t.name!r}")
        graph.initializers[t.name] = t
    for v in g.get("value_info", ()):
        info = read_value_info(v)
        graph.value_info[info.name] = info
    return graph


def write_graph(graph: Graph, sink: ExternalSink | None) -> dict[str, Any]:
    """`graph` as a GraphProto dict."""
    out: dict[str, Any] = {
        "node": [write_node(n, sink) for n in graph.nodes],
        "initializer": [write_tensor(t, sink) for t in graph.initializers.values()
                        if not isinstance(t, SparseTensorData)],
        "input": [write_value_info(v) for v in graph.inputs],
        "output": [write_value_info(v) for v in graph.outputs],
        "value_info": [write_value_info(v) for v in graph.value_info.values()],
        "sparse_initializer": [write_sparse(t, sink) for t in graph.initializers.values()
                               if isinstance(t, SparseTensorData)],
    }
    if graph.name:
        out["name"] = graph.name
    if graph.doc:
        out["doc_string"] = graph.doc
    return out


# ---- functions and models ----------------------------------------------------------------
def read_function(f: dict[str, Any], origin: Origin) -> Function:
    """A FunctionProto as `ir.Function`."""
    name = f.get("name", "")
    defaults = {}
    for a in f.get("attribute_proto", ()):
        try:
            defaults[a.get("name", "")] = read_attribute(a, origin)
        except FormatError as exc:
            raise FormatError(f"function {name!r}, attribute {a.get('name', '')!r}: {exc}"
                              ) from None
    return Function(name, f.get("domain", ""), list(f.get("input", ())),
                    list(f.get("output", ())), [read_node(n, origin) for n in f.get("node", ())],
                    list(f.get("attribute", ())) + list(defaults), defaults,
                    _opsets(f), f.get("doc_string", ""))


def write_function(fn: Function, sink: ExternalSink | None) -> dict[str, Any]:
    """`fn` as a FunctionProto dict."""
    out: dict[str, Any] = {
        "name": fn.name, "input": list(fn.inputs), "output": list(fn.outputs),
        "attribute": [a for a in fn.attributes if a not in fn.attribute_defaults],
        "node": [write_node(n, sink) for n in fn.nodes],
        "opset_import": _write_opsets(fn.opsets),
        "domain": fn.domain,
        "attribute_proto": [write_attribute(k, v, sink)
                            for k, v in fn.attribute_defaults.items()],
    }
    if fn.doc:
        out["doc_string"] = fn.doc
    return out


def _opsets(m: dict[str, Any]) -> dict[str, int]:
    return {o.get("domain", ""): o.get("version", 0) for o in m.get("opset_import", ())}


def _write_opsets(opsets: dict[str, int]) -> list[dict[str, Any]]:
    return [{"domain": d or None, "version": int(v)} for d, v in opsets.items()]


def read_model(m: dict[str, Any], origin: Origin) -> Model:
    """A ModelProto as `ir.Model` (training information is left out)."""
    if "graph" not in m:
        raise FormatError("the model has no graph (is this an ONNX model file?)")
    functions = {}
    for f in m.get("functions", ()):
        fn = read_function(f, origin)
        functions[(fn.domain, fn.name)] = fn
    return Model(read_graph(m["graph"], origin), _opsets(m), m.get("ir_version", 0),
                 m.get("producer_name", ""), m.get("producer_version", ""),
                 m.get("domain", ""), m.get("model_version", 0), m.get("doc_string", ""),
                 {e.get("key", ""): e.get("value", "") for e in m.get("metadata_props", ())},
                 functions)


def write_model(model: Model, sink: ExternalSink | None) -> dict[str, Any]:
    """`model` as a ModelProto dict."""
    out: dict[str, Any] = {"ir_version": model.ir_version, "graph": write_graph(model.graph, sink),
                           "opset_import": _write_opsets(model.opsets)}
    for key, value in (("producer_name", model.producer_name),
                       ("producer_version", model.producer_version), ("domain", model.domain),
                       ("model_version", model.model_version), ("doc_string", model.doc)):
        if value:
            out[key] = value
    if model.metadata:
        out["metadata_props"] = [{"key": k, "value": v} for k, v in model.metadata.items()]
    if model.functions:
        out["functions"] = [write_function(fn, sink) for fn in model.functions.values()]
    return out
