"""The traces behind one export: their inputs, and how they are lined up into one graph.

Every trace after the first runs on inputs whose values are reversed (and, along the dynamic
axes, whose sizes differ; see `dims.SizePlan`). Lining the traces up then checks that
the forward pass did the same operations each time, fits every size to the dynamic axes,
and catches the values the tracer cannot see: a tensor computed from the inputs by an
untraced operation (an argmax, a sort, a backend capability outside autodiff) looks like a
constant in one trace but has other values in the next.
"""

from __future__ import annotations

import contextlib
import struct

from ..._tensor import Tensor
from ...dtypes import int32
from ...errors import ArgumentError
from ...ops.creation import tensor as make_tensor
from .dims import SizePlan
from .trace import Trace, Value

#: an input's dynamic axes: axis -> symbol number
Axes = dict[int, int]


def variant_inputs(inputs: list[Tensor], axes: list[Axes], sizes: tuple[int, ...]
                   ) -> list[Tensor]:
    """The inputs of a later trace: each dynamic axis resized to ``sizes[symbol]`` by
    repeating its entries cyclically, then every axis reversed (other values, same value
    domain: token ids stay valid ids)."""
    out = []
    for x, dynamic in zip(inputs, axes):
        for axis, sym in dynamic.items():
            size = x.shape[axis]
            index = make_tensor([i % size for i in range(sizes[sym])], dtype=int32,
                                device=x.device)
            x = x.index_select(axis, index)
        out.append(x.flip(tuple(range(x.ndim))) if x.ndim else x)
    return out


def uniform(data: bytes, itemsize: int) -> bytes | None:
    """One element's bytes if every element of `data` is that element, else None."""
    first = data[:itemsize]
    return first if len(first) == itemsize and data == first * (len(data) // itemsize) else None


def align(traces: list[Trace], plan: SizePlan) -> Trace:
    """The first trace with the `dims` of every value and event the outputs depend on, and
    the `fill` of constants whose shape or value follows the dynamic axes, set;
    ArgumentError where the traces do not describe one graph."""
    base = traces[0]
    producers = {r: ev.name for ev in base.events for r in ev.outputs if r is not None}
    users: dict[int, str] = {}
    for ev in base.events:
        for r in ev.inputs:
            users.setdefault(r, ev.name)
    for t in traces[1:]:
        _check_same_structure(base, t, plan)
    live = set(base.outputs) | set(base.inputs)
    needed = []
    for ev in reversed(base.events):
        if any(r in live for r in ev.outputs):
            needed.append(ev)
            live.update(r for r in ev.inputs if r is not None)
    for ref, v in enumerate(base.values):
        if ref not in live:  # nothing the outputs depend on: never written
            continue
        what = _describe(base, ref, producers, users)
        v.dims = tuple(plan.fit([t.values[ref].shape[a] for t in traces], what)
                       for a in range(len(v.shape)))
        if v.kind == "const":
            _check_constant(ref, v, [t.values[ref] for t in traces], what, plan)
    index = {id(ev): i for i, ev in enumerate(base.events)}
    for ev in needed:
        i = index[id(ev)]
        ev.dims = plan.fit_tree([t.events[i].ctx for t in traces],
                                f"an argument of {ev.name} (operation {i})")
    return base


def _check_same_structure(base: Trace, other: Trace, plan: SizePlan) -> None:
    why = (f"when the dynamic axes {list(plan.names)} change size" if plan.names
           else "when the input values change")
    if len(other.events) != len(base.events) or len(other.values) != len(base.values):
        raise ArgumentError(f"the forward pass ran {len(base.events)} operations on the "
                            f"example inputs but {len(other.events)} {why}: its control flow "
                            f"depends on them, which a traced graph cannot express")
    for i, (a, b) in enumerate(zip(base.events, other.events)):
        if (a.kind, a.name, a.inputs, a.outputs, a.emit) != (b.kind, b.name, b.inputs,
                                                             b.outputs, b.emit):
            raise ArgumentError(f"the forward pass ran other operations {why}: operation {i} "
                                f"was {a.name} on the example inputs and {b.name} then, so "
                                f"its control flow depends on them")
    for a, b in zip(base.values, other.values):
        if (a.kind, a.dtype, len(a.shape)) != (b.kind, b.dtype, len(b.shape)):
            raise ArgumentError(f"the forward pass made tensors of other kinds {why} "
                                f"({a.dtype.name} {a.shape}, then {b.dtype.name} {b.shape})")


def _check_constant(ref: int, v: Value, versions: list[Value], what: str,
                    plan: SizePlan) -> None:
    if all(u.tensor._h is v.tensor._h for u in versions):
        return  # the same tensor every time (a parameter): nothing can differ
    data = [u.tensor.to_bytes() for u in versions]
    static = all(d.is_static for d in v.dims)
    if static and all(d == data[0] for d in data[1:]):
        return
    fills = [uniform(d, v.dtype.itemsize) for d in data]
    if all(f == fills[0] for f in fills) and fills[0] is not None:
        v.fill = fills[0]  # zeros(batch, ...): rebuilt at run time
        return
    # one value that follows the dynamic axes: a size used as a number (mean's count)
    numbers = [struct.unpack("<" + v.dtype.struct_char, f)[0] if f is not None else None
               for f in fills]
    if plan.names and all(n is not None and n == int(n) for n in numbers):
        with contextlib.suppress(ArgumentError):
            v.fill = plan.fit([int(n) for n in numbers], what)
            return
    if static:
        raise ArgumentError(f"{what} {_UNTRACED}: its values changed with the inputs")
    raise ArgumentError(
        f"{what} has a shape that follows the dynamic axes {list(plan.names)} but is not "
        f"filled with one value, so it cannot be rebuilt at another size: either it "
        f"{_UNTRACED}, or it was created in forward from Python values (arange, a mask); "
        f"make it an input of the model, or keep those axes static")


_UNTRACED = ("is computed from the inputs by an operation the exporter cannot trace "
             "(argmax/argmin, sort/topk, nonzero, random numbers, or a backend capability "
             "such as max_pool outside autodiff)")


def _describe(trace: Trace, ref: int, producers: dict[int, str], users: dict[int, str]) -> str:
    v = trace.values[ref]
    if v.kind == "input":
        return f"input {trace.inputs.index(ref)}"
    if v.kind == "op":
        return f"the result of {producers[ref]} (shape {v.shape})"
    if v.origin:
        return f"{v.origin!r} (shape {v.shape})"
    used = f", used by {users[ref]}" if ref in users else ""
    return f"a {v.dtype.name} tensor of shape {v.shape}{used}"
