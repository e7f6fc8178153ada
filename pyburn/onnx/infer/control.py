"""Inference rules of control flow (If, Loop, Scan: their subgraphs are inferred in the
enclosing scope) and of sequence and optional values."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from .core import (
    Context,
    Dim,
    Ins,
    Known,
    arg,
    axis_of,
    dtype_attr,
    join,
    rule,
)


def _either(a: Known, b: Known) -> Known:
    """What is known of a value that is `a` or `b`."""
    return Known(a.dtype or b.dtype, join(a.shape, b.shape), None,
                 a.kind if a.kind != "tensor" else b.kind)


@rule("If")
def if_(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """If: the taken branch's outputs when the condition is a known constant, else what
    both branches agree on."""
    then = ctx.subgraph(node.attrs["then_branch"], ())
    other = ctx.subgraph(node.attrs["else_branch"], ())
    cond = (ins[0] or Known()).value
    if cond is not None and len(cond) == 1 and isinstance(cond[0], bool):
        return then if cond[0] else other
    return [_either(a, b) for a, b in zip(then, other)]


def _iterate(ctx: Context, body: ir.Graph, initial: list[Known],
             inputs: Callable[[list[Known]], list[Known]], carried: slice
             ) -> tuple[list[Known], list[Known]]:
    """The body's output types and the loop-carried values' types over all iterations:
    the body is inferred on the initial types and, where an iteration changes a shape,
    again on what the initial and the next values share (dims still changing: unknown)."""
    outs = ctx.subgraph(body, inputs(initial))
    after = outs[carried]
    if all(a.shape == b.shape for a, b in zip(initial, after)):
        return outs, [Known(a.dtype or b.dtype, a.shape, None, a.kind)
                      for a, b in zip(initial, after)]
    state = [_either(a, b) for a, b in zip(initial, after)]
    outs = ctx.subgraph(body, inputs(state))
    return outs, [_either(a, b) for a, b in zip(state, outs[carried])]


@rule("Loop")
def loop(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Loop: the carried values' types (fixed across iterations), then each scan output
    stacked over the iterations (their count known when only the trip count stops it)."""
    initial = [k or Known() for k in ins[2:]]
    # the body takes (iteration, cond, carried...) and gives (cond, carried..., scans...)
    fixed = [Known("int64", ()), Known("bool", ())]
    outs, state = _iterate(ctx, node.attrs["body"], initial, lambda s: [*fixed, *s],
                           slice(1, 1 + len(initial)))
    trips = (arg(ins, 0) or Known()).ints()
    count: Dim = trips[0] if trips and len(trips) == 1 and arg(ins, 1) is None else None
    scans = [Known(k.dtype, None if k.shape is None else (count, *k.shape))
             for k in outs[1 + len(initial):]]
    return [*state, *scans]


@rule("Scan")
def scan(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Scan (opset 9+): the final states, then each scan output stacked along its axis
    over the scanned length."""
    body = node.attrs["body"]
    if ctx.opset < 9:  # batched Scan: only the body's declared element types carry over
        return [Known(v.dtype) for v in body.outputs]
    m = node.attrs["num_scan_inputs"]
    given = [k or Known() for k in ins]
    states, scanned = given[:len(given) - m], given[len(given) - m:]
    in_axes = node.attrs.get("scan_input_axes") or [0] * m
    slices, length = [], None
    for k, a in zip(scanned, in_axes):
        if k.shape is None:
            slices.append(Known(k.dtype))
            continue
        a = axis_of(a, len(k.shape))
        length = length if length is not None else k.shape[a]
        slices.append(Known(k.dtype, k.shape[:a] + k.shape[a + 1:]))
    outs, after = _iterate(ctx, body, states, lambda s: [*s, *slices], slice(0, len(states)))
    out_axes = node.attrs.get("scan_output_axes") or [0] * (len(outs) - len(states))
    stacked = []
    for k, a in zip(outs[len(states):], out_axes):
        if k.shape is None:
            stacked.append(Known(k.dtype))
            continue
        a = axis_of(a, len(k.shape) + 1)
        stacked.append(Known(k.dtype, k.shape[:a] + (length,) + k.shape[a:]))
    return [*after, *stacked]


# ---- sequences and optionals --------------------------------------------------------------
def _sequence(dtype: str | None, shape: tuple | None) -> Known:
    return Known(dtype, shape, None, "sequence")


@rule("SequenceConstruct")
def sequence_construct(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """SequenceConstruct: elements of the inputs' dtype; their shape where all agree."""
    given = [k or Known() for k in ins]
    shape = given[0].shape if given else None
    for k in given[1:]:
        shape = join(shape, k.shape)
    return _sequence(given[0].dtype if given else None, shape)


@rule("SequenceEmpty")
def sequence_empty(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """SequenceEmpty: no elements yet, of `dtype` (float32 by default)."""
    return _sequence(dtype_attr(node, "dtype", "float32"), None)


@rule("SequenceInsert", "SequenceErase")
def sequence_update(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Insert and erase: the sequence's element type (a shape both it and the inserted
    tensor share)."""
    seq = ins[0] or Known()
    if node.op_type == "SequenceErase":
        return _sequence(seq.dtype, seq.shape)
    item = arg(ins, 1) or Known()
    return _sequence(seq.dtype or item.dtype, join(seq.shape, item.shape))


@rule("SequenceAt")
def sequence_at(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """SequenceAt: one element."""
    seq = ins[0] or Known()
    return Known(seq.dtype, seq.shape)


@rule("SequenceLength")
def sequence_length(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """SequenceLength: an int64 scalar."""
    return Known("int64", ())


@rule("SplitToSequence")
def split_to_sequence(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """SplitToSequence: pieces along `axis` (of size 1, dropped unless keepdims, without
    `split`; of the given sizes, known where they are equal)."""
    x = ins[0] or Known()
    if x.shape is None:
        return _sequence(x.dtype, None)
    axis = axis_of(node.attrs.get("axis", 0), len(x.shape))
    split = arg(ins, 1)
    if split is None:
        keep = node.attrs.get("keepdims", 1)
        return _sequence(x.dtype, x.shape[:axis] + (1,) * bool(keep) + x.shape[axis + 1:])
    sizes = split.ints()
    size: Dim = sizes[0] if sizes and len(set(sizes)) == 1 and split.rank == 1 else None
    return _sequence(x.dtype, x.shape[:axis] + (size,) + x.shape[axis + 1:])


@rule("ConcatFromSequence")
def concat_from_sequence(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """ConcatFromSequence: the elements joined along `axis` (a new one with new_axis);
    the length along it depends on the sequence."""
    seq = ins[0] or Known()
    if seq.shape is None:
        return Known(seq.dtype)
    rank = len(seq.shape) + bool(node.attrs.get("new_axis", 0))
    axis = axis_of(node.attrs["axis"], rank)
    if rank > len(seq.shape):
        return Known(seq.dtype, seq.shape[:axis] + (None,) + seq.shape[axis:])
    return Known(seq.dtype, seq.shape[:axis] + (None,) + seq.shape[axis + 1:])


@rule("Optional")
def optional(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Optional: the input's type (or the `type` attribute's), as an optional."""
    given = arg(ins, 0)
    if given is not None:
        return Known(given.dtype, given.shape, None, "optional")
    declared = node.attrs.get("type")
    if isinstance(declared, ir.ValueInfo):
        return Known(declared.dtype, declared.shape, None, "optional")
    return Known(None, None, None, "optional")


@rule("OptionalGetElement")
def optional_get_element(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """OptionalGetElement: the element (a tensor passes through)."""
    x = ins[0] or Known()
    kind = "tensor" if x.kind in ("optional", "tensor") else x.kind
    return Known(x.dtype, x.shape, None, kind)


@rule("OptionalHasElement")
def optional_has_element(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """OptionalHasElement: a bool scalar."""
    return Known("bool", ())


@rule("SequenceMap")
def sequence_map(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """SequenceMap: sequences of the body's output types."""
    body = node.attrs["body"]
    items = [Known(k.dtype, k.shape) if k is not None and k.kind == "sequence"
             else (k or Known()) for k in ins]
    outs = ctx.subgraph(body, items)
    return [_sequence(k.dtype, k.shape) for k in outs]

