"""The machinery of shape and dtype inference: what is known about a value (`Known`), the
one table of per-operator rules (`RULES`, filled by the family modules with `@rule`), the
dimension arithmetic the rules share, and the walk over a graph and its subgraphs.

A dimension is an int, a symbolic name (a str such as "batch", carried along unchanged where
a dimension is provably the same) or None (unknown). Rules never guess: what they cannot
derive is None. Symbolic arithmetic goes no further than equality (``batch * 1`` is
``batch``, ``batch * 2`` is unknown).
"""

from __future__ import annotations

import copy
import math
import struct
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import ir

Dim = int | str | None
Shape = tuple[Dim, ...]
#: constants with more elements than this are tracked by shape only (shape arithmetic
#: needs a few ints; reading weights would cost time for nothing)
MAX_VALUES = 64
#: a Slice end at least this large means "to the end" (exporters write INT64_MAX, INT32_MAX)
TO_END = 2**31 - 1


@dataclass(frozen=True)
class Known:
    """What inference knows about one value: its ONNX dtype name, its shape, and, for small
    constants and shape arithmetic, its elements in row-major order (ints, floats, bools, or
    symbolic dims (str) and None for unknown ones in values computed from shapes). For a
    sequence or optional (`kind`), dtype and shape describe the elements."""

    dtype: str | None = None
    shape: Shape | None = None
    value: tuple[Any, ...] | None = None
    kind: str = "tensor"

    @property
    def rank(self) -> int | None:
        """The number of dimensions, when known."""
        return None if self.shape is None else len(self.shape)

    def ints(self) -> list[int] | None:
        """The elements as Python ints, when every one is a known int (bools excluded)."""
        if self.value is None or not all(isinstance(v, int) and not isinstance(v, bool)
                                         for v in self.value):
            return None
        return list(self.value)

    def numbers(self) -> list[int | float] | None:
        """The elements as Python numbers, when every one is known."""
        if self.value is None or not all(isinstance(v, (int, float)) for v in self.value):
            return None
        return list(self.value)


UNKNOWN = Known()
#: ins[i] is None where the node omits input i
Ins = Sequence[Known | None]
Out = Known | Sequence[Known | None] | None
Rule = Callable[[ir.Node, Ins, "Context"], Out]
#: op_type -> rule; the family modules fill it
RULES: dict[str, Rule] = {}


def rule(*op_types: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as the inference rule of every op in `op_types`."""
    def register(fn: Rule) -> Rule:
        for op in op_types:
            RULES[op] = fn
        return fn
    return register


# ---- reading what rules need ---------------------------------------------------------------
def arg(ins: Ins, i: int) -> Known | None:
    """Input `i`, or None where the node omits it."""
    return ins[i] if i < len(ins) else None


def given(ins: Ins, i: int) -> Known:
    """Input `i`, or nothing known where the node omits it."""
    return (ins[i] if i < len(ins) else None) or UNKNOWN


def ints_at(node: ir.Node, ins: Ins, name: str, i: int) -> list[int] | None:
    """A list of ints given as attribute `name` (older opsets) or as constant input `i`
    (newer ones); None when neither is known."""
    if name in node.attrs:
        value = node.attrs[name]
        return [int(v) for v in value] if isinstance(value, list) else [int(value)]
    found = arg(ins, i)
    return found.ints() if found is not None else None


def floats_at(node: ir.Node, ins: Ins, name: str, i: int) -> list[float] | None:
    """Like `ints_at`, for float lists (Resize/Upsample scales)."""
    if name in node.attrs:
        return [float(v) for v in node.attrs[name]]
    source = arg(ins, i)
    found = source.numbers() if source is not None else None
    return None if found is None else [float(v) for v in found]


def dtype_attr(node: ir.Node, name: str, default: str | None) -> str | None:
    """A dtype given as an attribute holding an ONNX type code, or `default`."""
    code = node.attrs.get(name)
    return default if code is None else ir.DTYPE_NAMES.get(int(code))


def axis_of(axis: int, rank: int) -> int:
    """`axis` (negative counts from the end) as an index into `rank` dims; ValueError when
    out of range (the rule then gives up)."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def constant(data: ir.TensorData) -> tuple[Any, ...] | None:
    """The elements of a small numeric constant, read with `struct`; None for large ones,
    strings and packed types."""
    fmt = _STRUCT.get(data.dtype)
    count = data.numel
    if fmt is None or count > MAX_VALUES:
        return None
    raw = data.data()
    if isinstance(raw, list) or len(raw) != count * struct.calcsize(fmt):
        return None
    values = struct.unpack(f"<{count}{fmt}", bytes(raw))
    return tuple(bool(v) for v in values) if data.dtype == "bool" else values


_STRUCT = {"float32": "f", "float64": "d", "float16": "e", "int8": "b", "uint8": "B",
           "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "uint32": "I",
           "uint64": "Q", "bool": "B"}


def small(shape: Shape | None) -> bool:
    """Whether a value of `shape` is small enough to track element by element."""
    count = numel(shape)
    return count is not None and count <= MAX_VALUES


# ---- dimension arithmetic ------------------------------------------------------------------
def numel(shape: Shape | None) -> int | None:
    """The number of elements of a fully known shape, else None."""
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return math.prod(shape)  # type: ignore[arg-type]


def product(dims: Iterable[Dim]) -> Dim:
    """The product of `dims`: an int when all are ints; a symbolic dim when it is the only
    factor besides ones; else None."""
    ints, others = 1, []
    for d in dims:
        if isinstance(d, int):
            ints *= d
        else:
            others.append(d)
    if not others:
        return ints
    if ints == 0:
        return 0
    return others[0] if len(others) == 1 and ints == 1 and others[0] is not None else None


def quotient(total: Shape, part: Sequence[Dim]) -> Dim:
    """prod(total) / prod(part) when it divides exactly, names that appear on both sides
    cancelling (``(batch, 8, 7, 7) / (batch,)`` is 392)."""
    num, den = list(total), list(part)
    for d in part:
        if isinstance(d, str) and d in num:
            num.remove(d)
            den.remove(d)
    top, bottom = product(num), product(den)
    if isinstance(top, int) and isinstance(bottom, int):
        return top // bottom if bottom and top % bottom == 0 else None
    return top if bottom == 1 else None


def add_dims(a: Dim, b: Dim) -> Dim:
    """a + b: ints add; adding 0 keeps a symbolic dim."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return a if b == 0 else b if a == 0 else None


def unify(a: Dim, b: Dim) -> Dim:
    """One dim from two that must be equal: the int where one is an int, else the name."""
    if a == b or b is None:
        return a
    if a is None:
        return b
    if isinstance(a, int) and isinstance(b, int):
        return None  # contradictory: the model is wrong, and the runner will say so
    return a if isinstance(a, int) else b if isinstance(b, int) else a


def join(a: Shape | None, b: Shape | None) -> Shape | None:
    """What two shapes a value may have in common (the two branches of an If, a loop's
    first and later iterations): equal dims kept, others unknown."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def broadcast_dim(a: Dim, b: Dim) -> Dim:
    """The dim numpy broadcasting gives for `a` against `b`."""
    if a == 1:
        return b
    if b == 1 or a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return None  # incompatible: the runner will say so
    # an int other than 1 fixes the result (the other side must be 1 or equal to it)
    return a if isinstance(a, int) else b if isinstance(b, int) else None


def broadcast(*shapes: Shape | None) -> Shape | None:
    """The multidirectional (numpy) broadcast of `shapes`, None if one is unknown."""
    if any(s is None for s in shapes):
        return None
    rank = max((len(s) for s in shapes), default=0)  # type: ignore[arg-type]
    out: list[Dim] = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, rank - len(s)):  # type: ignore[arg-type]
            out[i] = broadcast_dim(out[i], d)
    return tuple(out)


def index_map(shape: Shape, out: Shape) -> list[int]:
    """For each element of `out` (row-major), the flat index of the element of an array of
    `shape` broadcast to `out` that it reads (both shapes fully known)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step if d != 1 else 0)
        step *= d  # type: ignore[operator]
    strides = strides[::-1]
    offset = len(out) - len(shape)
    result = []
    for flat in range(numel(out) or 0):
        index, rest = 0, flat
        for axis in range(len(out) - 1, -1, -1):
            rest, i = divmod(rest, out[axis])  # type: ignore[arg-type]
            if axis >= offset:
                index += i * strides[axis - offset]
        result.append(index)
    return result


# ---- the walk ------------------------------------------------------------------------------
class Context:
    """What a rule may ask besides its node and inputs: the opset, and the types of a
    subgraph's outputs given its inputs' (inferred in the current scope)."""

    def __init__(self, opsets: Mapping[str, int], scope: Mapping[str, Known],
                 record: dict[int, dict[str, Known]]) -> None:
        self.opsets = opsets
        self.opset = opsets.get("", opsets.get("ai.onnx", 1))
        self.scope = scope
        self.record = record

    def subgraph(self, graph: ir.Graph, inputs: Sequence[Known | None]) -> list[Known]:
        """The types of `graph`'s outputs when its inputs have the given types (None: as the
        subgraph declares)."""
        known = walk(graph, self.opsets, self.scope, inputs, self.record)
        return [known.get(v.name, UNKNOWN) for v in graph.outputs]


def declared(v: ir.ValueInfo) -> Known:
    """A declared type as `Known` (a shape of -1 entries, which exporters write for unknown
    dims, reads as unknown)."""
    shape = None if v.shape is None else tuple(_declared_dim(d) for d in v.shape)
    return Known(v.dtype, shape, None, v.kind)


def _declared_dim(d: Dim) -> Dim:
    if isinstance(d, int):
        return d if d >= 0 else None
    return d or None


def refine(inferred: Known, claimed: Known) -> Known:
    """`inferred` completed with what a declaration claims (inferred dims win)."""
    shape = inferred.shape
    if shape is None:
        shape = claimed.shape
    elif claimed.shape is not None and len(claimed.shape) == len(shape):
        shape = tuple(unify(a, b) if not (isinstance(a, int) and isinstance(b, int)) else a
                      for a, b in zip(shape, claimed.shape))
    kind = inferred.kind if inferred.kind != "tensor" else claimed.kind
    return replace(inferred, dtype=inferred.dtype or claimed.dtype, shape=shape, kind=kind)


def walk(graph: ir.Graph, opsets: Mapping[str, int], outer: Mapping[str, Known],
         inputs: Sequence[Known | None], record: dict[int, dict[str, Known]]
         ) -> MutableMapping[str, Known]:
    """Infer every value of `graph` (inputs typed by `inputs` where given, else by their
    declarations), reading enclosing scopes through `outer`; `record` gets the graph's own
    values under ``id(graph)``."""
    own: dict[str, Known] = {}
    known: ChainMap[str, Known] = ChainMap(own, outer)  # type: ignore[arg-type]
    for i, v in enumerate(graph.inputs):
        typed = inputs[i] if i < len(inputs) else None
        own[v.name] = declared(v) if typed is None else refine(typed, declared(v))
    for name, data in graph.initializers.items():
        own[name] = Known(data.dtype, tuple(data.dims), constant(data))
    promised = {v.name: declared(v) for v in graph.outputs}
    promised.update((k, declared(v)) for k, v in graph.value_info.items())
    ctx = Context(opsets, known, record)
    for node in graph.nodes:
        ins = [known.get(n, UNKNOWN) if n else None for n in node.inputs]
        outs = apply(node, ins, ctx)
        for i, name in enumerate(node.outputs):
            if not name:
                continue
            found = outs[i] if i < len(outs) and outs[i] is not None else UNKNOWN
            own[name] = refine(found, promised[name]) if name in promised else found
    record[id(graph)] = own
    return known


def apply(node: ir.Node, ins: Ins, ctx: Context) -> list[Known | None]:
    """The output types of `node` by its rule (all unknown when it has none, or when its
    inputs make no sense: a malformed model is the runner's to report)."""
    fn = RULES.get(node.op_type) if node.domain in ("", "ai.onnx", "pyburn") else None
    if fn is None:
        return []
    try:
        out = fn(node, ins, ctx)
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError):
        return []
    if out is None:
        return []
    return [out] if isinstance(out, Known) else list(out)


def infer_all(graph: ir.Graph, opsets: Mapping[str, int],
              outer: Mapping[str, Known] | None = None) -> dict[int, dict[str, Known]]:
    """Every graph's (main and subgraphs) inferred values, by ``id(graph)``."""
    record: dict[int, dict[str, Known]] = {}
    walk(graph, opsets, outer or {}, (), record)
    return record


def value_info(name: str, known: Known) -> ir.ValueInfo:
    """`known` as the `ir.ValueInfo` of `name`."""
    return ir.ValueInfo(name, known.dtype, known.shape, known.kind)


def annotated(graph: ir.Graph, record: Mapping[int, Mapping[str, Known]]) -> ir.Graph:
    """A copy of `graph` whose `value_info` holds every value its nodes compute, with the
    subgraphs annotated alike (declarations that the inference refined are replaced)."""
    own = record.get(id(graph), {})
    out = copy.copy(graph)
    out.value_info = {**graph.value_info, **{
        name: value_info(name, own[name]) for node in graph.nodes for name in node.outputs
        if name in own}}
    out.nodes = [ir.with_subgraphs(node, lambda sub: annotated(sub, record))
                 for node in graph.nodes]
    return out
