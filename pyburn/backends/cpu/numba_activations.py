"""The numba loops of `activations` (the cpu backend's "activation" capability): imported
only by `activations`, when numba is there and $PYBURN_CPU_JIT does not say no. See
`activations` for what they compute and how."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit


class Loops(NamedTuple):
    """The compiled loops of one dtype, each over flat contiguous arrays of that dtype."""

    #: ``negative_abs(x, out)``: ``out = -|x|``, the argument of the logistic's exp
    negative_abs: Callable[..., None]
    #: ``logistic(x, e, out)``: ``out = (1 if x >= 0 else e) / (1 + e)``, e = exp(-|x|)
    logistic: Callable[..., None]
    #: ``swish(x, e, out)``: x times the logistic, from the same e
    swish: Callable[..., None]
    #: ``hardsigmoid(x, out)``: ``min(max(x + 3, 0), 6) / 6``
    hardsigmoid: Callable[..., None]
    #: ``hardswish(x, out)``: ``x * min(max(x + 3, 0), 6) / 6``
    hardswish: Callable[..., None]


def compile_loops(dtype: np.dtype) -> Loops:
    """The loops of float32 or float64 (their constants are that dtype's, so float32 stays
    float32), compiled on their first call or loaded from numba's cache, which keys each of
    these closures by its constants."""
    zero, one, three, six = (dtype.type(v) for v in (0, 1, 3, 6))
    # numpy's error model: a division by zero is no Python exception, so no branch stops
    # the loops from being vectorised (the quotients have no zero divisor anyway)

    @njit(cache=True, nogil=True, error_model="numpy")
    def negative_abs(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            out[i] = -abs(x[i])

    @njit(cache=True, nogil=True, error_model="numpy")
    def logistic(x: np.ndarray, e: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            d = e[i]
            out[i] = (one if x[i] >= zero else d) / (one + d)

    @njit(cache=True, nogil=True, error_model="numpy")
    def swish(x: np.ndarray, e: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            v, d = x[i], e[i]
            out[i] = v * ((one if v >= zero else d) / (one + d))

    # comparisons, not min and max: NaN fails both and stays NaN
    @njit(cache=True, nogil=True, error_model="numpy")
    def hardsigmoid(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            t = x[i] + three
            t = zero if t < zero else t
            out[i] = (six if t > six else t) / six

    @njit(cache=True, nogil=True, error_model="numpy")
    def hardswish(x: np.ndarray, out: np.ndarray) -> None:
        for i in range(x.size):
            t = x[i] + three
            t = zero if t < zero else t
            out[i] = x[i] * (six if t > six else t) / six

    return Loops(negative_abs, logistic, swish, hardsigmoid, hardswish)


# ---- in place, float32: the epilogue of a fused convolution (`activations.apply_in_place`)
#: the kinds `activate_f32` takes (`activations._KINDS` numbers them the same)
CLIP, HARDSIGMOID, HARDSWISH = range(3)


@njit(cache=True, nogil=True, error_model="numpy")
def activate_f32(x: np.ndarray, kind: int, lo: np.float32, hi: np.float32) -> None:
    """Overwrite flat contiguous float32 x with its activation `kind`: CLIP ``min(max(x,
    lo), hi)`` (comparisons, so NaN stays NaN and lo > hi gives hi), HARDSIGMOID or
    HARDSWISH as `compile_loops`'s loops compute them (the same roundings). One loop per
    kind, each one pass over x."""
    zero, three, six = np.float32(0), np.float32(3), np.float32(6)
    if kind == CLIP:
        for i in range(x.size):
            v = x[i]
            v = lo if v < lo else v
            x[i] = hi if v > hi else v
    elif kind == HARDSIGMOID:
        for i in range(x.size):
            t = x[i] + three
            t = zero if t < zero else t
            x[i] = (six if t > six else t) / six
    else:
        for i in range(x.size):
            v = x[i]
            t = v + three
            t = zero if t < zero else t
            x[i] = v * (six if t > six else t) / six
