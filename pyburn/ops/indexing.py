"""Indexing: ``t[key]``, ``t[key] = v``, gather/scatter, selection, sorting, masks."""

from __future__ import annotations

from typing import Any

from .._tensor import Tensor, install, result, wrap
from ..dtypes import int32
from ..errors import ArgumentError, DeviceError, DTypeError, IndexOutOfRange, ShapeError
from ..shape import broadcast_shapes, norm_dim, numel
from .creation import arange, tensor
from .index_checks import checked_index
from .math_ops import binary, operand, where
from .movement import broadcast_to, flip, permute, reshape, slice_dim


def _index_tensor(index: Any, device) -> Tensor:
    t = index if isinstance(index, Tensor) else tensor(index, device=device)
    if t.device is not device:
        raise DeviceError(f"index tensor is on {t.device.name}, the indexed tensor on "
                          f"{device.name}")
    if t.numel() == 0 and t.dtype.is_floating_point:
        t = t.cast(int32)  # an empty list reads as float32; as an index it means "nothing"
    if not (t.dtype.is_integer or t.dtype.is_bool):
        raise DTypeError(f"indices must be integer or bool tensors, got {t.dtype.name}")
    return t


# ---- __getitem__ ---------------------------------------------------------------------------
def _expand_key(x: Tensor, key: Any) -> list:
    """The key as a list with Ellipsis replaced by full slices and bool masks split into
    one integer index per dim they cover."""
    items = list(key) if isinstance(key, tuple) else [key]
    items = [_normalise_item(x, it) for it in items]
    used = sum(_dims_used(it) for it in items)
    if used > x.ndim:
        raise IndexOutOfRange(f"too many indices for a tensor of rank {x.ndim}: {key!r}")
    ellipses = [k for k, it in enumerate(items) if it is Ellipsis]
    if len(ellipses) > 1:
        raise ArgumentError("an index can have only one Ellipsis (...)")
    if ellipses:
        items[ellipses[0]:ellipses[0] + 1] = [slice(None)] * (x.ndim - used)
    return items


def _normalise_item(x: Tensor, item: Any) -> Any:
    if item is None or item is Ellipsis or isinstance(item, slice):
        return item
    if isinstance(item, bool):
        return tensor(item, device=x.device)
    if isinstance(item, (list, tuple, Tensor)) or hasattr(item, "__array_interface__"):
        return _index_tensor(item, x.device)
    if hasattr(item, "__index__"):  # ints and integer scalars of other libraries
        return item.__index__()
    raise ArgumentError(f"unsupported index {item!r} of type {type(item).__name__}")


def _dims_used(item: Any) -> int:
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, Tensor) and item.dtype.is_bool:
        return item.ndim
    return 1


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` with numpy/PyTorch semantics: ints, slices (any nonzero step), None,
    Ellipsis, bool masks and integer index tensors or lists (advanced indexing)."""
    items = _expand_key(x, key)
    out = x
    dim = 0  # position in `out` of the next dim the key addresses
    source = 0  # the dim of x that the next item indexes, for error messages
    advanced: list[tuple[int, Tensor]] = []
    for item in items:
        if item is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(item, int):
            size = out.shape[dim]
            if not -size <= item < size:
                raise IndexOutOfRange(f"index {item} is out of range for dim {source} "
                                      f"of size {size}")
            i = item + size if item < 0 else item
            out = slice_dim(out, dim, i, i + 1).squeeze(dim)
            source += 1
        elif isinstance(item, slice):
            out = _apply_slice(out, dim, item)
            dim += 1
            source += 1
        elif item.dtype.is_bool:
            if item.ndim == 0:  # a scalar mask adds a dim that keeps everything or nothing
                out = out.unsqueeze(dim)
                item = reshape(item, 1)
            mask_dims = out.shape[dim:dim + item.ndim]
            if item.shape != mask_dims:
                raise ShapeError(f"bool mask of shape {item.shape} does not match the indexed "
                                 f"dims {mask_dims}")
            coords = nonzero(item)
            for k in range(item.ndim):
                advanced.append((dim + k, coords[:, k]))
            dim += item.ndim
            source += item.ndim
        else:
            advanced.append((dim, item))
            dim += 1
            source += 1
    return _advanced(out, advanced) if advanced else out


def _apply_slice(x: Tensor, dim: int, s: slice) -> Tensor:
    if s.step == 0:
        raise ArgumentError("slice step cannot be zero")
    picked = range(*s.indices(x.shape[dim]))
    if picked.step > 0:
        return slice_dim(x, dim, picked.start, max(picked.start, picked.stop), picked.step)
    forward = picked[::-1]  # the same elements in increasing order
    if not forward:
        return slice_dim(x, dim, 0, 0)
    return flip(slice_dim(x, dim, forward.start, forward.stop, forward.step), dim)


def _advanced(x: Tensor, advanced: list[tuple[int, Tensor]]) -> Tensor:
    """Advanced indexing on dims `advanced` (positions in x, with their index tensors)."""
    dims = [d for d, _ in advanced]
    index_shape = broadcast_shapes(*(ix.shape for _, ix in advanced))
    linear = None
    for d, ix in advanced:
        ix = checked_index(ix, x.shape[d], f"index for dim {d}")
        linear = ix if linear is None else binary("add", binary("mul", linear, x.shape[d]), ix)
    linear = broadcast_to(linear.cast(int32), index_shape)
    rest = [d for d in range(x.ndim) if d not in dims]
    moved = permute(x, dims + rest)
    flat = reshape(moved, (numel(x.shape[d] for d in dims),) + tuple(x.shape[d] for d in rest))
    picked = index_select(flat, 0, reshape(linear, -1))
    out = reshape(picked, index_shape + flat.shape[1:])
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if adjacent and dims[0] > 0:  # numpy keeps adjacent advanced dims in place
        k = len(index_shape)
        order = list(range(k, k + dims[0])) + list(range(k)) + list(range(k + dims[0], out.ndim))
        out = permute(out, order)
    return out


def _positions(x: Tensor, key: Any) -> Tensor:
    """The flat positions in x of the elements ``x[key]`` selects, shaped like ``x[key]``."""
    return getitem(reshape(arange(x.numel(), device=x.device), x.shape), key)


def index_put(x: Tensor, indices: Any, values: Any, accumulate: bool = False) -> Tensor:
    """A copy of x with ``x[indices]`` set to (or, with accumulate, increased by) values."""
    positions = _positions(x, indices)
    if isinstance(values, Tensor):
        if values.device is not x.device:
            raise DeviceError(f"values are on {values.device.name}, the tensor on "
                              f"{x.device.name}")
        if broadcast_shapes(values.shape, positions.shape) != positions.shape:
            raise ShapeError(f"values of shape {values.shape} do not fit the indexed shape "
                             f"{positions.shape}")
    source = operand(values, x.dtype, positions.shape, x.device)
    updated = _scatter(reshape(x, -1), 0, reshape(positions, -1), reshape(source, -1),
                       "add" if accumulate else "assign")
    return reshape(updated, x.shape)


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: x now holds the updated values (other tensors, and graphs that
    recorded x, keep the old ones)."""
    x.assign_(index_put(x, key, value))


def _scatter(x: Tensor, axis: int, index: Tensor, source: Tensor, reduce: str) -> Tensor:
    """The scatter primitive on checked arguments, recorded for autodiff."""
    out = x.device.backend.scatter(x._h, axis, index._h, source._h, reduce)
    return result(out, x.shape, x.dtype, "scatter", (x, index, source), axis=axis,
                  reduce=reduce)


# ---- gather / scatter / selection ------------------------------------------------------------
def _check_gather_index(x: Tensor, d: int, index: Tensor, what: str) -> Tensor:
    index = _index_tensor(index, x.device)
    if index.dtype.is_bool:
        raise DTypeError(f"{what} needs an integer index, got bool")
    if index.ndim != x.ndim:
        raise ShapeError(f"{what}: index of shape {index.shape} must have the rank of the "
                         f"input, shape {x.shape}")
    return checked_index(index, x.shape[d], what, allow_negative=False)


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = x[i][index[i][j]]`` for dim 1 (and likewise for any dim)."""
    d = norm_dim(dim, x.ndim)
    index = _check_gather_index(x, d, index, "gather")
    for k, (a, b) in enumerate(zip(index.shape, x.shape)):
        if k != d and a > b:
            raise ShapeError(f"gather: index shape {index.shape} exceeds input shape {x.shape} "
                             f"in dim {k}")
    out = x.device.backend.gather(x._h, d, index._h)
    return result(out, index.shape, x.dtype, "gather", (x, index), axis=d)


def scatter(x: Tensor, dim: int, index: Tensor, src: Any = None, reduce: str | None = None, *,
            value: Any = None) -> Tensor:
    """A copy of x with ``out[i][index[i][j]] = src[i][j]`` (dim 1 shown); `src` may be a
    scalar; ``reduce="add"`` accumulates instead."""
    if src is None:
        src = value
    d = norm_dim(dim, x.ndim)
    index = _check_gather_index(x, d, index, "scatter")
    if reduce not in (None, "add", "sum"):
        raise ArgumentError(f"scatter reduce is None or 'add', got {reduce!r}")
    if isinstance(src, Tensor):
        if src.ndim != x.ndim or any(a > b for a, b in zip(index.shape, src.shape)):
            raise ShapeError(f"scatter: index shape {index.shape} does not fit src shape "
                             f"{src.shape}")
        if src.shape != index.shape:
            src = getitem(src, tuple(slice(0, s) for s in index.shape))
    source = operand(src, x.dtype, index.shape, x.device)
    return _scatter(x, d, index, source, "assign" if reduce is None else "add")


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """`scatter` with accumulation."""
    return scatter(x, dim, index, src, reduce="add")


def index_select(x: Tensor, dim: int, index: Any) -> Tensor:
    """The entries `index` (a 1-d integer tensor or list) along `dim`."""
    d = norm_dim(dim, x.ndim)
    index = _index_tensor(index, x.device)
    if index.ndim > 1 or index.dtype.is_bool:
        raise ShapeError(f"index_select needs a 1-d integer index, got shape {index.shape} "
                         f"and {index.dtype.name}")
    index = checked_index(reshape(index, -1), x.shape[d], "index_select")
    shape = x.shape[:d] + (index.shape[0],) + x.shape[d + 1:]
    return result(x.device.backend.index_select(x._h, d, index._h), shape, x.dtype,
                  "index_select", (x, index), axis=d)


def take(x: Tensor, index: Any) -> Tensor:
    """Elements of the flattened x at `index` (any shape; negative counts from the end)."""
    index = _index_tensor(index, x.device)
    return reshape(index_select(reshape(x, -1), 0, reshape(index, -1)), index.shape)


def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    """x with `value` where the bool `mask` (broadcast to x) is True."""
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool:
        raise DTypeError("masked_fill needs a bool mask tensor")
    if broadcast_shapes(mask.shape, x.shape) != x.shape:
        raise ShapeError(f"mask of shape {mask.shape} does not broadcast to {x.shape}")
    return where(mask, _like_scalar(value, x), x)


def _like_scalar(value: Any, x: Tensor) -> Tensor:
    """`value` (a tensor or a number) as a tensor of x's dtype, so `where` keeps that dtype."""
    if isinstance(value, Tensor):
        return value.cast(x.dtype)
    return operand(value, x.dtype, (), x.device)


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    """The 1-d tensor of the elements of x where the bool `mask` is True."""
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool:
        raise DTypeError("masked_select needs a bool mask tensor")
    shape = broadcast_shapes(x.shape, mask.shape)
    flat_mask = reshape(broadcast_to(mask, shape), -1)
    return index_select(reshape(broadcast_to(x, shape), -1), 0, nonzero(flat_mask)[:, 0])


def nonzero(x: Tensor, *, as_tuple: bool = False) -> Any:
    """int32 coordinates of the nonzero elements: shape (count, rank), or one 1-d tensor
    per dim with `as_tuple`."""
    h, shape = x.device.backend.nonzero(x._h)
    coords = wrap(h, shape, int32, x.device)
    if as_tuple:
        return tuple(coords[:, k] for k in range(max(x.ndim, 1)))
    return coords


def one_hot(x: Tensor, num_classes: int = -1) -> Tensor:
    """int32 one-hot encoding: a new last dim of size `num_classes` (max + 1 if -1)."""
    if not x.dtype.is_integer:
        raise DTypeError(f"one_hot needs an integer tensor, got {x.dtype.name}")
    if num_classes == -1:
        num_classes = int(x.amax().item()) + 1 if x.numel() else 0
    checked_index(x, num_classes, "one_hot", allow_negative=False)
    classes = arange(num_classes, device=x.device)
    return binary("eq", x.unsqueeze(-1), classes).cast(int32)


INDEXING = {"__getitem__": getitem, "__setitem__": setitem, "index_put": index_put,
            "gather": gather, "scatter": scatter, "scatter_add": scatter_add,
            "index_select": index_select, "take": take, "masked_fill": masked_fill,
            "masked_select": masked_select, "nonzero": nonzero}
install(INDEXING)
