"""Sliding windows over the trailing (spatial) dims: the one im2col that convolution, unfold,
fold and pooling share, and its adjoint (col2im).

`windows` gathers, for every kernel offset, the strided slice of the (already padded) input
that this offset of the kernel sees at every output position, and stacks those slices on a
new dim: ``(..., *spatial) -> (..., K, *out)`` with ``K = prod(kernel)`` in row-major kernel
order, which is exactly the order of a conv weight's ``(C, *kernel)`` flattening. The work is
``K`` views and one copy, so a convolution becomes one (batched) matmul. `place_windows` is the
adjoint: it adds each window back at its position (zero insertion for the stride, then a
constant pad per kernel offset).

Everything here is built from public tensor ops, so it runs on every device and autodiff can
record it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from ... import ArgumentError, ShapeError, Tensor, pad, stack

Ints = tuple[int, ...]


def ntuple(value: Any, n: int, name: str, op: str, minimum: int | None = None) -> Ints:
    """`value` (an int, or a sequence of 1 or `n` ints) as a tuple of `n` ints, each at least
    `minimum` when given."""
    if isinstance(value, bool):
        raise ArgumentError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if isinstance(value, int):
        out = (value,) * n
    elif isinstance(value, Sequence) and len(value) in (1, n) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        out = tuple(value) * (n if len(value) == 1 else 1)
    else:
        raise ArgumentError(f"{op}: {name} must be an int or {n} ints, got {value!r}")
    if minimum is not None and any(v < minimum for v in out):
        raise ArgumentError(f"{op}: {name} must be >= {minimum}, got {value!r}")
    return out


def check_rank(x: Tensor, ranks: tuple[int, ...], op: str, layout: str) -> None:
    """Raise ShapeError unless `x` is a tensor whose rank is one of `ranks`."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op} expects a tensor, got {type(x).__name__}")
    if x.ndim not in ranks:
        wanted = " or ".join(str(r) for r in ranks)
        raise ShapeError(f"{op} expects a {wanted}-d input ({layout}), got shape {x.shape}")


def check_min_rank(x: Tensor, minimum: int, op: str, layout: str) -> None:
    """Raise ShapeError unless `x` is a tensor with at least `minimum` dims."""
    if not isinstance(x, Tensor):
        raise ArgumentError(f"{op} expects a tensor, got {type(x).__name__}")
    if x.ndim < minimum:
        raise ShapeError(f"{op} expects an input with at least {minimum} dims ({layout}), got "
                         f"shape {x.shape}")


def output_size(size: int, kernel: int, stride: int, dilation: int, before: int, after: int,
                ceil_mode: bool = False) -> int:
    """Number of window positions along one dim of `size` padded by (`before`, `after`).
    With `ceil_mode` a last, partial window counts if it starts inside the input or the left
    padding (PyTorch's rule for pooling)."""
    span = dilation * (kernel - 1) + 1
    room = size + before + after - span
    if not ceil_mode:
        return room // stride + 1 if room >= 0 else 0
    # a window wider than the padded input still counts once, as it starts inside it
    out = max(0, -(-room // stride) + 1)
    if out and (out - 1) * stride >= size + before:
        out -= 1
    return out


def windowed_sizes(x: Tensor, kernel: Ints, stride: Ints, dilation: Ints,
                   pads: Sequence[tuple[int, int]], op: str, ceil_mode: bool = False) -> Ints:
    """Output sizes of a sliding window over x's trailing dims; ShapeError if the window is
    larger than the padded input in some dim."""
    nd = len(kernel)
    spatial = x.shape[-nd:]
    out = []
    for i, (n, k, s, d, (b, a)) in enumerate(zip(spatial, kernel, stride, dilation, pads)):
        o = output_size(n, k, s, d, b, a, ceil_mode)
        if o <= 0:
            raise ShapeError(f"{op}: the kernel {kernel} (dilation {dilation}) is larger than "
                             f"the padded input in spatial dim {i}: input shape {x.shape}, "
                             f"padding {tuple(pads)}")
        out.append(o)
    return tuple(out)


def pad_spatial(x: Tensor, pads: Sequence[tuple[int, int]], value: float = 0.0) -> Tensor:
    """x with its trailing ``len(pads)`` dims padded by (before, after) pairs with `value`."""
    if not any(b or a for b, a in pads):
        return x
    flat = [v for pair in reversed(pads) for v in pair]
    return pad(x, flat, value=value)


def windows(x: Tensor, kernel: Ints, stride: Ints, dilation: Ints, out: Ints) -> Tensor:
    """The windows of the padded input x: ``(..., *spatial) -> (..., K, *out)``, entry
    ``[..., k, *o]`` being the element under kernel offset k (row-major) at output
    position o."""
    nd = len(kernel)
    pieces = []
    for offset in itertools.product(*(range(k) for k in kernel)):
        key = tuple(slice(j * d, j * d + s * (o - 1) + 1, s)
                    for j, d, s, o in zip(offset, dilation, stride, out))
        pieces.append(x[(Ellipsis, *key)])
    if len(pieces) == 1:
        return pieces[0].unsqueeze(-nd - 1)
    return stack(pieces, dim=-nd - 1)


def spread(x: Tensor, stride: Ints) -> Tensor:
    """Zero insertion: ``stride - 1`` zeros between neighbours along each trailing dim, so
    a dim of size n becomes ``stride * (n - 1) + 1``."""
    nd = len(stride)
    if all(s == 1 for s in stride):
        return x
    lead, sizes = x.shape[:-nd], x.shape[-nd:]
    gaps = x.reshape(lead + tuple(v for n in sizes for v in (n, 1)))
    widths = [v for s in reversed(stride) for v in (0, s - 1, 0, 0)]
    wide = pad(gaps, widths).reshape(lead + tuple(n * s for n, s in zip(sizes, stride)))
    return wide[(Ellipsis, *(slice(0, s * (n - 1) + 1) for n, s in zip(sizes, stride)))]


def place_windows(cols: Tensor, kernel: Ints, stride: Ints, dilation: Ints,
                  size: Ints) -> Tensor:
    """The adjoint of `windows` (col2im): ``(..., K, *out) -> (..., *size)``, adding every
    window entry at the padded-input position it came from (overlaps accumulate)."""
    nd = len(kernel)
    sparse = spread(cols, stride)
    span = sparse.shape[-nd:]
    total = None
    for k, offset in enumerate(itertools.product(*(range(n) for n in kernel))):
        starts = [j * d for j, d in zip(offset, dilation)]
        piece = sparse[(Ellipsis, k) + (slice(None),) * nd]
        placed = pad_spatial(piece, [(b, n - b - w) for b, n, w in zip(starts, size, span)])
        total = placed if total is None else total + placed
    return total
