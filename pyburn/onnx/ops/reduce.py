"""ONNX reductions (the Reduce* family, ArgMax/ArgMin) and scans (CumSum, CumProd).

The ten Reduce* operators share one mechanism: a table of what each computes over a set of
dims (with the dims kept), and two registered forms per operator built from it. Before
opset 13 (ReduceSum) or 18 (the others) the axes are an attribute; from then on they are an
optional input, and ``noop_with_empty_axes=1`` makes empty axes mean "reduce over no dim"
instead of "over every dim". A reduction over zero elements gives the operation's
identity (0 for sums, 1 for products, -inf for ReduceMax and log-sums, +inf for ReduceMin).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyburn

from ... import Tensor
from ...dtypes import DType, int32, int64, uint8
from ...shape import norm_dim, norm_dims
from ..registry import Ints, index_dtype, ints, onnx_op

Axes = tuple[int, ...]


def _sum(x: Tensor, axes: Axes) -> Tensor:
    return pyburn.sum(x, axes, keepdim=True)


def _extreme(x: Tensor, axes: Axes, largest: bool) -> Tensor:
    if any(x.shape[d] == 0 for d in axes):
        shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        return pyburn.full(shape, _lowest(x.dtype) if largest else _highest(x.dtype),
                           dtype=x.dtype, device=x.device)
    if x.dtype.is_bool:  # max of truth values is any, min is all
        return pyburn.any(x, axes, keepdim=True) if largest else pyburn.all(x, axes, True)
    return pyburn.amax(x, axes, keepdim=True) if largest else pyburn.amin(x, axes, True)


_INT_BOUNDS: dict[DType, tuple[int, int]] = {
    uint8: (0, 255), int32: (-(2**31), 2**31 - 1), int64: (-(2**63), 2**63 - 1),
}


def _lowest(dtype: DType) -> float | int | bool:
    """The identity of max: -inf, the smallest integer, or False."""
    if dtype.is_floating_point:
        return float("-inf")
    return False if dtype.is_bool else _INT_BOUNDS[dtype][0]


def _highest(dtype: DType) -> float | int | bool:
    """The identity of min: +inf, the largest integer, or True."""
    if dtype.is_floating_point:
        return float("inf")
    return True if dtype.is_bool else _INT_BOUNDS[dtype][1]


def _square_sum(x: Tensor, axes: Axes) -> Tensor:
    return _sum(x * x, axes)


#: op type -> what it computes over `axes` (kept as size-1 dims), in any dtype
REDUCTIONS: dict[str, Callable[[Tensor, Axes], Tensor]] = {
    "ReduceSum": _sum,
    "ReduceMean": lambda x, axes: pyburn.mean(x, axes, keepdim=True),
    "ReduceMax": lambda x, axes: _extreme(x, axes, True),
    "ReduceMin": lambda x, axes: _extreme(x, axes, False),
    "ReduceProd": lambda x, axes: pyburn.prod(x, axes, keepdim=True),
    "ReduceL1": lambda x, axes: _sum(x.abs(), axes),
    "ReduceL2": lambda x, axes: _square_sum(x, axes).sqrt(),
    "ReduceSumSquare": _square_sum,
    "ReduceLogSum": lambda x, axes: _sum(x, axes).log(),
    "ReduceLogSumExp": lambda x, axes: pyburn.logsumexp(x, axes, keepdim=True),
}


def reduce(op_type: str, data: Tensor, axes: list[int] | None, keepdims: int,
           noop_with_empty_axes: int = 0) -> Tensor:
    """`op_type` of the Reduce family over `axes` (None or empty: every dim, or none with
    `noop_with_empty_axes`), the result in data's dtype."""
    # "no reduction" is a reduction over zero dims: ReduceL1 then still takes |x|, as in the
    # spec's function bodies and onnx's reference
    dims = norm_dims(axes or (() if noop_with_empty_axes else None), data.ndim)
    out = REDUCTIONS[op_type](data, dims).cast(data.dtype)
    if keepdims:
        return out
    return out.reshape(tuple(s for d, s in enumerate(data.shape) if d not in dims))


def _register(op_type: str, axes_input_since: int) -> None:
    def with_attribute(data: Tensor, *, axes: list[int] | None = None,
                       keepdims: int = 1) -> Tensor:
        return reduce(op_type, data, axes, keepdims)

    def with_input(data: Tensor, axes: Ints | None = None, *, keepdims: int = 1,
                   noop_with_empty_axes: int = 0) -> Tensor:
        return reduce(op_type, data, ints(axes), keepdims, noop_with_empty_axes)

    name = re.sub(r"(?<!^)(?=[A-Z])", "_", op_type.removeprefix("Reduce")).lower()
    with_attribute.__name__ = with_attribute.__qualname__ = f"reduce_{name}_1"
    with_attribute.__doc__ = (f"{op_type} (opsets 1-{axes_input_since - 1}): over the "
                              f"`axes` attribute (every dim when absent).")
    with_input.__name__ = with_input.__qualname__ = f"reduce_{name}"
    with_input.__doc__ = (f"{op_type}: over the `axes` input (every dim when absent or "
                          f"empty, or none with noop_with_empty_axes=1).")
    # module attributes, so that generated code can name them
    globals()[with_attribute.__name__] = onnx_op(op_type, since=1)(with_attribute)
    globals()[with_input.__name__] = onnx_op(op_type, since=axes_input_since)(with_input)


for _op_type in REDUCTIONS:
    _register(_op_type, 13 if _op_type == "ReduceSum" else 18)


# ---- ArgMax / ArgMin ---------------------------------------------------------------------

def _arg(largest: bool, data: Tensor, axis: int, keepdims: int,
         select_last_index: int) -> Tensor:
    d = norm_dim(axis, data.ndim)
    find = pyburn.argmax if largest else pyburn.argmin
    if select_last_index:
        # the first extreme of the reversed dim is the last one of the dim
        index = (data.shape[d] - 1) - find(data.flip(d), d, keepdim=bool(keepdims))
    else:
        index = find(data, d, keepdim=bool(keepdims))
    return index.cast(index_dtype(data.device))


@onnx_op("ArgMax", since=1)
def arg_max(data: Tensor, *, axis: int = 0, keepdims: int = 1,
            select_last_index: int = 0) -> Tensor:
    """ArgMax: int64 index of the first (or, with select_last_index, last) maximum along
    `axis`."""
    return _arg(True, data, axis, keepdims, select_last_index)


@onnx_op("ArgMin", since=1)
def arg_min(data: Tensor, *, axis: int = 0, keepdims: int = 1,
            select_last_index: int = 0) -> Tensor:
    """ArgMin: int64 index of the first (or, with select_last_index, last) minimum along
    `axis`."""
    return _arg(False, data, axis, keepdims, select_last_index)


# ---- CumSum / CumProd --------------------------------------------------------------------

def _scan(product: bool, x: Tensor, axis: Ints, exclusive: int, reverse: int) -> Tensor:
    d = norm_dim(ints(axis)[0], x.ndim)
    if reverse:
        x = x.flip(d)
    out = (pyburn.cumprod if product else pyburn.cumsum)(x, d).cast(x.dtype)
    if exclusive and x.shape[d] > 0:
        # shift by one along d: the identity first, then all but the last running value
        first = pyburn.full(x.shape[:d] + (1,) + x.shape[d + 1:], 1 if product else 0,
                            dtype=x.dtype, device=x.device)
        out = pyburn.cat([first, out.narrow(d, 0, x.shape[d] - 1)], d)
    return out.flip(d) if reverse else out


@onnx_op("CumSum", since=11)
def cum_sum(x: Tensor, axis: Ints, *, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """CumSum: running sums along `axis`; `exclusive` leaves out each element itself,
    `reverse` runs from the end."""
    return _scan(False, x, axis, exclusive, reverse)


@onnx_op("CumProd", since=26)
def cum_prod(x: Tensor, axis: Ints, *, exclusive: int = 0, reverse: int = 0) -> Tensor:
    """CumProd: running products along `axis`; `exclusive` leaves out each element itself,
    `reverse` runs from the end."""
    return _scan(True, x, axis, exclusive, reverse)
