"""Elementwise primitives for flex: the scalar functions of ``pyburn.ops.elementwise`` mapped over
whole tensors, plus `where` and `cast`.

Each op runs its fast scalar function (``py``, or ``py_int`` on integer inputs) over the whole
batch with ``map``; only if that raises anywhere (``math.log(0.0)``) is the batch redone with
the IEEE-correct ``safe`` function, so ordinary inputs never pay for edge-case handling.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Callable, Sequence

from ...dtypes import DType, bool_, float16
from ...ops.elementwise import BINARY, UNARY, ElementwiseOp
from .storage import TYPECODE, Buf, pack


def _map_op(entry: ElementwiseOp, inputs: Sequence[Buf], out: DType) -> array:
    """`entry` applied elementwise to `inputs` (same shape), stored as `out`."""
    fn: Callable = entry.py
    if entry.py_int is not None and not inputs[0].dtype.is_floating_point:
        fn = entry.py_int
    code = TYPECODE[out]
    # Results that can be stored as they come (comparisons, float32/float64 values) go
    # straight into the array; the rest are collected so that `pack` can wrap or round them.
    direct = entry.returns_bool or (out.is_floating_point and out is not float16)

    def run(scalar_fn: Callable):
        results = map(scalar_fn, *(x.elements() for x in inputs))
        return array(code, results) if direct else list(results)

    try:
        values = run(fn)
    except (ArithmeticError, ValueError):
        values = run(entry.safe or fn)
    return values if direct else pack(values, out)


def unary(op: str, x: Buf, out: DType) -> Buf:
    """Apply the unary op `op` (a key of ``pyburn.ops.elementwise.UNARY``), result dtype `out`."""
    return Buf(_map_op(UNARY[op], (x,), out), x.shape, out)


def binary(op: str, a: Buf, b: Buf, out: DType) -> Buf:
    """Apply the binary op `op` (a key of ``BINARY``) to two tensors of one shape and dtype."""
    return Buf(_map_op(BINARY[op], (a, b), out), a.shape, out)


def where(cond: Buf, a: Buf, b: Buf) -> Buf:
    """Elementwise ``a if cond else b``."""
    triples = zip(cond.elements(), a.elements(), b.elements(), strict=True)
    values = [x if c else y for c, x, y in triples]
    return Buf(array(TYPECODE[a.dtype], values), a.shape, a.dtype)


def _truncate(value: float) -> int:
    # NaN and ±inf have no integer value; flex maps them to 0 (numpy leaves them undefined).
    return int(value) if math.isfinite(value) else 0


def cast(x: Buf, dtype: DType) -> Buf:
    """Convert to `dtype`: floats to ints truncate toward zero (NaN and ±inf give 0, values
    out of range wrap), to bool is ``!= 0``, integers to narrower integers wrap around."""
    if dtype is x.dtype:
        return x
    values = x.flat()
    if dtype is bool_:
        stored = array(TYPECODE[bool_], map(operator.truth, values))
    elif x.dtype.is_floating_point and not dtype.is_floating_point:
        try:
            integers = list(map(int, values))
        except (ValueError, OverflowError):
            integers = list(map(_truncate, values))
        stored = pack(integers, dtype)
    else:
        stored = pack(values, dtype)
    return Buf(stored, x.shape, dtype)
