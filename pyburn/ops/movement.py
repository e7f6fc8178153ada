"""Movement ops: reshape, permute, expand, slicing helpers, cat/stack, pad, roll, ..."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor, check_dtype_on, install, result
from ..dtypes import promote
from ..errors import ArgumentError, DeviceError, ShapeError
from ..shape import (
    Shape,
    as_shape,
    broadcast_shapes,
    check_permutation,
    infer_reshape,
    norm_dim,
    numel,
)
from .creation import tensor


def _sizes(args: Sequence[Any]) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def reshape(x: Tensor, *shape: Any) -> Tensor:
    """The same elements (row-major) with a new shape; one size may be -1."""
    return reshape_checked(x, infer_reshape(_sizes(shape), x.numel(), x.shape))


def reshape_checked(x: Tensor, shape: Shape) -> Tensor:
    """`x` reshaped to `shape`, a tuple of sizes that the caller computed from x's own shape
    (so it holds x's elements): `reshape` without reading and checking its arguments."""
    if shape == x.shape:
        return x
    return result(x.device.backend.reshape(x._h, shape), shape, x.dtype, "reshape", (x,))


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims `start_dim` .. `end_dim` (inclusive) into one."""
    if x.ndim == 0:
        return reshape(x, 1)
    start, end = norm_dim(start_dim, x.ndim), norm_dim(end_dim, x.ndim)
    if start > end:
        raise ArgumentError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    merged = numel(x.shape[start:end + 1])
    return reshape_checked(x, x.shape[:start] + (merged,) + x.shape[end + 1:])


def unflatten(x: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim `dim` into `sizes` (one may be -1)."""
    d = norm_dim(dim, x.ndim)
    inner = infer_reshape(tuple(sizes), x.shape[d], (x.shape[d],))
    return reshape(x, x.shape[:d] + inner + x.shape[d + 1:])


def squeeze(x: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Drop size-1 dims (all of them, or those in `dim` that have size 1)."""
    if dim is None:
        dims = {i for i, s in enumerate(x.shape) if s == 1}
    else:
        listed = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {d for d in (norm_dim(d, max(x.ndim, 1)) for d in listed)
                if x.ndim and x.shape[d] == 1}
    return reshape_checked(x, tuple([s for i, s in enumerate(x.shape) if i not in dims]))


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at `dim` (``-1`` appends)."""
    shape = x.shape
    d = norm_dim(dim, len(shape), extra=1)
    return reshape_checked(x, shape[:d] + (1,) + shape[d:])


def permute(x: Tensor, *dims: Any) -> Tensor:
    """Reorder dims: result dim i is dim ``dims[i]`` of x."""
    order = check_permutation(_sizes(dims), x.ndim)
    if order == tuple(range(x.ndim)):
        return x
    return permute_checked(x, order)


def permute_checked(x: Tensor, order: tuple[int, ...]) -> Tensor:
    """`x` permuted by `order`, a permutation of its dims that is not the identity, which the
    caller built itself: `permute` without checking it."""
    shape = x.shape
    return result(x.device.backend.permute(x._h, order), tuple([shape[d] for d in order]),
                  x.dtype, "permute", (x,), axes=order)


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    ndim = len(x.shape)
    if ndim == 0:
        return x
    a, b = norm_dim(dim0, ndim), norm_dim(dim1, ndim)
    if a == b:
        return x
    order = list(range(ndim))
    order[a], order[b] = b, a
    return permute_checked(x, tuple(order))


swapdims = transpose


def t(x: Tensor) -> Tensor:
    """Transpose a matrix (0-d and 1-d tensors are returned as they are)."""
    if x.ndim > 2:
        raise ShapeError(f"t() expects a tensor of rank <= 2, got shape {x.shape}; "
                         "use transpose or mT")
    return transpose(x, 0, -1) if x.ndim == 2 else x


def movedim(x: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Move dims `source` to positions `destination`, keeping the others in order."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ArgumentError(f"movedim: {len(src)} source dims but {len(dst)} destinations")
    src = [norm_dim(d, x.ndim) for d in src]
    dst = [norm_dim(d, x.ndim) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ArgumentError("movedim: repeated dims")
    rest = iter(d for d in range(x.ndim) if d not in src)
    placed = dict(zip(dst, src))
    return permute(x, [placed[i] if i in placed else next(rest) for i in range(x.ndim)])


def expand(x: Tensor, *sizes: Any) -> Tensor:
    """Broadcast size-1 dims to larger sizes (-1 keeps a size; new dims go in front)."""
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise ShapeError(f"expand: target {sizes} has fewer dims than shape {x.shape}")
    lead = len(sizes) - x.ndim
    target = []
    for i, s in enumerate(sizes):
        old = x.shape[i - lead] if i >= lead else None
        if s == -1:
            if old is None:
                raise ShapeError(f"expand: -1 is not allowed for the new leading dim {i}")
            s = old
        elif old is not None and old != s and old != 1:
            raise ShapeError(f"expand: cannot expand shape {x.shape} to {tuple(sizes)} "
                             f"(dim {i}: {old} vs {s})")
        target.append(s)
    return broadcast_to(x, as_shape(target))


def broadcast_to(x: Tensor, shape: Any) -> Tensor:
    """`x` broadcast to `shape` (numpy rules)."""
    shape = as_shape((shape,) if isinstance(shape, int) else shape)
    if broadcast_shapes(x.shape, shape) != shape:
        raise ShapeError(f"cannot broadcast shape {x.shape} to {shape}")
    return broadcast_checked(x, shape)


def broadcast_checked(x: Tensor, shape: Shape) -> Tensor:
    """`x` broadcast to `shape`, which the caller has checked `x` broadcasts to: one
    autodiff step (its rule sums the gradient over the added and widened dims)."""
    old = x.shape
    if shape == old:
        return x
    backend = x.device.backend
    h = x._h
    if len(shape) != len(old):
        h = backend.reshape(h, (1,) * (len(shape) - len(old)) + old)
    return result(backend.expand(h, shape), shape, x.dtype, "expand", (x,))


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """`x` expanded to `other`'s shape."""
    return expand(x, other.shape)


def repeat(x: Tensor, *repeats: Any) -> Tensor:
    """Tile the tensor: dim i is repeated ``repeats[i]`` times (extra leading repeats add dims)."""
    reps = as_shape(_sizes(repeats), "repeat count")
    if len(reps) < x.ndim:
        raise ShapeError(f"repeat needs at least {x.ndim} counts for shape {x.shape}, got {reps}")
    base = (1,) * (len(reps) - x.ndim) + x.shape
    interleaved = reshape(x, tuple(v for s in base for v in (1, s)))
    wide = broadcast_to(interleaved, tuple(v for r, s in zip(reps, base) for v in (r, s)))
    return reshape(wide, tuple(r * s for r, s in zip(reps, base)))


def tile(x: Tensor, dims: Sequence[int]) -> Tensor:
    """Like `repeat`, but fewer counts than dims means leading counts of 1."""
    dims = tuple(dims)
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


def flip(x: Tensor, dims: int | Sequence[int]) -> Tensor:
    """Reverse the order of elements along `dims`."""
    listed = (dims,) if isinstance(dims, int) else tuple(dims)
    axes = tuple(sorted({norm_dim(d, x.ndim) for d in listed}))
    if not axes or x.ndim == 0:
        return x
    return result(x.device.backend.flip(x._h, axes), x.shape, x.dtype, "flip", (x,), axes=axes)


def slice_dim(x: Tensor, dim: int, start: int, stop: int, step: int = 1) -> Tensor:
    """Elements ``start:stop:step`` (already within range, step >= 1) along one dim."""
    d = norm_dim(dim, x.ndim)
    if (start, stop, step) == (0, x.shape[d], 1):
        return x
    starts = [0] * x.ndim
    stops = list(x.shape)
    steps = [1] * x.ndim
    starts[d], stops[d], steps[d] = start, stop, step
    size = len(range(start, stop, step))
    shape = x.shape[:d] + (size,) + x.shape[d + 1:]
    return result(x.device.backend.slice(x._h, starts, stops, steps), shape, x.dtype, "slice",
                  (x,), starts=starts, steps=steps)


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """`length` elements of dim `dim` from `start` (negative start counts from the end)."""
    d = norm_dim(dim, x.ndim)
    size = x.shape[d]
    begin = start + size if start < 0 else start
    if not (0 <= begin <= size and 0 <= length and begin + length <= size):
        raise ArgumentError(f"narrow: start {start} and length {length} do not fit dim {dim} "
                            f"of size {size}")
    return slice_dim(x, d, begin, begin + length)


def split(x: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> list[Tensor]:
    """Cut into pieces of `split_size` (the last may be smaller) or of the listed sizes."""
    d = norm_dim(dim, x.ndim)
    size = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0:
            raise ArgumentError(f"split size must be positive, got {step}")
        sizes = [min(step, size - i) for i in range(0, size, step)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise ShapeError(f"split sizes {sizes} do not add up to dim {dim} of size {size}")
    pieces, begin = [], 0
    for s in sizes:
        pieces.append(slice_dim(x, d, begin, begin + s))
        begin += s
    return pieces


def chunk(x: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
    """Cut into at most `chunks` pieces of equal size (the last may be smaller)."""
    if chunks <= 0:
        raise ArgumentError(f"chunk needs a positive number of chunks, got {chunks}")
    size = x.shape[norm_dim(dim, x.ndim)]
    return split(x, max(1, -(-size // chunks)), dim)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim; dtypes are promoted."""
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("cat needs at least one tensor")
    first = tensors[0]
    d = norm_dim(dim, first.ndim)
    dtype = first.dtype
    for i, x in enumerate(tensors):
        if x.device is not first.device:
            raise DeviceError(f"cat: tensor {i} is on {x.device.name}, tensor 0 on "
                              f"{first.device.name}")
        if x.ndim != first.ndim or any(a != b for j, (a, b) in
                                        enumerate(zip(x.shape, first.shape)) if j != d):
            raise ShapeError(f"cat along dim {dim}: shape {x.shape} of tensor {i} does not "
                             f"match shape {first.shape} of tensor 0 outside dim {dim}")
        dtype = promote(dtype, x.dtype)
    check_dtype_on(dtype, first.device)
    if len(tensors) == 1:
        return first.cast(dtype)
    shape = first.shape[:d] + (sum(x.shape[d] for x in tensors),) + first.shape[d + 1:]
    parts = tuple(x.cast(dtype) for x in tensors)
    return result(first.device.backend.cat([x._h for x in parts], d), shape, dtype, "cat", parts,
                  axis=d)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors of one shape along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("stack needs at least one tensor")
    for i, x in enumerate(tensors):
        if x.shape != tensors[0].shape:
            raise ShapeError(f"stack: tensor {i} has shape {x.shape}, tensor 0 has "
                             f"{tensors[0].shape}")
    d = norm_dim(dim, tensors[0].ndim, extra=1)
    return cat([unsqueeze(x, d) for x in tensors], d)


def roll(x: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Rotate elements along `dims` by `shifts` (flattened first if dims is None)."""
    if dims is None:
        if not isinstance(shifts, int):
            raise ArgumentError("roll without dims takes a single int shift")
        return reshape(roll(flatten(x), shifts, 0), x.shape)
    shift_list = [shifts] if isinstance(shifts, int) else list(shifts)
    dim_list = [dims] if isinstance(dims, int) else list(dims)
    if len(shift_list) != len(dim_list):
        raise ArgumentError(f"roll: {len(shift_list)} shifts for {len(dim_list)} dims")
    out = x
    for s, dim in zip(shift_list, dim_list):
        d = norm_dim(dim, x.ndim)
        size = x.shape[d]
        if size == 0 or s % size == 0:
            continue
        cut = size - s % size
        out = cat([slice_dim(out, d, cut, size), slice_dim(out, d, 0, cut)], d)
    return out


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float = 0) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims: `pad` is (last_before, last_after, previous_before,
    ...) as in ``torch.nn.functional.pad``. Modes: "constant" (negative pads crop),
    "reflect", "replicate", "circular"."""
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ArgumentError(f"pad needs pairs of sizes for at most {x.ndim} dims, got {pad}")
    pairs = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        pairs[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    if mode == "constant":
        return _pad_constant(x, pairs, value)
    if mode not in ("reflect", "replicate", "circular"):
        raise ArgumentError(f"pad mode is constant, reflect, replicate or circular, got {mode!r}")
    out = x
    for d, (before, after) in enumerate(pairs):
        if before or after:
            out = _pad_by_index(out, d, before, after, mode)
    return out


def _pad_constant(x: Tensor, pairs: list[tuple[int, int]], value: float) -> Tensor:
    for d, (before, after) in enumerate(pairs):  # negative pads crop first
        if before < 0 or after < 0:
            size = x.shape[d]
            x = slice_dim(x, d, max(0, -before), max(max(0, -before), size - max(0, -after)))
    grow = [(max(0, b), max(0, a)) for b, a in pairs]
    if not any(b or a for b, a in grow):
        return x
    shape = tuple(s + b + a for s, (b, a) in zip(x.shape, grow))
    fill = bool(value) if x.dtype.is_bool else (value if x.dtype.is_floating_point
                                                 else int(value))
    return result(x.device.backend.pad(x._h, grow, fill), shape, x.dtype, "pad", (x,), pads=grow)


def pad_dim(x: Tensor, dim: int, before: int, after: int) -> Tensor:
    """Zero-pad one dim by `before` and `after` (>= 0) elements."""
    if not before and not after:
        return x
    pairs = [(0, 0)] * x.ndim
    pairs[dim] = (before, after)
    return _pad_constant(x, pairs, 0)


def _pad_by_index(x: Tensor, d: int, before: int, after: int, mode: str) -> Tensor:
    size = x.shape[d]
    if mode == "reflect" and (before >= size or after >= size):
        raise ArgumentError(f"reflect padding ({before}, {after}) must be smaller than the "
                            f"size {size} of dim {d}")
    if size == 0:
        raise ArgumentError(f"cannot {mode}-pad an empty dim {d}")
    positions = range(-before, size + after)
    if mode == "replicate":
        index = [min(max(i, 0), size - 1) for i in positions]
    elif mode == "circular":
        index = [i % size for i in positions]
    else:
        period = 2 * (size - 1) or 1
        index = [size - 1 - abs(size - 1 - abs(i) % period) for i in positions]
    return x.index_select(d, tensor(index, device=x.device))


MOVEMENT = {"reshape": reshape, "view": reshape, "flatten": flatten, "unflatten": unflatten,
            "squeeze": squeeze, "unsqueeze": unsqueeze, "permute": permute,
            "transpose": transpose, "swapdims": transpose, "swapaxes": transpose, "t": t,
            "movedim": movedim, "moveaxis": movedim, "expand": expand,
            "broadcast_to": broadcast_to, "expand_as": expand_as, "repeat": repeat,
            "tile": tile, "flip": flip, "narrow": narrow, "split": split, "chunk": chunk,
            "roll": roll, "view_as": lambda x, other: reshape(x, other.shape),
            "reshape_as": lambda x, other: reshape(x, other.shape)}
install(MOVEMENT)
