"""The in-memory form of an ONNX model that every part of `pyburn.onnx` shares.

The protobuf reader (`proto/`) builds it, the passes (`passes.py`) rewrite it, the
interpreter (`runner.py`) runs it, the code generator (`codegen.py`) prints it and the
exporter (`export/`) builds one and hands it to the protobuf writer. It holds plain Python
values only: no numpy, no pyburn tensors (constants stay bytes until a device asks for them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

#: ONNX's TensorProto.DataType codes and the names used everywhere in `pyburn.onnx`.
DTYPE_NAMES: dict[int, str] = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
    8: "string", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn",
    18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4",
    23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2",
}
DTYPE_CODES: dict[str, int] = {name: code for code, name in DTYPE_NAMES.items()}


@dataclass
class TensorData:
    """A constant tensor (an initializer, a Constant node's value, a tensor attribute).

    `raw` holds the elements as little-endian bytes in ONNX's layout for `dtype` (for
    "string", a list of bytes objects instead). `load`, when set, produces `raw` on first
    use: external-data and large initializers are read lazily through it.
    """

    name: str
    dtype: str
    dims: tuple[int, ...]
    raw: bytes | bytearray | memoryview | list[bytes] | None = None
    load: Callable[[], bytes | bytearray | memoryview] | None = None
    doc: str = ""

    def data(self) -> bytes | bytearray | memoryview | list[bytes]:
        """The elements (reading them now if they are loaded lazily)."""
        if self.raw is None and self.load is not None:
            self.raw = self.load()
            self.load = None
        return self.raw if self.raw is not None else b""

    @property
    def numel(self) -> int:
        """The number of elements."""
        count = 1
        for d in self.dims:
            count *= d
        return count


@dataclass
class ValueInfo:
    """A graph input, output or intermediate with its declared type.

    `dtype` is None when unknown; `shape` entries are ints, dimension names (str) or None.
    `kind` is "tensor", "sequence", "optional" or "map" (only tensors run in pyburn).
    """

    name: str
    dtype: str | None = None
    shape: tuple[int | str | None, ...] | None = None
    kind: str = "tensor"
    doc: str = ""


@dataclass
class Node:
    """One operator application. An empty string in `inputs`/`outputs` is an omitted
    optional. `attrs` maps names to Python values: int, float, str (STRING), list of
    those, `TensorData`, `Graph` (subgraphs of If/Loop/Scan) or lists of them."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    domain: str = ""
    doc: str = ""

    def label(self) -> str:
        """How errors name this node: its name when it has one, else its first output."""
        return f"{self.op_type} node {self.name or (self.outputs or [''])[0]!r}"


@dataclass
class Graph:
    """A graph: nodes in the file's order (passes make it topological), its inputs and
    outputs, the constants it owns and any intermediate type annotations."""

    nodes: list[Node]
    inputs: list[ValueInfo]
    outputs: list[ValueInfo]
    initializers: dict[str, TensorData] = field(default_factory=dict)
    value_info: dict[str, ValueInfo] = field(default_factory=dict)
    name: str = ""
    doc: str = ""


@dataclass(frozen=True)
class AttributeRef:
    """An attribute of a node inside a function body that takes the value of the calling
    node's attribute `ref` (AttributeProto.ref_attr_name)."""

    ref: str


@dataclass
class Function:
    """A model-local function (FunctionProto): a named subgraph that nodes call like an
    operator; the passes inline it."""

    name: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    #: attribute names the function declares, and the defaults of those that have one
    attributes: list[str] = field(default_factory=list)
    attribute_defaults: dict[str, Any] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)
    doc: str = ""


@dataclass
class Model:
    """A model: its main graph, the opset version per domain ("" is ai.onnx) and metadata."""

    graph: Graph
    opsets: dict[str, int]
    ir_version: int = 10
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int = 0
    doc: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    #: functions defined in the model (FunctionProto), by (domain, name)
    functions: dict[tuple[str, str], Function] = field(default_factory=dict)

    @property
    def opset(self) -> int:
        """The version of the default (ai.onnx) operator set."""
        return self.opsets.get("", self.opsets.get("ai.onnx", 1))


def subgraphs(node: Node) -> Iterator[Graph]:
    """The subgraphs held in `node`'s attributes (If branches, Loop and Scan bodies)."""
    for value in node.attrs.values():
        if isinstance(value, Graph):
            yield value
        elif isinstance(value, list):
            yield from (v for v in value if isinstance(v, Graph))


def with_subgraphs(node: Node, rewrite: Callable[[Graph], Graph]) -> Node:
    """`node`, or a copy of it with every subgraph in its attributes replaced by
    ``rewrite(subgraph)`` when it has any."""
    if not any(True for _ in subgraphs(node)):
        return node

    def each(value: object) -> object:
        if isinstance(value, Graph):
            return rewrite(value)
        return [each(v) for v in value] if isinstance(value, list) else value

    return replace(node, attrs={k: each(v) for k, v in node.attrs.items()})
