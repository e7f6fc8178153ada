"""Inference rules of the operators that move, select and reshape elements (Reshape,
Slice, Gather, Concat, ...), make shapes (Shape, ConstantOfShape, Range) and reduce.

Shape arithmetic is followed through known values: ``Reshape(x, Concat(Shape(x)[0:1], [-1]))``
gives ``(batch, 392)`` for an input of shape ``(batch, 8, 7, 7)``.
"""

from __future__ import annotations

import math

from .. import ir
from .core import (
    TO_END,
    Context,
    Dim,
    Ins,
    Known,
    Shape,
    add_dims,
    arg,
    axis_of,
    broadcast,
    constant,
    floats_at,
    given,
    ints_at,
    numel,
    product,
    quotient,
    rule,
    small,
    unify,
)
from .elementwise import REDUCTIONS, values


def _length(k: Known) -> int | None:
    """The number of entries of a 1-d shape-like input, when known."""
    if k.value is not None:
        return len(k.value)
    if k.shape is not None and len(k.shape) == 1 and isinstance(k.shape[0], int):
        return k.shape[0]
    return None


def _unknown_dims(x: Known, keep_rank: bool = True) -> Known:
    return Known(x.dtype, None if x.shape is None or not keep_rank else (None,) * len(x.shape))


@rule("Shape")
def shape_of(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Shape: the dims (from `start` to `end`) as a known value where the rank is known."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known("int64", (None,))
    rank = len(x.shape)
    start, end = node.attrs.get("start", 0), node.attrs.get("end", rank)
    start, end = (min(max(v + rank if v < 0 else v, 0), rank) for v in (start, end))
    dims = x.shape[start:end] if end > start else ()
    return Known("int64", (len(dims),), tuple(dims))


@rule("Size")
def size_of(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Size: a scalar, known where the shape is."""
    x = ins[0] or Known()
    return Known("int64", (), None if x.shape is None else (product(x.shape),))


@rule("Reshape")
def reshape(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Reshape to a known target (0 copies the input dim unless allowzero, -1 takes the
    rest); a target of unknown values still gives the rank."""
    x, target = ins[0] or Known(), given(ins, 1)
    spec = list(node.attrs["shape"]) if "shape" in node.attrs else \
        None if target.value is None else list(target.value)
    if spec is None:
        n = _length(target)
        return Known(x.dtype, None if n is None else (None,) * n, None)
    dims: list[Dim] = []
    for i, d in enumerate(spec):
        if d == 0 and isinstance(d, int) and not node.attrs.get("allowzero", 0):
            dims.append(x.shape[i] if x.shape is not None and i < len(x.shape) else None)
        else:
            dims.append(d)
    if -1 in dims:
        rest = [d for d in dims if d != -1]
        missing = None if x.shape is None or len(rest) != len(dims) - 1 else \
            quotient(x.shape, rest)
        dims = [missing if d == -1 else d for d in dims]
    return Known(x.dtype, tuple(dims), x.value)


@rule("Flatten")
def flatten(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Flatten to 2-d at `axis`."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known(x.dtype, (None, None))
    rank = len(x.shape)
    axis = node.attrs.get("axis", 1)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis <= rank:
        raise ValueError("axis out of range")
    return Known(x.dtype, (product(x.shape[:axis]), product(x.shape[axis:])), x.value)


@rule("Squeeze")
def squeeze(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Squeeze the given axes, or every dim of size 1 (which needs every dim known)."""
    x = ins[0] or Known()
    axes = ints_at(node, ins, "axes", 1)
    if x.shape is None or (axes is None and arg(ins, 1) is not None):
        return Known(x.dtype, None, x.value)
    if axes is None:
        if not all(isinstance(d, int) for d in x.shape):
            return Known(x.dtype, None, x.value)
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    drop = {axis_of(a, len(x.shape)) for a in axes}
    return Known(x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in drop), x.value)


@rule("Unsqueeze")
def unsqueeze(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Insert dims of size 1 at `axes` (positions in the output)."""
    x = ins[0] or Known()
    axes = ints_at(node, ins, "axes", 1)
    if x.shape is None or axes is None:
        return Known(x.dtype, None, x.value)
    rank = len(x.shape) + len(axes)
    added = {axis_of(a, rank) for a in axes}
    rest = iter(x.shape)
    return Known(x.dtype, tuple(1 if i in added else next(rest) for i in range(rank)), x.value)


@rule("Transpose")
def transpose(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Transpose by `perm` (default: reversed)."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known(x.dtype)
    perm = node.attrs.get("perm") or list(range(len(x.shape)))[::-1]
    if sorted(perm) != list(range(len(x.shape))):
        raise ValueError("perm is not a permutation")
    return Known(x.dtype, tuple(x.shape[p] for p in perm),
                 x.value if len(x.shape) <= 1 else None)


@rule("Concat")
def concat(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Concat along `axis`: that dim adds up, the others agree."""
    parts = [k for k in ins if k is not None]
    dtype = next((k.dtype for k in parts if k.dtype), None)
    ranks = {k.rank for k in parts if k.rank is not None}
    if len(ranks) != 1:
        return Known(dtype)
    rank = ranks.pop()
    axis = axis_of(node.attrs.get("axis", 0), rank)
    dims: list[Dim] = []
    for i in range(rank):
        column = [k.shape[i] if k.shape is not None else None for k in parts]
        if i == axis:
            total: Dim = 0
            for d in column:
                total = add_dims(total, d)
            dims.append(total)
        else:
            merged: Dim = None
            for d in column:
                merged = unify(merged, d)
            dims.append(merged)
    value = None
    if rank == 1 and all(k.value is not None for k in parts) and small(tuple(dims)):
        value = tuple(v for k in parts for v in k.value)  # type: ignore[union-attr]
    return Known(dtype, tuple(dims), value)


@rule("Split")
def split(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Split along `axis` by `split` sizes, or into equal parts (the last smaller)."""
    x = ins[0] or Known()
    count = len(node.outputs)
    if x.shape is None:
        return [Known(x.dtype)] * count
    axis = axis_of(node.attrs.get("axis", 0), len(x.shape))
    sizes: list[Dim] | None = ints_at(node, ins, "split", 1)  # type: ignore[assignment]
    d = x.shape[axis]
    if sizes is None and arg(ins, 1) is None:
        parts = node.attrs.get("num_outputs", count)
        if isinstance(d, int) and parts > 0:
            chunk = -(-d // parts)
            sizes = [chunk] * (parts - 1) + [d - chunk * (parts - 1)]
    if sizes is None:
        sizes = [None] * count
    outs = []
    start = 0
    for size in sizes[:count]:
        shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
        value = None
        if x.value is not None and len(x.shape) == 1 and isinstance(size, int):
            value = x.value[start:start + size]
            start += size
        outs.append(Known(x.dtype, shape, value))
    return outs


def _slice_range(d: Dim, start: int, end: int, step: int) -> range | None:
    """The indices a slice takes from a dim of size `d` (ONNX's clamping rules)."""
    if not isinstance(d, int) or step == 0:
        return None
    start, end = (v + d if v < 0 else v for v in (start, end))
    if step > 0:
        return range(min(max(start, 0), d), min(max(end, 0), d), step)
    return range(min(max(start, 0), d - 1), min(max(end, -1), d - 1), step)


@rule("Slice")
def slice_(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Slice with known starts/ends (attributes before opset 10, inputs after): the sliced
    dims follow; a symbolic dim taken whole stays symbolic."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known(x.dtype)
    rank = len(x.shape)
    starts, ends = ints_at(node, ins, "starts", 1), ints_at(node, ins, "ends", 2)
    axes = ints_at(node, ins, "axes", 3)
    if axes is None and arg(ins, 3) is None:
        n = len(starts) if starts is not None else _length(given(ins, 1))
        axes = None if n is None else list(range(n))
    steps = ints_at(node, ins, "steps", 4) if arg(ins, 4) is not None else \
        [1] * len(axes or [])
    if starts is None or ends is None or axes is None or steps is None:
        if axes is None:
            return _unknown_dims(x)
        sliced = {axis_of(a, rank) for a in axes}
        return Known(x.dtype, tuple(None if i in sliced else d for i, d in enumerate(x.shape)))
    dims = list(x.shape)
    picked: range | None = None
    for start, end, a, step in zip(starts, ends, axes, steps):
        a = axis_of(a, rank)
        taken = _slice_range(x.shape[a], start, end, step)
        if taken is not None:
            dims[a] = len(taken)
            picked = taken
        elif step == 1 and start == 0 and end >= TO_END:
            dims[a] = x.shape[a]
        else:
            dims[a] = None
    value = None
    if rank == 1 and x.value is not None and picked is not None:
        value = tuple(x.value[i] for i in picked)
    elif rank == 1 and dims == list(x.shape):
        value = x.value
    return Known(x.dtype, tuple(dims), value)


@rule("Gather")
def gather(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Gather along `axis`: data's dims with that one replaced by the indices' shape."""
    data, indices = ins[0] or Known(), given(ins, 1)
    if data.shape is None or indices.shape is None:
        return Known(data.dtype)
    axis = axis_of(node.attrs.get("axis", 0), len(data.shape))
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
    value = None
    picks = indices.ints()
    if len(data.shape) == 1 and data.value is not None and picks is not None:
        n = len(data.value)
        value = tuple(data.value[i + n if i < 0 else i] for i in picks)
    return Known(data.dtype, shape, value)


@rule("GatherElements")
def gather_elements(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """GatherElements: the indices' shape, the data's dtype."""
    return Known((ins[0] or Known()).dtype, given(ins, 1).shape)


@rule("GatherND")
def gather_nd(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """GatherND: indices' dims but the last, then data's dims past the indexed ones."""
    data, indices = ins[0] or Known(), given(ins, 1)
    b = node.attrs.get("batch_dims", 0)
    if data.shape is None or indices.shape is None or not isinstance(indices.shape[-1], int):
        return Known(data.dtype)
    return Known(data.dtype, indices.shape[:-1] + data.shape[b + indices.shape[-1]:])


@rule("Expand")
def expand(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Expand: the broadcast of the input and the target shape."""
    x, target = ins[0] or Known(), given(ins, 1)
    if target.value is not None:
        dims: Shape | None = tuple(target.value)
    else:
        n = _length(target)
        dims = None if n is None else (None,) * n
    shape = broadcast(x.shape, dims)
    return Known(x.dtype, shape, values(lambda v: v, [x], shape))


@rule("Tile")
def tile(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Tile: each dim times its repeat count."""
    x = ins[0] or Known()
    repeats = given(ins, 1).ints()
    if x.shape is None or repeats is None or len(repeats) != len(x.shape):
        return _unknown_dims(x)
    return Known(x.dtype, tuple(product([d, r]) for d, r in zip(x.shape, repeats)))


@rule("Pad")
def pad(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Pad: each (padded) dim grows by its begin and end pads."""
    x = ins[0] or Known()
    pads = ints_at(node, ins, "pads", 1)
    if pads is None and "paddings" in node.attrs:
        pads = [int(p) for p in node.attrs["paddings"]]
    if x.shape is None or pads is None:
        return _unknown_dims(x)
    rank = len(x.shape)
    axes = given(ins, 3).ints() if arg(ins, 3) is not None else list(range(rank))
    if axes is None or len(pads) != 2 * len(axes):
        return _unknown_dims(x)
    dims = list(x.shape)
    for i, a in enumerate(axes):
        a = axis_of(a, rank)
        dims[a] = add_dims(add_dims(dims[a], pads[i]), pads[i + len(axes)])
    return Known(x.dtype, tuple(dims))


@rule("CenterCropPad")
def center_crop_pad(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """CenterCropPad: the given `axes` (default all) take the target sizes."""
    x, target = ins[0] or Known(), given(ins, 1)
    if x.shape is None or target.value is None:
        return _unknown_dims(x)
    axes = node.attrs.get("axes") or list(range(len(x.shape)))
    dims = list(x.shape)
    for a, d in zip(axes, target.value):
        dims[axis_of(a, len(dims))] = d
    return Known(x.dtype, tuple(dims))


@rule("ConstantOfShape")
def constant_of_shape(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """ConstantOfShape: the shape the input holds, the dtype of `value` (float32 without)."""
    fill = node.attrs.get("value")
    dtype = fill.dtype if isinstance(fill, ir.TensorData) else "float32"
    target = ins[0] or Known()
    if target.value is None:
        n = _length(target)
        return Known(dtype, None if n is None else (None,) * n)
    shape = tuple(target.value)
    element = constant(fill) if isinstance(fill, ir.TensorData) else (0.0,)
    value = None
    if small(shape) and element:
        value = element[:1] * (numel(shape) or 0)
    return Known(dtype, shape, value)


@rule("Range")
def range_(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Range: ceil((limit - start) / delta) elements, computed when all three are known."""
    start, limit, delta = (given(ins, i) for i in range(3))
    nums = [k.numbers() for k in (start, limit, delta)]
    if any(g is None or len(g) != 1 for g in nums) or nums[2] == [0]:
        return Known(start.dtype, (None,))
    a, b, step = (g[0] for g in nums)  # type: ignore[index]
    n = max(math.ceil((b - a) / step), 0)
    value = tuple(a + i * step for i in range(n)) if n <= 64 else None
    return Known(start.dtype, (n,), value)


@rule("OneHot")
def one_hot(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """OneHot: the indices' dims with `depth` inserted at `axis`."""
    indices, depth, on_off = ins[0] or Known(), given(ins, 1), given(ins, 2)
    if indices.shape is None:
        return Known(on_off.dtype)
    rank = len(indices.shape) + 1
    axis = axis_of(node.attrs.get("axis", -1), rank)
    n = depth.numbers()
    size: Dim = int(n[0]) if n is not None and len(n) == 1 else None
    return Known(on_off.dtype, indices.shape[:axis] + (size,) + indices.shape[axis:])


@rule("NonZero")
def non_zero(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """NonZero: (rank, count), the count unknown."""
    x = ins[0] or Known()
    return Known("int64", None if x.rank is None else (x.rank, None))


@rule("Compress")
def compress(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Compress: a data-dependent length along `axis` (of the flattened input without)."""
    x = ins[0] or Known()
    if "axis" not in node.attrs:
        return Known(x.dtype, (None,))
    if x.shape is None:
        return Known(x.dtype)
    axis = axis_of(node.attrs["axis"], len(x.shape))
    return Known(x.dtype, x.shape[:axis] + (None,) + x.shape[axis + 1:])


@rule("Unique")
def unique(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """Unique: (values, first indices, inverse indices, counts); data-dependent lengths."""
    x = ins[0] or Known()
    found = Known("int64", (None,))
    if "axis" not in node.attrs:
        inverse = Known("int64", None if x.shape is None else (product(x.shape),))
        return [Known(x.dtype, (None,)), found, inverse, found]
    if x.shape is None:
        return [Known(x.dtype), found, found, found]
    axis = axis_of(node.attrs["axis"], len(x.shape))
    return [Known(x.dtype, x.shape[:axis] + (None,) + x.shape[axis + 1:]), found,
            Known("int64", (x.shape[axis],)), found]


@rule("TopK")
def top_k(node: ir.Node, ins: Ins, ctx: Context) -> list[Known]:
    """TopK: values and int64 indices with `k` entries along `axis`."""
    x = ins[0] or Known()
    k = ints_at(node, ins, "k", 1)
    if x.shape is None:
        return [Known(x.dtype), Known("int64")]
    axis = axis_of(node.attrs.get("axis", -1), len(x.shape))
    size: Dim = k[0] if k is not None and len(k) == 1 else None
    shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
    return [Known(x.dtype, shape), Known("int64", shape)]


@rule("DepthToSpace", "SpaceToDepth")
def depth_space(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Depth to space: (N, C / b², H·b, W·b); space to depth the reverse."""
    x = ins[0] or Known()
    b = int(node.attrs["blocksize"])
    if x.shape is None or len(x.shape) != 4:
        return _unknown_dims(x)
    n, c, h, w = x.shape
    if node.op_type == "DepthToSpace":
        return Known(x.dtype, (n, quotient((c,), [b * b]), product([h, b]), product([w, b])))
    return Known(x.dtype, (n, product([c, b * b]), quotient((h,), [b]), quotient((w,), [b])))


@rule("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
      "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")
def reduce(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Reductions over `axes` (an attribute, or an input from opset 13/18; none: all, or
    nothing with noop_with_empty_axes), keeping them as 1s with keepdims."""
    x = ins[0] or Known()
    keep = node.attrs.get("keepdims", 1)
    axes = ints_at(node, ins, "axes", 1)
    if x.shape is None or (axes is None and arg(ins, 1) is not None):
        return _unknown_dims(x, keep_rank=bool(keep))
    rank = len(x.shape)
    if not axes:
        if node.attrs.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    picked = {axis_of(a, rank) for a in axes}
    shape = tuple(1 if i in picked else d for i, d in enumerate(x.shape)
                  if keep or i not in picked)
    fn = REDUCTIONS.get(node.op_type)
    value = None
    if fn is not None and rank == 1 and x.value is not None and x.value:
        value = (fn(tuple(x.value)),)
    return Known(x.dtype, shape, value)


@rule("ArgMax", "ArgMin")
def arg_extreme(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """ArgMax/ArgMin: int64 indices, `axis` kept as 1 with keepdims."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known("int64")
    axis = axis_of(node.attrs.get("axis", 0), len(x.shape))
    keep = node.attrs.get("keepdims", 1)
    return Known("int64", tuple(1 if i == axis else d for i, d in enumerate(x.shape)
                                if keep or i != axis))


@rule("Resize", "Upsample")
def resize(node: ir.Node, ins: Ins, ctx: Context) -> Known:
    """Resize to known `sizes` (stretched, or keeping the aspect ratio) or by known
    `scales` (floor(d · s)); Upsample and opset-10 Resize take scales only."""
    x = ins[0] or Known()
    if x.shape is None:
        return Known(x.dtype)
    rank = len(x.shape)
    if node.op_type == "Upsample" or ctx.opset < 11:
        scales, sizes = floats_at(node, ins, "scales", 1), None
    else:
        scales, sizes = given(ins, 2).numbers(), given(ins, 3).value
    axes = [axis_of(a, rank) for a in node.attrs.get("axes") or range(rank)]
    dims = list(x.shape)
    if sizes is not None and len(sizes) == len(axes):
        policy = node.attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            for a, s in zip(axes, sizes):
                dims[a] = s
            return Known(x.dtype, tuple(dims))
        ratios = [s / x.shape[a] for a, s in zip(axes, sizes)]  # type: ignore[operator]
        scale = min(ratios) if policy == "not_larger" else max(ratios)
        for a in axes:
            dims[a] = int(scale * dims[a] + 0.5)  # type: ignore[operator]
        return Known(x.dtype, tuple(dims))
    if scales and len(scales) == len(axes):  # (an empty scales input means "use sizes")
        for a, s in zip(axes, scales):
            d = dims[a]
            dims[a] = int(math.floor(d * s)) if isinstance(d, int) else d if s == 1 else None
        return Known(x.dtype, tuple(dims))
    return _unknown_dims(x)
