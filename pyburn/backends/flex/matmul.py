"""Batched matrix product for flex.

Pure Python is fastest here as one C-level dot product per output element: rows of A and
columns of B (rows of B transposed) are turned into lists of Python numbers once, so the inner
loop never boxes an array element, then ``math.sumprod`` (Python 3.12+) or
``sum(map(mul, row, col))`` does each dot product. Sums accumulate in float64 (or exact
ints) and are rounded or wrapped to the dtype once.
"""

from __future__ import annotations

import math
import operator
from itertools import repeat

from .storage import Buf, element_offsets, pack

if hasattr(math, "sumprod"):
    def _row_times(row: list, cols: list[list]) -> list:
        return list(map(math.sumprod, repeat(row), cols))
else:
    def _row_times(row: list, cols: list[list]) -> list:
        mul = operator.mul
        return [sum(map(mul, row, col)) for col in cols]


def _rows(x: Buf, offset: int) -> list[list]:
    """The rows, as lists, of the matrix in x's last two dims that starts at `offset`."""
    rows, cols = x.shape[-2:]
    block = x.view((rows, cols), x.strides[-2:], offset).flat()
    return [block[i * cols:(i + 1) * cols].tolist() for i in range(rows)]


def matmul(a: Buf, b: Buf) -> Buf:
    """Batched product of (*B, M, K) and (*B, K, N) with the same batch dims."""
    batch = a.shape[:-2]
    # B's columns are the rows of its transpose; a transposed weight (x @ w.T) makes them
    # contiguous runs of the original storage.
    bt = b.view(b.shape[:-2] + (b.shape[-1], b.shape[-2]),
                b.strides[:-2] + (b.strides[-1], b.strides[-2]), b.offset)
    # A batch dim broadcast by expand has stride 0: its matrix is converted once, not per batch.
    columns_at: dict[int, list[list]] = {}
    out: list = []
    a_offsets = element_offsets(batch, a.strides[:-2], a.offset)
    b_offsets = element_offsets(batch, bt.strides[:-2], bt.offset)
    for a_offset, b_offset in zip(a_offsets, b_offsets, strict=True):
        if b_offset not in columns_at:
            columns_at[b_offset] = _rows(bt, b_offset)
        cols = columns_at[b_offset]
        for row in _rows(a, a_offset):
            out.extend(_row_times(row, cols))
    return Buf(pack(out, a.dtype), batch + (a.shape[-2], b.shape[-1]), a.dtype)
