"""ONNX operators that cut, join and pad tensors: Slice, Split, Concat, Tile, Pad,
CenterCropPad, Compress."""

from __future__ import annotations

from ..._tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...ops.indexing import nonzero
from ...ops.movement import cat
from ...ops.movement import pad as tensor_pad
from ...shape import norm_dim
from ..registry import Ints, check, ints, onnx_op


# ---- Slice -------------------------------------------------------------------------------------
def slice_axes(data: Tensor, starts: list[int], ends: list[int], axes: list[int] | None,
               steps: list[int] | None) -> Tensor:
    """Slice with ONNX's rules: negative starts/ends count from the end, out-of-range ones
    (INT64_MAX, INT64_MIN) are clamped, negative steps walk backwards."""
    axes = list(range(len(starts))) if not axes else axes
    steps = [1] * len(starts) if not steps else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ArgumentError(f"Slice: starts {starts}, ends {ends}, axes {axes} and steps "
                            f"{steps} must have one entry per sliced axis")
    key = [slice(None)] * data.ndim
    seen = set()
    for start, end, axis, step in zip(starts, ends, axes, steps):
        d = norm_dim(axis, data.ndim)
        check(d not in seen, f"Slice: axis {axis} appears twice in {axes}")
        check(step != 0, "Slice: a step cannot be 0")
        seen.add(d)
        key[d] = _clamped(start, end, step, data.shape[d])
    return data[tuple(key)]


def _clamped(start: int, end: int, step: int, size: int) -> slice:
    """The Python slice for ONNX's (start, end, step) on a dim of `size`."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        return slice(min(max(start, 0), size), min(max(end, 0), size), step)
    if size == 0:
        return slice(0, 0)
    start = min(max(start, 0), size - 1)
    end = min(max(end, -1), size - 1)
    # an end of -1 means "past the first element", which a Python slice spells None
    return slice(start, end if end >= 0 else None, step)


@onnx_op("Slice", since=1)
def slice_1(data: Tensor, *, starts: list[int], ends: list[int],
            axes: list[int] | None = None) -> Tensor:
    """Slice with starts, ends and axes as attributes (opsets 1 to 9)."""
    return slice_axes(data, list(starts), list(ends), list(axes) if axes else None, None)


@onnx_op("Slice", since=10)
def slice_(data: Tensor, starts: Ints, ends: Ints, axes: Ints | None = None,
           steps: Ints | None = None) -> Tensor:
    """Slice: elements ``starts:ends:steps`` along `axes` (all leading axes by default)."""
    return slice_axes(data, ints(starts), ints(ends), ints(axes), ints(steps))


# ---- Split / Concat ----------------------------------------------------------------------------
def split_sizes(size: int, split: list[int] | None, num_outputs: int | None) -> list[int]:
    """The piece sizes: `split` as given, or `num_outputs` pieces of ``ceil(size / n)``
    with a smaller last one."""
    if split:
        if sum(split) != size or any(s < 0 for s in split):
            raise ShapeError(f"Split: sizes {split} do not add up to the split dim's size "
                             f"{size}")
        return list(split)
    if not num_outputs or num_outputs < 1:
        raise ArgumentError("Split needs `split` sizes or a positive `num_outputs`")
    chunk = -(-size // num_outputs)
    last = size - chunk * (num_outputs - 1)
    check(last >= 0, f"Split: {size} elements cannot be cut into {num_outputs} pieces of "
                     f"{chunk}")
    return [chunk] * (num_outputs - 1) + [last]


def split_axis(x: Tensor, axis: int, sizes: list[int]) -> tuple[Tensor, ...]:
    """`x` cut along `axis` into pieces of `sizes`."""
    d = norm_dim(axis, x.ndim)
    return tuple(x.split(sizes, d)) if sizes else ()


@onnx_op("Split", since=2)
def split_2(input: Tensor, *, axis: int = 0, split: list[int] | None = None,  # noqa: A002
            num_outputs: int | None = None) -> tuple[Tensor, ...]:
    """Split with the sizes as an attribute (opsets 2 to 12); without them, into
    `num_outputs` equal pieces (the runner passes the node's output count)."""
    d = norm_dim(axis, input.ndim)
    return split_axis(input, d, split_sizes(input.shape[d], list(split or []), num_outputs))


@onnx_op("Split", since=13)
def split(input: Tensor, split: Ints | None = None, *, axis: int = 0,  # noqa: A002
          num_outputs: int | None = None) -> tuple[Tensor, ...]:
    """Split: pieces of the sizes in `split`, else `num_outputs` pieces of
    ``ceil(size / num_outputs)`` (the last smaller; before opset 18 the count is the
    node's output count)."""
    d = norm_dim(axis, input.ndim)
    return split_axis(input, d, split_sizes(input.shape[d], ints(split), num_outputs))


@onnx_op("Concat", since=4)
def concat(*inputs: Tensor, axis: int) -> Tensor:
    """Concat: join the inputs along `axis`."""
    check(bool(inputs), "Concat needs at least one input")
    return cat(list(inputs), norm_dim(axis, inputs[0].ndim))


# ---- Tile / Pad / CenterCropPad / Compress ------------------------------------------------------
@onnx_op("Tile", since=6)
def tile(input: Tensor, repeats: Ints) -> Tensor:  # noqa: A002 - ONNX's name
    """Tile: dim i repeated ``repeats[i]`` times."""
    reps = ints(repeats)
    check(len(reps) == input.ndim, f"Tile needs one repeat count per dim of shape "
                                   f"{input.shape}, got {reps}")
    return input.repeat(reps)


#: ONNX's Pad modes and the names `pyburn.pad` knows them by
_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate",
              "wrap": "circular"}


def pad_axes(data: Tensor, pads: list[int], mode: str, value: float | int | bool,
             axes: list[int] | None) -> Tensor:
    """Pad ONNX-style: `pads` is (begin of each axis..., end of each axis...) for `axes`
    (all dims by default); negative pads crop."""
    if mode not in _PAD_MODES:
        raise ArgumentError(f"Pad mode is one of {', '.join(_PAD_MODES)}, got {mode!r}")
    axes = [norm_dim(a, data.ndim) for a in axes] if axes else list(range(data.ndim))
    if len(pads) != 2 * len(axes):
        raise ArgumentError(f"Pad: {len(pads)} pads for {len(axes)} axes; it needs 2 per axis")
    pairs = [(0, 0)] * data.ndim
    for i, d in enumerate(axes):
        pairs[d] = (pads[i], pads[len(axes) + i])
    if mode == "constant":
        return tensor_pad(data, _torch_order(pairs), "constant", value)
    # crop first (the negative pads), then grow by the positive ones
    key = tuple(slice(max(0, -b), s - max(0, -a)) for s, (b, a) in zip(data.shape, pairs))
    out = data[key]
    for d, (before, after) in enumerate(pairs):
        before, after = max(0, before), max(0, after)
        while before or after:
            # reflect pads reach at most size - 1 per step; numpy (and so ONNX's reference)
            # reflects the already padded tensor again for wider pads
            limit = out.shape[d] - 1 if mode == "reflect" else max(before, after)
            check(limit > 0, f"Pad: cannot {mode}-pad dim {d} of size {out.shape[d]}")
            step = [(0, 0)] * data.ndim
            step[d] = (min(before, limit), min(after, limit))
            out = tensor_pad(out, _torch_order(step), _PAD_MODES[mode])
            before, after = before - step[d][0], after - step[d][1]
    return out


def _torch_order(pairs: list[tuple[int, int]]) -> list[int]:
    """Per-dim (before, after) pairs in `pyburn.pad`'s order: last dim first."""
    return [p for before, after in reversed(pairs) for p in (before, after)]


def _fill(value: Tensor | float | None) -> float | int | bool:
    if value is None:
        return 0
    return value.item() if isinstance(value, Tensor) else value


@onnx_op("Pad", since=2)
def pad_2(data: Tensor, *, pads: list[int], mode: str = "constant",
          value: float = 0.0) -> Tensor:
    """Pad with the pads and the fill value as attributes (opsets 2 to 10)."""
    return pad_axes(data, list(pads), mode, value, None)


@onnx_op("Pad", since=11)
def pad(data: Tensor, pads: Ints, constant_value: Tensor | None = None,
        axes: Ints | None = None, *, mode: str = "constant") -> Tensor:
    """Pad: modes constant, reflect, edge and wrap (opset 19); `axes` from opset 18;
    negative pads crop."""
    return pad_axes(data, ints(pads), mode, _fill(constant_value), ints(axes))


@onnx_op("CenterCropPad", since=18)
def center_crop_pad(input_data: Tensor, shape: Ints, *,
                    axes: list[int] | None = None) -> Tensor:
    """CenterCropPad: crop or zero-pad `axes` symmetrically to `shape` (the extra element
    of an odd difference goes to the end)."""
    target = ints(shape)
    dims = [norm_dim(a, input_data.ndim) for a in axes] if axes else list(range(input_data.ndim))
    check(len(target) == len(dims), f"CenterCropPad: shape {target} has {len(target)} "
                                    f"entries for {len(dims)} axes")
    pairs = [(0, 0)] * input_data.ndim
    for d, size in zip(dims, target):
        grow = size - input_data.shape[d]
        cut = -grow
        # the smaller half of an odd difference goes at the start, for crops and pads alike
        pairs[d] = (grow // 2, grow - grow // 2) if grow >= 0 else (-(cut // 2), cut // 2 - cut)
    return tensor_pad(input_data, _torch_order(pairs), "constant", 0)


@onnx_op("Compress", since=9)
def compress(input: Tensor, condition: Tensor, *,  # noqa: A002 - ONNX's name
             axis: int | None = None) -> Tensor:
    """Compress: the slices along `axis` (of the flattened input without one) where the
    1-d `condition` is true; a shorter condition counts as false past its end."""
    x = input.reshape(-1) if axis is None else input
    d = 0 if axis is None else norm_dim(axis, input.ndim)
    cond = condition.reshape(-1)
    if cond.shape[0] > x.shape[d]:
        cond = cond[:x.shape[d]]
    keep = nonzero(cond.bool()).reshape(-1)
    return x.index_select(d, keep)
