"""Reductions and scans: sum, mean, max, var, norm, cumsum, ... along any dims."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple
from typing import Any

from .._tensor import Tensor, install, result, wrap
from ..dtypes import bool_, default_float, default_int, int32
from ..errors import ArgumentError
from ..precision import autocast_inputs
from ..shape import norm_dim, norm_dims, numel
from .math_ops import binary, unary, where
from .movement import reshape_checked
from .reducers import REDUCTIONS

Dims = int | tuple[int, ...] | list[int] | None

#: what ``t.max(dim)``, ``t.min(dim)``, ``sort`` and ``topk`` return, as in PyTorch
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def _reduce(op: str, x: Tensor, dim: Dims, keepdim: bool) -> Tensor:
    """Run the backend reduction `op` (an entry of ``REDUCTIONS``) over `dim` and drop the
    reduced dims unless keepdim."""
    reduction = REDUCTIONS[op]
    (x,) = autocast_inputs(op, x)
    if not reduction.empty_ok:
        _check_nonempty(x, dim, op)
    shape = x.shape
    axes = norm_dims(dim, len(shape))
    kept = tuple([1 if i in axes else s for i, s in enumerate(shape)])
    out_dtype = bool_ if reduction.truth else x.dtype
    h = x.device.backend.reduce(op, x._h, axes)
    saved = wrap(h, kept, out_dtype, x.device) if reduction.saves_result else None
    out = result(h, kept, out_dtype, reduction.rule, (x,), axes=axes, result=saved)
    return out if keepdim else reshape_checked(out, tuple([s for i, s in enumerate(shape)
                                                           if i not in axes]))


def _counting(x: Tensor) -> Tensor:
    """Bool tensors are summed and multiplied as int32."""
    return x.cast(default_int) if x.dtype.is_bool else x


def sum(x: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum over `dim` (all dims if None). Bool sums give int32."""
    x = _counting(x) if dtype is None else x.cast(dtype)
    return _reduce("sum", x, dim, keepdim)


def prod(x: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Product over `dim` (all dims if None)."""
    x = _counting(x) if dtype is None else x.cast(dtype)
    return _reduce("prod", x, dim, keepdim)


def mean(x: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Arithmetic mean over `dim`; integer tensors give float32."""
    x = x.cast(dtype) if dtype is not None else (
        x if x.dtype.is_floating_point else x.cast(default_float))
    count = _count(x, dim)
    return binary("div", _reduce("sum", x, dim, keepdim), count)


def _count(x: Tensor, dim: Dims) -> int:
    return numel(x.shape[i] for i in norm_dims(dim, x.ndim))


def _check_nonempty(x: Tensor, dim: Dims, name: str) -> None:
    if 0 not in x.shape:  # nothing is empty (bad dims are reported by the reduction itself)
        return
    empty_dim = builtins.any(x.shape[i] == 0 for i in norm_dims(dim, x.ndim))
    if empty_dim or (x.numel() == 0 and dim is None):
        raise ArgumentError(f"{name} of an empty tensor (shape {x.shape}) along dims "
                            f"{dim if dim is not None else 'all'} has no identity")


def amax(x: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """Maximum over `dim` (NaN propagates)."""
    return _reduce("max", x, dim, keepdim)


def amin(x: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """Minimum over `dim` (NaN propagates)."""
    return _reduce("min", x, dim, keepdim)


def _extreme(op: str, x: Tensor, dim: Any, keepdim: bool) -> Any:
    if isinstance(dim, Tensor):  # torch.max(a, b) is the elementwise maximum
        return binary("maximum" if op == "max" else "minimum", x, dim)
    if dim is None:
        return amax(x) if op == "max" else amin(x)
    values = amax(x, dim, keepdim) if op == "max" else amin(x, dim, keepdim)
    return ValuesIndices(values, _arg("arg" + op, x, dim, keepdim))


def max(x: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Largest element; with an int `dim` a (values, indices) pair; with a tensor, the
    elementwise maximum."""
    return _extreme("max", x, dim, keepdim)


def min(x: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """Smallest element; with an int `dim` a (values, indices) pair; with a tensor, the
    elementwise minimum."""
    return _extreme("min", x, dim, keepdim)


def _arg(op: str, x: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    if x.dtype.is_bool:
        x = x.cast(int32)
    if dim is None:
        _check_nonempty(x, None, op)
        flat = x.reshape(-1)
        h = x.device.backend.arg_reduce(op, flat._h, 0)
        shape = (1,) * x.ndim if keepdim else ()
        return wrap(x.device.backend.reshape(h, shape), shape, int32, x.device)
    if x.ndim == 0:
        norm_dim(dim, 1)  # a 0-d tensor accepts dim 0 or -1
        return wrap(x.device.backend.full((), 0, int32), (), int32, x.device)
    axis = norm_dim(dim, x.ndim)
    _check_nonempty(x, axis, op)
    h = x.device.backend.arg_reduce(op, x._h, axis)
    kept = tuple(1 if i == axis else s for i, s in enumerate(x.shape))
    out = wrap(h, kept, int32, x.device)
    return out if keepdim else out.squeeze(axis)


def argmax(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """int32 index of the first largest element (over the flattened tensor if dim is None)."""
    return _arg("argmax", x, dim, keepdim)


def argmin(x: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """int32 index of the first smallest element (over the flattened tensor if dim is None)."""
    return _arg("argmin", x, dim, keepdim)


def all(x: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where every element along `dim` is nonzero."""
    return _reduce("all", x, dim, keepdim)


def any(x: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """True where some element along `dim` is nonzero."""
    return _reduce("any", x, dim, keepdim)


def var(x: Tensor, dim: Dims = None, keepdim: bool = False, *, correction: float = 1,
        unbiased: bool | None = None) -> Tensor:
    """Variance over `dim` with Bessel's `correction` (1: sample variance, 0: population)."""
    if unbiased is not None:
        correction = 1 if unbiased else 0
    x = x if x.dtype.is_floating_point else x.cast(default_float)
    centered = binary("sub", x, mean(x, dim, keepdim=True))
    total = _reduce("sum", binary("mul", centered, centered), dim, keepdim)
    return binary("div", total, _count(x, dim) - correction)


def std(x: Tensor, dim: Dims = None, keepdim: bool = False, *, correction: float = 1,
        unbiased: bool | None = None) -> Tensor:
    """Standard deviation: the square root of `var`."""
    return unary("sqrt", var(x, dim, keepdim, correction=correction, unbiased=unbiased))


def logsumexp(x: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over `dim`, computed without overflow."""
    x = x if x.dtype.is_floating_point else x.cast(default_float)
    if x.numel() == 0:
        return unary("log", _reduce("sum", unary("exp", x), dim, keepdim))
    top = _reduce("max", x, dim, True)
    top = where(unary("isfinite", top), top, 0.0)  # all -inf rows: keep -inf, not NaN
    total = _reduce("sum", unary("exp", binary("sub", x, top)), dim, keepdim)
    shift = top if keepdim else top.reshape(total.shape)
    return binary("add", unary("log", total), shift)


def norm(x: Tensor, p: float | str = 2, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """Vector p-norm over `dim` (all elements if None): p = 2 ("fro"), 1, inf, -inf, 0, any
    other number."""
    x = x if x.dtype.is_floating_point else x.cast(default_float)
    if p == "fro":
        p = 2
    if isinstance(p, str) or not isinstance(p, (int, float)):
        raise ArgumentError(f"norm order p is a number or 'fro', got {p!r}")
    size = unary("abs", x)
    if p == math.inf:
        return amax(size, dim, keepdim)
    if p == -math.inf:
        return amin(size, dim, keepdim)
    if p == 0:
        return _reduce("sum", binary("ne", x, 0).cast(x.dtype), dim, keepdim)
    if p == 1:
        return _reduce("sum", size, dim, keepdim)
    if p == 2:
        return _root(_reduce("sum", binary("mul", x, x), dim, keepdim), 2.0)
    return _root(_reduce("sum", binary("pow", size, float(p)), dim, keepdim), float(p))


def _root(total: Tensor, p: float) -> Tensor:
    """total ** (1/p), with a zero (not NaN) gradient where total is 0: the root's slope is
    infinite there and would multiply a zero."""
    zero = binary("eq", total, 0)  # (NaN and inf must go through the root unchanged)
    safe = where(zero, 1.0, total)
    root = unary("sqrt", safe) if p == 2 else binary("pow", safe, 1.0 / p)
    return where(zero, 0.0, root)


def _scan(op: str, x: Tensor, dim: int, dtype: Any) -> Tensor:
    x = _counting(x) if dtype is None else x.cast(dtype)
    (x,) = autocast_inputs(op, x)
    if x.ndim == 0:
        return x
    axis = norm_dim(dim, x.ndim)
    return result(x.device.backend.scan(op, x._h, axis), x.shape, x.dtype,
                  REDUCTIONS[op].scan_rule, (x,), axis=axis)


def cumsum(x: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sum along `dim`."""
    return _scan("sum", x, dim, dtype)


def cumprod(x: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running product along `dim`."""
    return _scan("prod", x, dim, dtype)


def count_nonzero(x: Tensor, dim: Dims = None) -> Tensor:
    """Number of nonzero elements along `dim`, as int32."""
    return _reduce("sum", binary("ne", x, 0).cast(int32), dim, False)


FUNCTIONS = {"sum": sum, "prod": prod, "mean": mean, "amax": amax, "amin": amin,
              "max": max, "min": min, "argmax": argmax, "argmin": argmin, "all": all,
              "any": any, "var": var, "std": std, "logsumexp": logsumexp, "norm": norm,
              "cumsum": cumsum, "cumprod": cumprod, "count_nonzero": count_nonzero}
install(FUNCTIONS)
