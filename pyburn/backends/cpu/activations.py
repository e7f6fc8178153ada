"""The cpu backend's "activation" capability (contract: ``pyburn.ops.capability``): sigmoid,
silu, hardsigmoid and hardswish in a few passes over the tensor each, where the composites
take eight to eleven.

Two costs shape the code. numpy's exp is vectorised (SIMD) while the exp a numba loop calls
is a scalar one (numba has no vector math library without Intel's SVML), so the exp stays
numpy's, in place. And a masked operation (``np.where``, ``where=``) over the random signs of
activations costs ten times an arithmetic pass (branch mispredictions), so none is used.

The logistic is ``n / (1 + e)`` with ``e = exp(-|x|)`` and ``n`` 1 where x >= 0, e below:
accurate in relative terms for every x, and no exp overflows. With the compiled loops
(`jit.enabled`; `numba_activations`, compiled once per dtype and cached on disk) that is a
loop for -|x|, numpy's exp in place and a loop for the quotient (times x for silu);
hardsigmoid and hardswish are one loop each. Without them, numpy ufuncs into preallocated
arrays: ``n`` is ``max(e, x >= 0)`` (the comparison cast to 1.0 or 0.0), and ``min(max(x
+ 3, 0), 6)`` one clip.

float16 is computed in float32 and rounded once; views are read through a contiguous copy
by the loops, and as they are by numpy.

float32's sigmoid and SiLU with the compiled loops are one pass each
(`numba_activations.activate_f32`, over a copy of x): their exp is a vectorised polynomial of
the loop's own (within 0.7 ulp, where numpy's is within 1.7), so no second array and no
separate exp pass are needed.

`apply_in_place` is the epilogue of a fused convolution (the "conv_activation" capability):
the same activations, or a clip, written over the convolution's fresh output where it is
contiguous; the values are those of the separate op, bit for bit.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from . import jit

if TYPE_CHECKING:
    from .numba_activations import Loops


def activation(x: np.ndarray, name: str) -> np.ndarray:
    """The activation `name` ("sigmoid", "silu", "hardsigmoid", "hardswish") of float16,
    float32 or float64 x, as a new array of x's shape and dtype."""
    if x.dtype == np.float16:
        return activation(x.astype(np.float32), name).astype(np.float16)
    if jit.enabled():
        return _compiled(x, name)
    return _NUMPY[name](x)


def apply_in_place(y: np.ndarray, spec: tuple | None, shift: np.ndarray | None = None
                   ) -> np.ndarray:
    """The activation `spec` of float y, a fresh array the caller owns (or a view of one):
    ``("clip", lo, hi)`` (``min(max(y, lo), hi)``, NaN kept), ``(name,)`` for a name
    `activation` takes, or None (the shift alone); with `shift`, of ``y + shift`` per
    channel (y (N, C, ...), shift (C,) of y's dtype; the sum rounded first, as a separate
    add). Written over y where that saves a pass (a float32 y stored contiguous or channels
    last, with the compiled loops: one pass for the add and the activation; a clip), else a
    new array of y's layout. Returns the result."""
    if y.dtype == np.float32 and y.ndim >= 2 and jit.enabled():
        loops, by = _in_place_f32(), _NO_SHIFT if shift is None else shift
        if y.flags.c_contiguous:  # the usual case, tested first: one flags read
            loops.activate_f32(y.reshape(y.shape[0], y.shape[1], -1), by,
                               *_f32_arguments(spec))
            return y
        if jit.channels_last(y):  # (N, C, H, W) stored (N, H, W, C): a row per position
            loops.activate_last_f32(y.transpose(0, 2, 3, 1).reshape(-1, y.shape[1]), by,
                                    *_f32_arguments(spec))
            return y
    if shift is not None:
        y += shift.reshape((-1,) + (1,) * (y.ndim - 2))
    if spec is None:
        return y
    name, *bounds = spec
    return np.clip(y, *bounds, out=y) if name == "clip" else activation(y, name)


#: the kind number of each activation in `numba_activations.activate_f32` (its CLIP, ...;
#: None: IDENTITY)
_KINDS = {"clip": 0, "hardsigmoid": 1, "hardswish": 2, "sigmoid": 3, "silu": 4, None: 5}


@functools.cache
def _f32_arguments(spec: tuple | None) -> tuple[int, np.float32, np.float32]:
    """The kind and bounds arguments of `activate_f32` for `spec`; a model's few specs come
    again on every call, so each is converted once."""
    name, *bounds = (None,) if spec is None else spec
    return _KINDS[name], *((np.float32(bounds[0]), np.float32(bounds[1])) if bounds
                           else _NO_BOUNDS)


def _compiled(x: np.ndarray, name: str) -> np.ndarray:
    """The activation through the compiled loops of x's dtype (float32's logistic two: one
    pass over a copy of x)."""
    if not (x.flags.c_contiguous or jit.channels_last(x)):
        x = np.ascontiguousarray(x)
    # out in x's layout: x and out are flat in the same order (views, both compact)
    if x.dtype == np.float32 and name in ("sigmoid", "silu"):
        out = np.array(x, order="K")
        _in_place_f32().activate_f32(out.ravel(order="K").reshape(1, 1, -1), _NO_SHIFT,
                                     _KINDS[name], *_NO_BOUNDS)
        return out
    loops = _loops(x.dtype)
    result = np.empty_like(x)
    flat, out = x.ravel(order="K"), result.ravel(order="K")
    if name in ("hardsigmoid", "hardswish"):
        getattr(loops, name)(flat, out)
    else:
        # e apart from out: a loop whose output aliases an input is not vectorised
        e = np.empty_like(flat)
        loops.negative_abs(flat, e)
        np.exp(e, out=e)
        (loops.logistic if name == "sigmoid" else loops.swish)(flat, e, out)
    return result


def _logistic(x: np.ndarray) -> np.ndarray:
    """``max(e, x >= 0) / (1 + e)`` with ``e = exp(-|x|)``, in two arrays."""
    one = x.dtype.type(1)
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    y = np.empty_like(e)
    np.greater_equal(x, x.dtype.type(0), out=y, casting="unsafe")  # 1.0 or 0.0
    np.maximum(e, y, out=y)  # NaN stays NaN
    e += one
    return np.divide(y, e, out=y)


def _silu(x: np.ndarray) -> np.ndarray:
    """x times `_logistic`, in its array."""
    y = _logistic(x)
    return np.multiply(y, x, out=y)


def _hard(x: np.ndarray, times_x: bool) -> np.ndarray:
    """``min(max(x + 3, 0), 6) / 6``, times x first when `times_x`, in one array."""
    t = np.add(x, x.dtype.type(3))
    np.clip(t, x.dtype.type(0), x.dtype.type(6), out=t)
    if times_x:
        np.multiply(t, x, out=t)
    return np.divide(t, x.dtype.type(6), out=t)


#: the numpy form of each activation
_NUMPY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sigmoid": _logistic, "silu": _silu,
    "hardsigmoid": functools.partial(_hard, times_x=False),
    "hardswish": functools.partial(_hard, times_x=True)}


@functools.cache
def _in_place_f32() -> ModuleType:
    """`numba_activations`, whose ``activate_f32`` and ``activate_last_f32`` write float32
    activations in place (numba imported on first use)."""
    from . import numba_activations  # optional: numba, the extra "jit"

    return numba_activations


#: the bounds argument of `activate_f32` for the kinds that take none, and its empty shift
_NO_BOUNDS = (np.float32(0), np.float32(0))
_NO_SHIFT = np.empty(0, dtype=np.float32)


@functools.cache
def _loops(dtype: np.dtype) -> Loops:
    """The loops of one dtype, compiled (or loaded from numba's cache) on first use."""
    from .numba_activations import compile_loops  # optional: numba, the extra "jit"

    return compile_loops(dtype)
