"""The cpu backend's sum reduction, in one place for the "sum" op and for the capabilities
that sum as their composites do (`fused`): the same numbers either way.

A sum over the trailing dims of many short rows is a product of the rows with a vector of
ones: numpy's reduction costs about 17 ns per row on top of the adds (10 µs for 576 rows of
4, a squeeze-excitation block's pooling; softmax's rows of an attention), the product is one
BLAS call (1.3 µs). Its sums run in vector lanes, each lane's terms in order: within about
(row / 64 + 6) units in the last place of the sum of magnitudes, where numpy's pairwise sum
is within about 20, so only rows up to `ROW_SUM_MAX` go that way.
"""

from __future__ import annotations

import functools
import math

import numpy as np

ROW_SUM_MAX = 4096  # the longest row summed by the product
ROW_SUM_MIN_ROWS = 16  # fewer rows: numpy's per-row cost is no matter
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def sum_kept(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The sum of x over `axes`, kept as size 1 (float16 accumulates in float32; integers
    keep their dtype)."""
    if not axes:
        return x
    if _in_rows(x, axes):
        return _row_sums(x, len(axes))
    acc = np.float32 if x.dtype == np.float16 else x.dtype
    return np.add.reduce(x, axis=axes, keepdims=True, dtype=acc).astype(x.dtype, copy=False)


def _in_rows(x: np.ndarray, axes: tuple[int, ...]) -> bool:
    """Whether a sum of x over `axes` is one of the rows of a contiguous float32 or float64
    2-d view, short and many enough for `_row_sums`."""
    if x.dtype not in _BLAS_FLOATS or not x.flags.c_contiguous:
        return False
    inner = x.ndim - len(axes)
    if axes != tuple(range(inner, x.ndim)):
        return False
    row = math.prod(x.shape[inner:])
    return row <= ROW_SUM_MAX and x.size >= ROW_SUM_MIN_ROWS * row


def _row_sums(x: np.ndarray, trailing: int) -> np.ndarray:
    """The sums over the last `trailing` dims of contiguous x, kept as size 1: the product
    of its rows with a vector of ones."""
    kept = x.shape[:x.ndim - trailing] + (1,) * trailing
    rows = x.reshape(-1, math.prod(x.shape[x.ndim - trailing:]))
    return np.matmul(rows, _ones(rows.shape[1], x.dtype)).reshape(kept)


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    """A read-only vector of n ones (a model sums rows of few lengths, again and again)."""
    ones = np.ones(n, dtype)
    ones.flags.writeable = False
    return ones
