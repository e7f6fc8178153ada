"""Reductions, arg-reductions and scans for flex.

Every one moves the axes it works on to the end (`to_rows`), so that each group is one
contiguous run that a C-level builtin (``sum``, ``max``, ``math.prod``, ``accumulate``)
consumes whole. Sums accumulate in Python floats (float64) or exact Python ints, and the
result is rounded or wrapped to the dtype once.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections.abc import Callable, Sequence
from itertools import accumulate

from ...dtypes import bool_, int32
from ...ops.elementwise import BINARY
from ...ops.reducers import REDUCTIONS
from .elementwise import cast
from .movement import inverse_permutation, permute, to_rows
from .storage import TYPECODE, Buf, pack

#: C-level builtins that fold a whole run at once, for the combines that have one (other
#: combines fold pairwise with their scalar function, which handles NaN itself)
_FAST_FOLDS: dict[str, Callable] = {"add": sum, "mul": math.prod, "maximum": max, "minimum": min}


def has_nan(run: Sequence[float]) -> bool:
    """Whether `run` holds a NaN."""
    # One C-level sum is NaN exactly when the run holds a NaN or both infinities; only
    # then is the slower per-element test worth running.
    total = sum(run)
    return total != total and any(map(math.isnan, run))


def _nan_propagating(pick: Callable) -> Callable:
    def reduce_run(run: Sequence[float]) -> float:
        return math.nan if has_nan(run) else pick(run)

    return reduce_run


def _fold(combine: str, floating: bool) -> Callable:
    """The function folding one run with BINARY op `combine`."""
    fast = _FAST_FOLDS.get(combine)
    if fast is None:
        step = BINARY[combine].py
        return lambda run: functools.reduce(step, run)
    if floating and combine in ("maximum", "minimum"):
        return _nan_propagating(fast)  # the builtins skip NaN; the op table's NaN wins
    return fast


def reduce(op: str, x: Buf, axes: tuple[int, ...]) -> Buf:
    """Reduce over `axes` keeping them as size-1 dims; `op` is an entry of ``REDUCTIONS``.
    max/min propagate NaN; an empty group gives the op's identity."""
    reduction = REDUCTIONS[op]
    dtype = x.dtype
    if reduction.truth:
        x, dtype = cast(x, bool_), bool_
    if not axes:
        return x
    flat, run, _ = to_rows(x, axes)
    shape = tuple(1 if d in axes else size for d, size in enumerate(x.shape))
    groups = math.prod(shape)
    if run == 0:
        values = [reduction.identity] * groups
    else:
        fn = _fold(reduction.combine, dtype.is_floating_point)
        values = list(map(fn, (flat[i:i + run] for i in range(0, groups * run, run))))
    return Buf(pack(values, dtype), shape, dtype)


def _first_nan(run: Sequence[float]) -> int:
    return next(i for i, v in enumerate(run) if v != v)


def arg_reduce(op: str, x: Buf, axis: int) -> Buf:
    """int32 index of the first max ("argmax") or min ("argmin") along `axis` (kept as a
    size-1 dim); a NaN counts as both the largest and the smallest value."""
    flat, run, _ = to_rows(x, (axis,))
    pick = max if op == "argmax" else min
    floating = x.dtype.is_floating_point
    indices = []
    for start in range(0, len(flat), run):
        group = flat[start:start + run]
        if floating and has_nan(group):
            indices.append(_first_nan(group))
        else:
            indices.append(group.index(pick(group)))
    shape = tuple(1 if d == axis else size for d, size in enumerate(x.shape))
    return Buf(array(TYPECODE[int32], indices), shape, int32)


def scan(op: str, x: Buf, axis: int) -> Buf:
    """Inclusive scan along `axis` of reduction `op` (sum: cumsum, prod: cumprod)."""
    if x.size == 0:
        return x
    flat, run, perm = to_rows(x, (axis,))
    step = BINARY[REDUCTIONS[op].combine].py
    values: list = []
    for start in range(0, len(flat), run):
        values.extend(accumulate(flat[start:start + run], step))
    moved = Buf(pack(values, x.dtype), tuple(x.shape[d] for d in perm), x.dtype)
    return permute(moved, inverse_permutation(perm))
