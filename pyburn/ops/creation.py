"""Creating tensors: from data, constant fills, ranges, and random numbers."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

from .. import buffer
from .._tensor import Tensor, check_dtype_on, wrap
from ..devices import Device
from ..devices import device as as_device
from ..dtypes import (
    DType,
    as_dtype,
    bool_,
    buffer_dtype,
    default_float,
    default_int,
    scalar_dtype,
)
from ..errors import ArgumentError, DTypeError, ShapeError
from ..shape import as_shape, numel

DeviceLike = Device | str | None


def creator(make: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Give a creation function the keyword ``requires_grad=False`` (PyTorch's): True makes
    the new tensor a leaf that collects gradients (on an autodiff device)."""

    @functools.wraps(make)
    def create(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        t = make(*args, **kwargs)
        return t.requires_grad_() if requires_grad else t

    params = list(inspect.signature(make).parameters.values())
    params.append(inspect.Parameter("requires_grad", inspect.Parameter.KEYWORD_ONLY,
                                    default=False, annotation="bool"))
    create.__signature__ = inspect.signature(make).replace(parameters=params)  # type: ignore
    return create


def target(device: DeviceLike, dtype: Any, fallback: DType) -> tuple[Device, DType]:
    dev = as_device(device)
    dt = fallback if dtype is None else as_dtype(dtype)
    check_dtype_on(dt, dev)
    return dev, dt


@creator
def tensor(data: Any, dtype: Any = None, device: DeviceLike = None, *,
           shape: Any = None) -> Tensor:
    """A tensor from nested lists/tuples of numbers, a scalar, a numpy array, another tensor,
    `bytes` (with `shape` and `dtype`, C-ordered little-endian), or a typed memoryview (a
    web page's Float32Array: the view's dtype, converted to `dtype` if given; its shape, or
    `shape`; a view of bytes with both `shape` and `dtype` is read as bytes).

    Python floats give float32, ints int32 and bools bool, unless `dtype` says otherwise.

    >>> import pyburn
    >>> pyburn.tensor([[1, 2], [3, 4]], device="flex").shape
    (2, 2)
    """
    if isinstance(data, Tensor):
        return data.to(device if device is not None else data.device, dtype)
    if isinstance(data, memoryview) and not (data.format in ("B", "c") and shape is not None
                                             and dtype is not None):
        typed = _from_bytes(data, data.shape if shape is None else shape, buffer_dtype(data),
                            device)
        return typed if dtype is None else typed.to(typed.device, dtype)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return _from_bytes(data, shape, dtype, device)
    if shape is not None:
        raise ArgumentError("shape= is only used with bytes data")
    if hasattr(data, "__array_interface__") and hasattr(data, "dtype"):
        return from_numpy(data, device=device, dtype=dtype)
    flat, shape = buffer.flatten_nested(data)
    flat = [_scalar_value(v) for v in flat] if not _all_plain(flat) else flat
    inferred = _infer_dtype(flat)
    dev, dt = target(device, dtype, inferred)
    return wrap(dev.backend.from_bytes(buffer.pack(flat, dt), shape, dt), shape, dt, dev)


def _all_plain(flat: list) -> bool:
    return all(type(v) in (float, int, bool) for v in flat)


def _scalar_value(value: Any) -> Any:
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Tensor) or hasattr(value, "item"):
        if getattr(value, "shape", ()) in ((), (1,)):
            return value.item()
    raise ArgumentError(f"cannot make a tensor from an element of type {type(value).__name__}")


def _infer_dtype(flat: list) -> DType:
    kinds = set(map(type, flat))
    if float in kinds:
        return default_float
    if int in kinds:
        return default_int
    return bool_ if kinds else default_float


def _from_bytes(data: Any, shape: Any, dtype: Any, device: DeviceLike) -> Tensor:
    if shape is None or dtype is None:
        raise ArgumentError("a tensor from bytes needs shape= and dtype=")
    shape = as_shape(shape)
    dev, dt = target(device, dtype, default_float)
    expected = numel(shape) * dt.itemsize
    data = data.tobytes() if isinstance(data, memoryview) else bytes(data)
    if len(data) != expected:
        raise ShapeError(f"{len(data)} bytes do not hold a {dt.name} tensor of shape {shape} "
                         f"({expected} bytes)")
    return wrap(dev.backend.from_bytes(data, shape, dt), shape, dt, dev)


@creator
def from_numpy(array: Any, device: DeviceLike = None, dtype: Any = None) -> Tensor:
    """A tensor with a copy of a numpy array's values (int64 arrays stay int64)."""
    dev = as_device(device)
    source = as_dtype(array.dtype.name)
    check_dtype_on(source, dev)
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
    out = wrap(dev.backend.from_bytes(data, tuple(array.shape), source), tuple(array.shape),
               source, dev)
    return out if dtype is None else out.cast(dtype)


@creator
def full(shape: Any, fill_value: int | float | bool, dtype: Any = None,
         device: DeviceLike = None) -> Tensor:
    """A tensor of `shape` filled with `fill_value` (dtype inferred from the value)."""
    shape = as_shape((shape,) if isinstance(shape, int) else shape)
    dev, dt = target(device, dtype, scalar_dtype(fill_value))
    value = bool(fill_value) if dt.is_bool else (float(fill_value) if dt.is_floating_point
                                                 else _int_value(fill_value, dt))
    return wrap(dev.backend.full(shape, value, dt), shape, dt, dev)


def _int_value(value: Any, dtype: DType) -> int:
    if isinstance(value, float) and not value.is_integer():
        raise DTypeError(f"cannot fill a {dtype.name} tensor with {value}")
    return int(value)


@creator
def zeros(*shape: Any, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """A tensor of zeros (float32 unless `dtype` says otherwise)."""
    return full(as_shape(shape), 0, dtype or default_float, device)


@creator
def ones(*shape: Any, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ones (float32 unless `dtype` says otherwise)."""
    return full(as_shape(shape), 1, dtype or default_float, device)


@creator
def empty(*shape: Any, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """A tensor whose values are unspecified (pyburn gives zeros)."""
    return zeros(*shape, dtype=dtype, device=device)


def like(x: Tensor, dtype: Any, device: DeviceLike) -> dict[str, Any]:
    return {"dtype": x.dtype if dtype is None else dtype,
            "device": x.device if device is None else device}


@creator
def zeros_like(x: Tensor, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Zeros with the shape (and by default the dtype and device) of `x`."""
    return full(x.shape, 0, **like(x, dtype, device))


@creator
def ones_like(x: Tensor, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Ones with the shape (and by default the dtype and device) of `x`."""
    return full(x.shape, 1, **like(x, dtype, device))


@creator
def empty_like(x: Tensor, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """An unspecified-valued tensor shaped like `x` (pyburn gives zeros)."""
    return zeros_like(x, dtype, device)


@creator
def full_like(x: Tensor, fill_value: int | float | bool, dtype: Any = None,
              device: DeviceLike = None) -> Tensor:
    """`fill_value` everywhere, with the shape (and by default dtype and device) of `x`."""
    return full(x.shape, fill_value, **like(x, dtype, device))


@creator
def arange(start: int | float, end: int | float | None = None, step: int | float = 1, *,
           dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """Values from `start` (inclusive) to `end` (exclusive) by `step`; ``arange(n)`` counts
    from 0. Integer arguments give int32, any float argument float32."""
    if end is None:
        start, end = 0, start
    for v in (start, end, step):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ArgumentError(f"arange needs finite numbers, got {v!r}")
    if step == 0:
        raise ArgumentError("arange step cannot be zero")
    inferred = default_float if any(isinstance(v, float) for v in (start, end, step)) \
        else default_int
    dev, dt = target(device, dtype, inferred)
    n = max(0, math.ceil((end - start) / step))
    return wrap(dev.backend.arange(start, step, n, dt), (n,), dt, dev)


@creator
def linspace(start: float, end: float, steps: int, *, dtype: Any = None,
             device: DeviceLike = None) -> Tensor:
    """`steps` evenly spaced values from `start` to `end`, both included."""
    if not isinstance(steps, int) or steps < 0:
        raise ArgumentError(f"linspace needs a non-negative int number of steps, got {steps!r}")
    dev, dt = target(device, dtype, default_float)
    if steps == 1:
        return full((1,), start, dt, dev)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    return wrap(dev.backend.arange(float(start), step, steps, dt), (steps,), dt, dev)
