"""Pooling: MaxPool (with Indices), AveragePool, LpPool, their Global forms, MaxUnpool.

The window attributes resolve through `spatial.geometry`. Where the device offers the
"max_pool" capability for a float input and Indices is not used, MaxPool calls it directly
with the (before, after) pads the windows need. Otherwise the input is padded to exactly the
region the windows cover (ONNX pads may be asymmetric, and `ceil_mode` may need more on the
right), so the pooling itself runs unpadded: MaxPool through `pyburn.nn.functional`'s max
pooling (which also takes its Indices from the capability where offered), AveragePool and
LpPool as sums over `windows`.
"""

from __future__ import annotations

from collections.abc import Callable

from ... import Tensor, arange, ones, zeros
from ...nn import functional as F
from ...nn.functional.windows import pad_spatial, windows
from ...ops import capability
from ..registry import check, index_dtype, ints, onnx_op
from .spatial import Geometry, geometry, per_dim, split_pads

_MAX_POOL: dict[int, Callable[..., tuple[Tensor, Tensor]]] = {
    1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_LOWEST = {"uint8": 0, "int32": -(2**31), "int64": -(2**63)}


def _pool_geometry(x: Tensor, kernel_shape: list[int] | None, strides: list[int] | None,
                   dilations: list[int] | None, pads: list[int] | None, auto_pad: str,
                   ceil_mode: int, op: str) -> Geometry:
    check(x.ndim >= 3, f"{op}: input must be (N, C, D1, ...), got shape {x.shape}")
    check(bool(kernel_shape), f"{op}: kernel_shape is required")
    return geometry(op, x.shape[2:], kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)


def _flat_index(index: Tensor, g: Geometry, storage_order: int, channels: int,
                dtype) -> Tensor:
    """F's max positions (row-major within the padded spatial dims) as ONNX's Indices:
    positions in the unpadded input, flattened over (N, C, *spatial) row-major, or with
    the spatial dims column-major when `storage_order` is 1."""
    index = index.cast(dtype)
    padded = [n + b + a for n, (b, a) in zip(g.spatial, g.window_pads)]
    nd = len(g.spatial)
    if any(b for b, _ in g.window_pads) or storage_order or padded != list(g.spatial):
        coords = []
        rest = index
        for size in reversed(padded):
            coords.append(rest % size)
            rest = rest // size
        coords.reverse()
        coords = [c - b for c, (b, _) in zip(coords, g.window_pads)]
        order = range(nd - 1, -1, -1) if storage_order else range(nd)
        index = None
        for dim in order:
            index = coords[dim] if index is None else index * g.spatial[dim] + coords[dim]
    total = 1
    for size in g.spatial:
        total *= size
    batch = arange(index.shape[0] * channels, device=index.device).cast(dtype) * total
    return index + batch.reshape((index.shape[0], channels) + (1,) * nd)


@onnx_op("MaxPool", since=1)
def max_pool(x: Tensor, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
             dilations: list[int] | None = None, kernel_shape: list[int] | None = None,
             pads: list[int] | None = None, storage_order: int = 0,
             strides: list[int] | None = None,
             outputs_used: int = 2) -> tuple[Tensor, Tensor | None]:
    """MaxPool: the max of each window (padding never wins) and Indices, the flat position
    of each max in (N, C, *spatial), column-major over the spatial dims when
    storage_order is 1 (computed only when the node uses it)."""
    op = "MaxPool"
    nd = x.ndim - 2
    check(nd in _MAX_POOL, f"{op}: input must have 1 to 3 spatial dims, got shape {x.shape}")
    g = _pool_geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, op)
    if outputs_used < 2 and capability.offered(capability.MAX_POOL, x):
        # a negative "after" (trailing elements outside every window) needs no cut: the
        # windows stop before them
        return capability.max_pool(x, g.kernel, g.strides,
                                   [(b, max(a, 0)) for b, a in g.window_pads], g.dilations,
                                   False), None
    fill = float("-inf") if x.dtype.is_floating_point else _LOWEST.get(x.dtype.name, 0)
    padded = pad_spatial(x, g.window_pads, fill)
    if outputs_used < 2:
        return _MAX_POOL[nd](padded, g.kernel, g.strides, 0, g.dilations), None
    values, index = _MAX_POOL[nd](padded, g.kernel, g.strides, 0, g.dilations,
                                  return_indices=True)
    return values, _flat_index(index, g, storage_order, x.shape[1], index_dtype(x.device))


def _window_sums(padded: Tensor, g: Geometry) -> Tensor:
    """The sum of each window of `padded`, an input already padded by `g.window_pads`."""
    nd = len(g.kernel)
    return windows(padded, g.kernel, g.strides, g.dilations, g.out).sum(-nd - 1)


@onnx_op("AveragePool", since=1)
def average_pool(x: Tensor, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
                 count_include_pad: int = 0, dilations: list[int] | None = None,
                 kernel_shape: list[int] | None = None, pads: list[int] | None = None,
                 strides: list[int] | None = None) -> Tensor:
    """AveragePool: the mean of each window over the elements in the input (with
    count_include_pad, also those in the explicit or automatic padding; never those a
    ceil_mode window hangs past the padding)."""
    g = _pool_geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode,
                       "AveragePool")
    if not x.dtype.is_floating_point:
        x = x.float()
    total = _window_sums(pad_spatial(x, g.window_pads), g)
    # the divisor: the same windows over a map of the positions that count
    inside = ones(g.spatial, dtype=x.dtype, device=x.device)
    if count_include_pad:
        inside = pad_spatial(inside, g.pads, 1.0)
        inside = pad_spatial(inside, [(0, need - a) for (_, need), (_, a) in
                                      zip(g.window_pads, g.pads)])
    else:
        inside = pad_spatial(inside, g.window_pads)
    return total / _window_sums(inside, g)


@onnx_op("LpPool", since=1)
def lp_pool(x: Tensor, *, auto_pad: str = "NOTSET", ceil_mode: int = 0,
            dilations: list[int] | None = None, kernel_shape: list[int] | None = None,
            p: float = 2, pads: list[int] | None = None,
            strides: list[int] | None = None) -> Tensor:
    """LpPool: ``(sum |x|^p)^(1/p)`` over each window (padding counts as zeros)."""
    g = _pool_geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, "LpPool")
    return _lp(x, lambda powered: _window_sums(pad_spatial(powered, g.window_pads), g), p)


def _lp(x: Tensor, total: Callable[[Tensor], Tensor], p: float) -> Tensor:
    if not x.dtype.is_floating_point:
        x = x.float()
    if p == 2:
        return total(x * x).sqrt()
    if p == 1:
        return total(x.abs())
    return total(x.abs() ** p) ** (1.0 / p)


def _spatial_dims(x: Tensor, op: str) -> tuple[int, ...]:
    check(x.ndim >= 3, f"{op}: input must be (N, C, D1, ...), got shape {x.shape}")
    return tuple(range(2, x.ndim))


@onnx_op("GlobalAveragePool", since=1)
def global_average_pool(x: Tensor) -> Tensor:
    """GlobalAveragePool: the mean over all spatial dims, kept as size 1."""
    return x.mean(_spatial_dims(x, "GlobalAveragePool"), keepdim=True)


@onnx_op("GlobalMaxPool", since=1)
def global_max_pool(x: Tensor) -> Tensor:
    """GlobalMaxPool: the max over all spatial dims, kept as size 1."""
    return x.amax(_spatial_dims(x, "GlobalMaxPool"), keepdim=True)


@onnx_op("GlobalLpPool", since=1)
def global_lp_pool(x: Tensor, *, p: float = 2) -> Tensor:
    """GlobalLpPool: ``(sum |x|^p)^(1/p)`` over all spatial dims, kept as size 1."""
    dims = _spatial_dims(x, "GlobalLpPool")
    return _lp(x, lambda powered: powered.sum(dims, keepdim=True), p)


@onnx_op("MaxUnpool", since=9)
def max_unpool(x: Tensor, indices: Tensor, output_shape: Tensor | None = None, *,
               kernel_shape: list[int] | None = None, pads: list[int] | None = None,
               strides: list[int] | None = None) -> Tensor:
    """MaxUnpool: zeros of the pooled-from shape (the inverse of the pooling's size rule)
    with x's values placed at their flat `indices`; an `output_shape` larger than that
    shape zero-extends each dim at its end (the spec's test cases: the indices stay
    relative to the inferred shape)."""
    op = "MaxUnpool"
    check(bool(kernel_shape), f"{op}: kernel_shape is required")
    nd = x.ndim - 2
    check(len(kernel_shape) == nd and indices.shape == x.shape,
          f"{op}: indices shape {indices.shape} and kernel_shape {kernel_shape} must fit "
          f"input shape {x.shape}")
    stride = per_dim(strides, nd, 1, "strides", op)
    pairs = split_pads(pads, nd, op)
    shape = x.shape[:2] + tuple((n - 1) * s + k - b - a for n, s, k, (b, a) in
                                zip(x.shape[2:], stride, kernel_shape, pairs))
    total = 1
    for size in shape:
        total *= size
    flat = zeros(total, dtype=x.dtype, device=x.device)
    y = flat.scatter(0, indices.reshape(-1), x.reshape(-1)).reshape(shape)
    if output_shape is None:
        return y
    wanted = ints(output_shape)
    check(len(wanted) == len(shape) and tuple(wanted[:2]) == shape[:2],
          f"{op}: output_shape {wanted} does not fit input shape {x.shape}")
    return pad_spatial(y, [(0, w - n) for w, n in zip(wanted[2:], shape[2:])])
