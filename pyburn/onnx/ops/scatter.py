"""ONNX operators that write values at indexed positions: ScatterElements (and its old name
Scatter), ScatterND and Col2Im."""

from __future__ import annotations

from collections import Counter

from ..._tensor import Tensor
from ...dtypes import int32
from ...errors import ArgumentError, ShapeError
from ...ops.creation import arange, tensor, zeros
from ...ops.index_checks import checked_index
from ...ops.math_ops import maximum, minimum, mul
from ...shape import norm_dim, numel
from ..registry import Ints, check, ints, onnx_op

#: how the reductions that the scatter primitive lacks combine an old and a new value
_COMBINE = {"mul": mul, "max": maximum, "min": minimum}


def scatter_flat(data: Tensor, positions: Tensor, updates: Tensor, reduction: str) -> Tensor:
    """`data` with each element of `updates` written to (or, with a reduction, combined
    into) the element at the same place of `positions`, a flat position in `data`."""
    flat, pos, upd = data.reshape(-1), positions.reshape(-1), updates.reshape(-1)
    if reduction in ("none", "add"):
        out = flat.scatter(0, pos, upd, reduce=None if reduction == "none" else "add")
        return out.reshape(data.shape)
    if reduction not in _COMBINE:
        raise ArgumentError(f"scatter reduction is none, add, mul, max or min, got "
                            f"{reduction!r}")
    # the scatter primitive only assigns or adds: split the updates into rounds in which
    # no position repeats, and combine each round with what the previous ones left
    rounds: list[list[int]] = []
    seen: Counter = Counter()
    for i, p in enumerate(pos.tolist()):
        if seen[p] == len(rounds):
            rounds.append([])
        rounds[seen[p]].append(i)
        seen[p] += 1
    for members in rounds:
        picked = tensor(members, device=data.device)
        where = pos.index_select(0, picked)
        combined = _COMBINE[reduction](flat.index_select(0, where), upd.index_select(0, picked))
        flat = flat.scatter(0, where, combined)
    return flat.reshape(data.shape)


def _along(values: Tensor, d: int, rank: int) -> Tensor:
    """1-d `values` shaped to lie along dim `d` of a rank-`rank` tensor."""
    return values.reshape(tuple(values.numel() if i == d else 1 for i in range(rank)))


@onnx_op("ScatterElements", since=11)
def scatter_elements(data: Tensor, indices: Tensor, updates: Tensor, *, axis: int = 0,
                     reduction: str = "none") -> Tensor:
    """ScatterElements: ``out[i][indices[i][j]] = updates[i][j]`` for axis 1 (negative
    indices count from the end); reduction add/mul (opset 16) or max/min (opset 18)
    combines instead of assigning."""
    d = norm_dim(axis, data.ndim)
    if indices.shape != updates.shape or indices.ndim != data.ndim:
        raise ShapeError(f"ScatterElements: indices {indices.shape} and updates "
                         f"{updates.shape} must have one shape, of the rank of data "
                         f"{data.shape}")
    index = checked_index(indices, data.shape[d], "ScatterElements")
    positions = None
    for j, size in enumerate(indices.shape):
        coord = index if j == d else _along(arange(size, dtype=index.dtype,
                                                   device=data.device), j, data.ndim)
        term = coord * numel(data.shape[j + 1:])
        positions = term if positions is None else positions + term
    assert positions is not None  # norm_dim refused 0-d data
    return scatter_flat(data, positions.broadcast_to(indices.shape), updates, reduction)


@onnx_op("Scatter", since=9)
def scatter(data: Tensor, indices: Tensor, updates: Tensor, *, axis: int = 0) -> Tensor:
    """Scatter, the deprecated name of ScatterElements without a reduction."""
    return scatter_elements(data, indices, updates, axis=axis)


@onnx_op("ScatterND", since=11)
def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, *,
               reduction: str = "none") -> Tensor:
    """ScatterND: each last-dim row of `indices` addresses a slice of `data` that the
    matching slice of `updates` replaces (or, with a reduction, is combined into)."""
    check(indices.ndim >= 1, "ScatterND needs indices of rank >= 1")
    k = indices.shape[-1]
    check(k <= data.ndim, f"ScatterND: index rows of length {k} for data of shape "
                          f"{data.shape}")
    rest = data.shape[k:]
    if updates.shape != indices.shape[:-1] + rest:
        raise ShapeError(f"ScatterND: updates have shape {updates.shape}, expected "
                         f"{indices.shape[:-1] + rest} for indices {indices.shape} and data "
                         f"{data.shape}")
    rows = numel(indices.shape[:-1])
    cols = indices.reshape(rows, k)
    lin = zeros(rows, dtype=indices.dtype, device=data.device)
    for j in range(k):
        column = checked_index(cols[:, j], data.shape[j], "ScatterND")
        lin = lin + column * numel(data.shape[j + 1:k])
    inner = numel(rest)
    positions = lin.reshape(rows, 1) * inner + arange(inner, dtype=lin.dtype,
                                                      device=data.device).reshape(1, inner)
    return scatter_flat(data, positions, updates, reduction)


@onnx_op("Col2Im", since=18)
def col2im(input: Tensor, image_shape: Ints, block_shape: Ints, *,  # noqa: A002
           dilations: list[int] | None = None, pads: list[int] | None = None,
           strides: list[int] | None = None) -> Tensor:
    """Col2Im: columns (N, C·prod(block), L) added back into images (N, C, *image_shape);
    overlapping blocks accumulate (any number of spatial dims)."""
    image, block = ints(image_shape), ints(block_shape)
    n = len(image)
    check(n >= 1, "Col2Im needs at least one spatial dim")
    dil = list(dilations) if dilations else [1] * n
    step = list(strides) if strides else [1] * n
    pad = list(pads) if pads else [0] * (2 * n)
    check(len(block) == n and len(dil) == n and len(step) == n and len(pad) == 2 * n,
          f"Col2Im: image_shape {image}, block_shape {block}, dilations {dil}, strides "
          f"{step} and pads {pad} disagree on the number of spatial dims")
    check(input.ndim == 3, f"Col2Im needs input (N, C·prod(block), L), got {input.shape}")
    batch, rows, blocks = input.shape
    kernel = numel(block)
    padded = [image[i] + pad[i] + pad[n + i] for i in range(n)]
    counts = [(padded[i] - dil[i] * (block[i] - 1) - 1) // step[i] + 1 for i in range(n)]
    if rows % kernel or blocks != numel(counts) or min(counts, default=1) <= 0:
        raise ShapeError(f"Col2Im: input shape {input.shape} does not fit block {block} "
                         f"over image {image} (pads {pad}, strides {step}, dilations {dil})")
    channels = rows // kernel
    # where (kernel offset, block position) lands in the padded image, flattened
    positions = None
    for i in range(n):
        offset = _along(arange(block[i], device=input.device) * dil[i], i, 2 * n)
        start = _along(arange(counts[i], device=input.device) * step[i], n + i, 2 * n)
        term = (offset + start) * numel(padded[i + 1:])
        positions = term if positions is None else positions + term
    assert positions is not None
    area = numel(padded)
    index = (_along(arange(channels, device=input.device) * area, 0, 3)
             + positions.reshape(1, kernel, blocks)).reshape(1, -1)
    flat = zeros(batch, channels * area, dtype=input.dtype, device=input.device)
    out = flat.scatter(1, index.broadcast_to((batch, index.shape[1])),
                       input.reshape(batch, -1), reduce="add")
    out = out.reshape((batch, channels) + tuple(padded))
    crop = tuple(slice(pad[i], pad[i] + image[i]) for i in range(n))
    return out[(slice(None), slice(None)) + crop]


@onnx_op("TensorScatter", since=24)
def tensor_scatter(past_cache: Tensor, update: Tensor, write_indices: Tensor | None = None, *,
                   axis: int = -2, mode: str = "linear") -> Tensor:
    """TensorScatter (a KV-cache update): `update` written into `past_cache` along `axis`
    from ``write_indices[b]`` (0 without them) for each batch entry b; "circular" wraps
    the positions round the cache's length."""
    d = norm_dim(axis, past_cache.ndim)
    check(d > 0, f"TensorScatter: axis {axis} cannot be the batch dim")
    check(mode in ("linear", "circular"),
          f"TensorScatter mode is 'linear' or 'circular', got {mode!r}")
    batch, size, steps = past_cache.shape[0], past_cache.shape[d], update.shape[d]
    if write_indices is None:
        start = zeros(batch, dtype=int32, device=past_cache.device)
    else:
        start = write_indices
    position = (_along(start, 0, past_cache.ndim)
                + _along(arange(steps, dtype=start.dtype, device=past_cache.device), d,
                         past_cache.ndim))
    if mode == "circular":
        position = position.remainder(size)
    return past_cache.scatter(d, position.broadcast_to(update.shape), update)
