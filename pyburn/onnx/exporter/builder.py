"""`Builder`: writes the ONNX graph of an aligned trace, event by event.

It names values, turns constants into initializers (or ConstantOfShape nodes when their
shape follows a dynamic axis), computes sizes that follow the dynamic axes from the inputs'
shapes at run time (``Shape`` -> ``Gather`` -> ``Mul``/``Add`` -> ``Concat``), and lets the
elementwise emitters drop what ONNX's own broadcasting makes redundant: an ``Expand``
feeding an ``Add``, a constant 0.5 stored at the full size of the tensor it scales.
Nodes nobody reads in the end are removed (`prune`).
"""

from __future__ import annotations

import struct
from typing import Any

from ..._tensor import Tensor
from .. import ir
from .align import uniform
from .dims import Dim
from .registry import Unsupported
from .trace import Event, Trace, key_of

#: ONNX Slice's "to the end" and "before the start" (for negative steps)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
#: uniform constants at least this large become ConstantOfShape nodes, not stored elements
_FILL_NODE_SIZE = 64


class Builder:
    """The graph under construction for `trace` at `opset`; `params` maps the key of each
    parameter and buffer to its qualified name (the name of its initializer)."""

    def __init__(self, trace: Trace, opset: int, params: dict[tuple, str]):
        self.trace = trace
        self.opset = opset
        self.params = params
        self.nodes: list[ir.Node] = []
        self.initializers: dict[str, ir.TensorData] = {}
        self.producers = {r: ev for ev in trace.events for r in ev.outputs if r is not None}
        self._names: dict[int, str] = {}
        self._taken: set[str] = set()
        self._consts: dict[tuple, str] = {}
        self._fills: dict[int, bytes | None] = {}
        self._dims: dict[Any, str] = {}  # run-time sizes, by Dim (and dtype, as numbers)
        self._symbols: dict[int, str] = {}
        self._shapes: dict[int, str] = {}

    # ---- names ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A new value name starting with `hint`."""
        name, n = hint, 0
        while name in self._taken:
            n += 1
            name = f"{hint}_{n}"
        self._taken.add(name)
        return name

    def reserve(self, name: str) -> None:
        """Keep `name` from being given out by `fresh` (a graph output written later)."""
        self._taken.add(name)

    def claim(self, ref: int, name: str) -> None:
        """Give value `ref` the name `name` (graph inputs and outputs)."""
        self._taken.add(name)
        self._names[ref] = name

    def is_named(self, ref: int) -> bool:
        """Whether value `ref` has a name already."""
        return ref in self._names

    def name(self, ref: int, hint: str = "t") -> str:
        """The name of value `ref` as an event's result."""
        if ref not in self._names:
            self._names[ref] = self.fresh(hint)
        return self._names[ref]

    def value(self, ref: int) -> str:
        """The name to read value `ref` from, writing a constant's initializer or node on
        first use."""
        if ref in self._names:
            return self._names[ref]
        v = self.trace.values[ref]
        if v.kind != "const":
            raise AssertionError(f"value {ref} is read before the event that makes it")
        if isinstance(v.fill, Dim):
            name = self.scalar_of(ref)
            if v.dims:
                name = self.node("Expand", [name, self.shape(v.dims)], hint="filled")
        elif v.fill is not None and not all(d.is_static for d in v.dims):
            name = self._fill_node(v.fill, v.dtype.name, v.dims)
        elif v.tensor.numel() >= _FILL_NODE_SIZE and (fill := self.fill(ref)) is not None:
            name = self._fill_node(fill, v.dtype.name, v.dims)
        elif key_of(v.tensor) in self.params:
            name = self.param(v.tensor)
        else:  # made from constants (named after its parameter), or created in forward
            name = self.tensor(v.tensor, v.origin or "const")
        self._names[ref] = name
        return name

    # ---- constants -----------------------------------------------------------------------
    def fill(self, ref: int) -> bytes | Dim | None:
        """For a constant whose elements are all equal, one element's bytes (or the value as
        a Dim, when it follows the dynamic axes); else None."""
        v = self.trace.values[ref]
        if v.kind != "const":
            return None
        if v.fill is not None:
            return v.fill
        if ref not in self._fills:
            self._fills[ref] = uniform(v.tensor.to_bytes(), v.dtype.itemsize)
        return self._fills[ref]

    def scalar_of(self, ref: int) -> str:
        """A 0-d constant holding the one value of uniform constant `ref`."""
        v = self.trace.values[ref]
        fill = self.fill(ref)
        if not isinstance(fill, Dim):
            return self.raw(v.dtype.name, (), bytes(fill), "scalar")
        key = (fill, v.dtype.name)
        if key not in self._dims:
            number = self.node("Cast", [self.dim(fill)], hint="number", to=onnx_dtype(v.dtype))
            self._dims[key] = self.node("Reshape", [number, self.ints([], "scalar")],
                                        hint="number")
        return self._dims[key]

    def raw(self, dtype: str, dims: tuple[int, ...], data: bytes, hint: str) -> str:
        """An initializer of `dtype` and `dims` with elements `data` (shared by equal ones)."""
        key = (dtype, dims, data)
        if key not in self._consts:
            name = self.fresh(hint)
            self.initializers[name] = ir.TensorData(name, dtype, dims, data)
            self._consts[key] = name
        return self._consts[key]

    def tensor(self, t: Tensor, hint: str) -> str:
        """An initializer holding pyburn tensor `t`."""
        return self.raw(t.dtype.name, tuple(t.shape), t.to_bytes(), hint)

    def param(self, t: Tensor, derived: Tensor | None = None, suffix: str = "") -> str:
        """An initializer for parameter (or buffer) `t`, named after it; `derived` (a
        rearranged copy of it, named with `suffix`) is stored instead when given. One
        initializer per name, even where two parameters hold equal values."""
        origin = self.params.get(key_of(t))
        if origin is None:  # not a parameter (the ones a layer without bias adds)
            return self.tensor(t if derived is None else derived, "const")
        key = ("param", origin + suffix)
        if key not in self._consts:
            name = self.fresh(origin + suffix)
            value = t if derived is None else derived
            self.initializers[name] = ir.TensorData(name, value.dtype.name, tuple(value.shape),
                                                    value.to_bytes())
            self._consts[key] = name
        return self._consts[key]

    def ints(self, values: list[int] | tuple[int, ...], hint: str = "ints") -> str:
        """A 1-d int64 initializer."""
        return self.raw("int64", (len(values),), struct.pack(f"<{len(values)}q", *values), hint)

    def number(self, value: float | int, dtype: str, hint: str = "scalar") -> str:
        """A 0-d initializer of a float or int `dtype`."""
        fmt = {"float16": "<e", "float32": "<f", "float64": "<d", "int32": "<i",
               "int64": "<q", "uint8": "<B", "bool": "<?"}[dtype]
        return self.raw(dtype, (), struct.pack(fmt, value), hint)

    def _fill_node(self, fill: bytes, dtype: str, dims: tuple[Dim, ...]) -> str:
        value = ir.TensorData("value", dtype, (1,), fill)
        return self.node("ConstantOfShape", [self.shape(dims)], hint="filled", value=value)

    # ---- sizes that follow the dynamic axes ----------------------------------------------
    def dim(self, d: Dim) -> str:
        """A 1-d int64 tensor of one element: the size `d` at run time."""
        if d in self._dims:
            return self._dims[d]
        total = None
        for symbols, coef in d.terms:
            term = self._symbol(symbols[0])
            for sym in symbols[1:]:
                term = self.node("Mul", [term, self._symbol(sym)], hint="size")
            if coef != 1:
                term = self.node("Mul", [term, self.ints([coef])], hint="size")
            total = term if total is None else self.node("Add", [total, term], hint="size")
        if total is None:
            total = self.ints([d.const])
        elif d.const:
            total = self.node("Add", [total, self.ints([d.const])], hint="size")
        self._dims[d] = total
        return total

    def shape(self, dims: tuple[Dim, ...] | list[Dim]) -> str:
        """A 1-d int64 tensor holding the sizes `dims` (an initializer when all static)."""
        if all(d.is_static for d in dims):
            return self.ints([d.const for d in dims], "shape")
        parts: list[str] = []
        run: list[int] = []
        for d in dims:
            if d.is_static:
                run.append(d.const)
                continue
            if run:
                parts.append(self.ints(run, "shape"))
                run = []
            parts.append(self.dim(d))
        if run:
            parts.append(self.ints(run, "shape"))
        return self.node("Concat", parts, hint="shape", axis=0)

    def _symbol(self, sym: int) -> str:
        """The run-time size of dynamic axis `sym`, read from the first input that has it."""
        if sym in self._symbols:
            return self._symbols[sym]
        pure = Dim(0, (((sym,), 1),))
        for ref in self.trace.inputs:
            dims = self.trace.values[ref].dims
            if pure in dims:
                if ref not in self._shapes:
                    self._shapes[ref] = self.node("Shape", [self.value(ref)], hint="shape")
                size = self.node("Gather", [self._shapes[ref], self.ints([dims.index(pure)])],
                                 hint="size", axis=0)
                self._symbols[sym] = size
                return size
        raise AssertionError(f"dynamic axis {sym} is on no input")

    # ---- nodes ---------------------------------------------------------------------------
    def node(self, op: str, inputs: list[str], out: str | None = None, hint: str = "",
             **attrs: Any) -> str:
        """Append an `op` node with one result (named `out`, or a fresh name) and return
        the result's name."""
        out = out or self.fresh(hint or op.lower())
        self.nodes_out(op, inputs, [out], **attrs)
        return out

    def nodes_out(self, op: str, inputs: list[str], outs: list[str], **attrs: Any) -> None:
        """Append an `op` node with several results named `outs`; "" in `inputs` is an
        omitted optional input."""
        inputs = list(inputs)
        while inputs and not inputs[-1]:
            inputs.pop()
        self.nodes.append(ir.Node(op, inputs, list(outs), attrs, name=f"{op}_{len(self.nodes)}"))

    def axes_input(self, op: str, x: str, axes: list[int], out: str | None = None,
                   since: int = 13, **attrs: Any) -> str:
        """`op` with `axes` as an input from opset `since` on, as an attribute before."""
        if self.opset >= since:
            return self.node(op, [x, self.ints(axes, "axes")], out, **attrs)
        return self.node(op, [x], out, axes=list(axes), **attrs)

    def static(self, ev: Event, key: str) -> Any:
        """Argument `key` of `ev`, which must not follow the dynamic axes."""
        if any(isinstance(d, Dim) and not d.is_static for d in _flat(ev.dims[key])):
            raise Unsupported(f"{ev.name} with its {key} following a dynamic axis")
        return ev.ctx[key]

    def require(self, opset: int, what: str) -> None:
        """Raise Unsupported unless the target opset is at least `opset`."""
        if self.opset < opset:
            raise Unsupported(f"{what} needs opset {opset} or later (exporting opset "
                              f"{self.opset})")

    # ---- broadcasting --------------------------------------------------------------------
    def broadcast_inputs(self, ev: Event, batch_only: bool = False) -> list[str]:
        """The names of `ev`'s inputs for an ONNX op that broadcasts them itself (all dims,
        or with `batch_only` all but the last two, as MatMul does): an input that pyburn
        expanded for the op is read before its Expand, and a constant that holds one value
        becomes a 0-d scalar, wherever the other inputs still give the result its shape."""
        out_dims = self.trace.values[ev.outputs[0]].dims
        refs = list(ev.inputs)
        dims = [self.trace.values[r].dims for r in refs]
        cut = 2 if batch_only else 0

        def covered(candidate: list[tuple[Dim, ...] | None]) -> bool:
            target = out_dims[:len(out_dims) - cut]
            shapes = [d[:len(d) - cut] for d in candidate if d is not None]
            return all(d == Dim(1) or any(
                len(s) >= len(target) - j and s[j - len(target) + len(s)] == d
                for s in shapes) for j, d in enumerate(target))

        for i, r in enumerate(refs):
            producer = self.producers.get(r)
            if producer is not None and producer.name == "expand":
                source = producer.inputs[0]
                trial = dims[:i] + [self.trace.values[source].dims] + dims[i + 1:]
                if covered(trial):
                    refs[i], dims = source, trial
        names = []
        for i, r in enumerate(refs):
            if not batch_only and self.fill(r) is not None and covered(dims[:i] + [None]
                                                                       + dims[i + 1:]):
                dims[i] = None
                names.append(self.scalar_of(r))
            else:
                names.append(self.value(r))
        return names

    # ---- the finished graph --------------------------------------------------------------
    def prune(self, outputs: list[str]) -> None:
        """Drop the nodes and initializers that no graph output depends on."""
        live = set(outputs)
        kept = []
        for node in reversed(self.nodes):
            if any(o in live for o in node.outputs if o):
                kept.append(node)
                live.update(i for i in node.inputs if i)
        self.nodes = kept[::-1]
        self.initializers = {k: v for k, v in self.initializers.items() if k in live}


def _flat(value: object) -> list:
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _flat(item)]
    return [value]


def onnx_dtype(dtype: Any) -> int:
    """The ONNX TensorProto code of a pyburn dtype (or a dtype name)."""
    return ir.DTYPE_CODES[getattr(dtype, "name", dtype)]

