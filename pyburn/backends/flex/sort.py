"""Stable sort along an axis for flex, with NaN as the largest value."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from ...dtypes import int32
from .movement import inverse_permutation, permute, to_rows
from .reduce import has_nan
from .storage import TYPECODE, Buf


def _order(run: Sequence, floating: bool, descending: bool) -> list[int]:
    """Stable sorting permutation of `run`. Python's sort is stable, also with reverse=True
    (equal keys keep their order), but NaN compares false with everything, so NaNs are set
    aside and put at the large end, in their original order."""
    positions = range(len(run))
    if floating and has_nan(run):
        nans = [i for i in positions if run[i] != run[i]]
        numbers = sorted((i for i in positions if run[i] == run[i]), key=run.__getitem__,
                         reverse=descending)
        return nans + numbers if descending else numbers + nans
    return sorted(positions, key=run.__getitem__, reverse=descending)


def sort(x: Buf, axis: int, descending: bool) -> tuple[Buf, Buf]:
    """Stable sort along `axis`: (values, int32 indices)."""
    flat, run, perm = to_rows(x, (axis,))
    values = array(flat.typecode)
    indices = array(TYPECODE[int32])
    floating = x.dtype.is_floating_point
    for start in range(0, len(flat) if run else 0, run or 1):
        group = flat[start:start + run]
        order = _order(group, floating, descending)
        values.extend(array(flat.typecode, map(group.__getitem__, order)))
        indices.extend(array(indices.typecode, order))
    shape = tuple(x.shape[d] for d in perm)
    back = inverse_permutation(perm)
    return (permute(Buf(values, shape, x.dtype), back),
            permute(Buf(indices, shape, int32), back))
