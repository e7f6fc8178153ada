"""Max and average pooling as one backend call: the "max_pool" and "avg_pool" capabilities."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._tensor import Tensor, result, wrap
from ...dtypes import int32
from ...shape import numel
from ...tape import Grads
from ..creation import tensor, zeros
from .record import Capability, Ints, Pads, windowed


def max_pool(x: Tensor, kernel: Ints, stride: Ints, padding: Pads, dilation: Ints,
             return_indices: bool) -> Tensor | tuple[Tensor, Tensor]:
    """The backend's max pooling over x's trailing ``len(kernel)`` dims: the values and,
    with `return_indices`, the int32 flat positions of the maxima (`padding`: (before,
    after) pairs, both >= 0). The backend finds the positions only when they are returned
    or the backward pass needs them."""
    nd = len(kernel)
    lead, spatial = x.shape[:-nd], x.shape[-nd:]
    shape = lead + windowed(spatial, kernel, stride, padding, dilation)
    values, positions = x.device.backend.max_pool(x._h, tuple(kernel), tuple(stride),
                                                  tuple(padding), tuple(dilation),
                                                  return_indices or x.requires_grad)
    # recorded even without indices (nothing to differentiate): the ONNX exporter's tracer
    # reads the pooling settings from the record
    indices = None if positions is None else wrap(positions, shape, int32, x.device)
    out = result(values, shape, x.dtype, "max_pool", (x,), indices=indices, nd=nd,
                 kernel=tuple(kernel), stride=tuple(stride), padding=tuple(padding),
                 dilation=tuple(dilation))
    return (out, indices) if return_indices else out


def avg_pool(x: Tensor, windows: Sequence[Sequence[tuple[int, int, int]]],
             divisor: int) -> Tensor:
    """The backend's average pooling over x's trailing ``len(windows)`` dims: a box per
    output position, one ``(start, stop, count)`` per dim (see "avg_pool" above), its sum
    divided by the product of the counts or by a nonzero `divisor`."""
    windows = tuple(tuple(tuple(row) for row in w) for w in windows)
    handle = x.device.backend.avg_pool(x._h, windows, divisor)
    shape = x.shape[:x.ndim - len(windows)] + tuple(len(w) for w in windows)
    return result(handle, shape, x.dtype, "avg_pool", (x,), windows=windows, divisor=divisor)


def _max_pool_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """g added at the position of each window's (first) max, as in PyTorch."""
    x, nd = inputs[0], ctx["nd"]
    lead = x.shape[:-nd]
    flat = zeros(lead + (numel(x.shape[-nd:]),), dtype=g.dtype, device=g.device)
    positions = ctx["indices"].reshape(lead + (-1,))
    return (flat.scatter_add(-1, positions, g.reshape(lead + (-1,))).reshape(x.shape),)


def _avg_pool_rule(g: Tensor, inputs: tuple[Tensor, ...], ctx: dict[str, Any]) -> Grads:
    """Average pooling is separable: along each pooled dim, row i of an averaging matrix
    holds 1/count over window i (1 with a divisor, which divides once at the end), and the
    gradient is g times those matrices, one dim at a time."""
    x, windows, divisor = inputs[0], ctx["windows"], ctx["divisor"]
    lead = x.ndim - len(windows)
    for j, rows in enumerate(windows):
        n = x.shape[lead + j]
        matrix = [[(1.0 if divisor else 1.0 / count) if start <= c < stop else 0.0
                   for c in range(n)] for start, stop, count in rows]
        averaging = tensor(matrix, dtype=g.dtype, device=g.device).reshape(len(rows), n)
        g = (g.movedim(lead + j, -1) @ averaging).movedim(-1, lead + j)
    return (g / divisor if divisor else g,)


MAX_POOL = Capability(
    "max_pool", ("max_pool",),
    """``max_pool(x, kernel, stride, padding, dilation, indices)``: over x's trailing
    ``len(kernel)`` dims padded with -inf, the max of each window and, when `indices` is
    true (else None), the int32 flat position of the first max within the unpadded dims
    (NaN counts as the largest); returns (values, positions).""",
    "pyburn.nn.functional.max_pool2d",
    rules={"max_pool": _max_pool_rule}, onnx={"max_pool": "MaxPool"})

AVG_POOL = Capability(
    "avg_pool", ("avg_pool",),
    """``avg_pool(x, windows, divisor)``: over x's trailing ``len(windows)`` dims, the mean of
    a box per output position: ``windows[d]`` holds one ``(start, stop, count)`` per output
    position along dim d, the box covering ``[start, stop)`` clipped to the input (so
    padding adds nothing), its sum divided by the product of its counts, or by `divisor`
    when that is nonzero. Sliding windows, whatever the padding counts, and adaptive
    pooling's windows of varying size are both such boxes.""",
    "pyburn.nn.functional.avg_pool2d",
    rules={"avg_pool": _avg_pool_rule},
    onnx={"avg_pool": "MatMul by each pooled dim's averaging matrix"})
