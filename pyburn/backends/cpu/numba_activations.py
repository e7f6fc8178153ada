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


# ---- in place, float32: `activations.apply_in_place`, and the float32 logistic's two
#: the kinds `activate_f32` takes (`activations._KINDS` numbers them the same); IDENTITY:
#: the shift alone
CLIP, HARDSIGMOID, HARDSWISH, SIGMOID, SILU, IDENTITY = range(6)


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _exp_nonpositive(a: np.float32) -> np.float32:
    """exp(a) for float32 a <= 0 (NaN stays NaN), branch-free so that the loops calling it
    vectorise: a = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, the first exact in
    float32), a degree-6 polynomial for exp(r) (Cephes's expf coefficients), and 2^n as two
    float32 exponent fields, so that n down to -160 stays in range. Within 0.7 ulp of exp
    (numpy's float32 exp: 1.7) for a >= -87; 0 below -110 (where expf's value is 0 too),
    subnormal between."""
    a = np.float32(-110.0) if a < np.float32(-110.0) else a
    n = np.floor(a * np.float32(1.4426950408889634) + np.float32(0.5))
    r = a - n * np.float32(0.693359375)
    r = r + n * np.float32(2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    k = np.int32(n)
    half = k >> np.int32(1)
    first = np.int32((half + np.int32(127)) << np.int32(23)).view(np.float32)
    second = np.int32((k - half + np.int32(127)) << np.int32(23)).view(np.float32)
    return p * first * second


@njit(inline="always", error_model="numpy", fastmath={"contract"})
def _activation(v: np.float32, kind: int, lo: np.float32, hi: np.float32) -> np.float32:
    """Activation `kind` of one float32 value: CLIP ``min(max(v, lo), hi)`` (comparisons, so
    NaN stays NaN and lo > hi gives hi), HARDSIGMOID or HARDSWISH as `compile_loops`'s loops
    compute them (the same roundings), SIGMOID and SILU as they do but with
    `_exp_nonpositive` for numpy's exp."""
    zero, one, three, six = np.float32(0), np.float32(1), np.float32(3), np.float32(6)
    if kind == IDENTITY:
        return v
    if kind == CLIP:
        v = lo if v < lo else v
        return hi if v > hi else v
    if kind == HARDSIGMOID or kind == HARDSWISH:
        t = v + three
        t = zero if t < zero else t
        t = six if t > six else t
        return t / six if kind == HARDSIGMOID else v * t / six
    e = _exp_nonpositive(-abs(v))
    s = (one if v >= zero else e) / (one + e)
    return s if kind == SIGMOID else v * s


# "contract" (fused multiply-adds) speeds the polynomial up 1.5x; the other kinds have no
# product followed by a sum, so their roundings stay those of `compile_loops`'s loops
@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def activate_f32(x: np.ndarray, shift: np.ndarray, kind: int, lo: np.float32,
                 hi: np.float32) -> None:
    """Overwrite contiguous float32 x (N, C, P) with ``_activation(x + shift[c])`` per
    channel c, or with ``_activation(x)`` where `shift` is empty: one pass over x (the add
    rounded first, as a separate add would). The kind is the same for the whole loop, so
    the compiler takes its test out of the loop and vectorises each kind's."""
    shifted = shift.size > 0
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            row = x[n, c]
            if shifted:
                s = shift[c]
                for j in range(row.size):
                    row[j] = _activation(row[j] + s, kind, lo, hi)
            else:
                for j in range(row.size):
                    row[j] = _activation(row[j], kind, lo, hi)


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})
def activate_last_f32(x: np.ndarray, shift: np.ndarray, kind: int, lo: np.float32,
                      hi: np.float32) -> None:
    """`activate_f32` for x stored channels last: contiguous float32 x (P, C), the shift
    (C,) (or empty) per column."""
    shifted = shift.size > 0
    for p in range(x.shape[0]):
        row = x[p]
        if shifted:
            for c in range(row.size):
                row[c] = _activation(row[c] + shift[c], kind, lo, hi)
        else:
            for c in range(row.size):
                row[c] = _activation(row[c], kind, lo, hi)
