"""The standard's ``linalg`` extension (this module is ``xp.linalg``; the main namespace
has its `matmul`, `matrix_transpose`, `tensordot` and `vecdot` too), each on pyburn's ops:
`matmul`, `einsum`, the reductions, and the decompositions of `pyburn.ops.decompositions`.

>>> from pyburn import array_api as xp
>>> a = xp.asarray([[4.0, 1.0], [1.0, 3.0]], device="flex")
>>> xp.linalg.trace(a).item(), xp.linalg.vector_norm(xp.asarray([3.0, 4.0], device="flex")).item()
(7.0, 5.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..ops import reduction
from ..ops.decompositions import (
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    matrix_power,
    matrix_rank,
    pinv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from ..ops.linalg import einsum
from ..ops.linalg import matmul as _matmul
from ..ops.linalg import outer as _outer
from ..ops.movement import movedim, reshape, stack, swapdims
from ..shape import norm_dim
from .statistical import REDUCTIONS


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """`pyburn.matmul`."""
    return _matmul(x1, x2)


def matrix_transpose(x: Tensor, /) -> Tensor:
    """The last two axes swapped."""
    if x.ndim < 2:
        raise ShapeError(f"matrix_transpose needs at least 2 dims, got shape {x.shape}")
    return swapdims(x, -1, -2)


def tensordot(x1: Tensor, x2: Tensor, /, *,
              axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """The sum of products over `axes` (the last n of `x1` with the first n of `x2`, or two
    lists of axes), as one matmul of the two reshaped arrays."""
    if isinstance(axes, int):
        if axes < 0:
            raise ArgumentError(f"tensordot: axes must not be negative, got {axes}")
        first, second = list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    else:
        first = [norm_dim(a, x1.ndim) for a in axes[0]]
        second = [norm_dim(a, x2.ndim) for a in axes[1]]
    keep1 = [d for d in range(x1.ndim) if d not in first]
    keep2 = [d for d in range(x2.ndim) if d not in second]
    inner = math.prod(x1.shape[d] for d in first)
    a = reshape(x1.permute(*keep1, *first), (-1, inner))
    b = reshape(x2.permute(*second, *keep2), (inner, -1))
    return reshape(_matmul(a, b), tuple(x1.shape[d] for d in keep1) +
                   tuple(x2.shape[d] for d in keep2))


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The dot product of the vectors along `axis` (the other axes broadcast)."""
    if x1.ndim == 0 or x2.ndim == 0 or x1.shape[axis] != x2.shape[axis]:
        raise ShapeError(f"vecdot needs vectors of one size along axis {axis}: {x1.shape}, "
                         f"{x2.shape}")
    return reduction.sum(x1 * x2, dim=axis)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of the 3-vectors along `axis`."""
    a, b = movedim(x1, axis, -1), movedim(x2, axis, -1)
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise ShapeError(f"cross needs size 3 along axis {axis}: {x1.shape}, {x2.shape}")
    parts = [a[..., i] * b[..., j] - a[..., j] * b[..., i] for i, j in ((1, 2), (2, 0), (0, 1))]
    return movedim(stack(parts, -1), -1, axis)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The `offset`-th diagonal of each matrix (last two axes)."""
    rows, cols = x.shape[-2], x.shape[-1]
    start_row, start_col = max(-offset, 0), max(offset, 0)
    n = max(min(rows - start_row, cols - start_col), 0)
    square = x[..., start_row:start_row + n, start_col:start_col + n]
    return einsum("...ii->...i", square)


def trace(x: Tensor, /, *, offset: int = 0, dtype: object = None) -> Tensor:
    """The sum of the `offset`-th diagonal of each matrix."""
    return REDUCTIONS["sum"](diagonal(x, offset=offset), axis=-1, dtype=dtype)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """`pyburn.outer`."""
    return _outer(x1, x2)


def vector_norm(x: Tensor, /, *, axis: int | tuple[int, ...] | None = None,
                keepdims: bool = False, ord: float = 2) -> Tensor:  # noqa: A002
    """`pyburn.norm` over `axis` (every element if None)."""
    dims = list(axis) if isinstance(axis, tuple) else axis
    return reduction.norm(x, ord, dims, keepdims)


def matrix_norm(x: Tensor, /, *, keepdims: bool = False, ord: float | str = "fro") -> Tensor:  # noqa: A002
    """The norm of each matrix: "fro", "nuc" (the sum of singular values), 1, -1, inf, -inf
    (column and row sums of magnitudes) or 2, -2 (the largest, smallest singular value)."""
    if ord == "fro":
        out = reduction.norm(x, 2, [-2, -1], False)
    elif ord in ("nuc", 2, -2):
        values = svdvals(x)
        out = (reduction.sum(values, dim=-1) if ord == "nuc" else
               reduction.amax(values, dim=-1) if ord == 2 else reduction.amin(values, dim=-1))
    elif ord in (1, -1, math.inf, -math.inf):
        sums = reduction.sum(abs(x), dim=-2 if ord in (1, -1) else -1)
        out = reduction.amax(sums, dim=-1) if ord > 0 else reduction.amin(sums, dim=-1)
    else:
        raise ArgumentError(f"matrix_norm: unknown ord {ord!r}")
    return out.unsqueeze(-1).unsqueeze(-1) if keepdims else out


__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]
