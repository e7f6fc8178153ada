"""Elementwise functions numpy lacks (or gets wrong for pyburn), on whole arrays.

``pyburn.ops.elementwise`` names these with a trailing underscore ("rsqrt_", "erf_"): the cpu
backend looks them up here without it. `power` replaces ``np.power`` for integers, where
numpy refuses negative exponents.

erf, without scipy
    Two expansions, each used where it converges fast, both derived from
    ``erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt``:

    - for ``|x| < 2``, the series with positive terms (integrate ``exp(-t^2)`` by parts
      repeatedly): ``erf(x) = 2/sqrt(pi) * x * exp(-x^2) * sum_n (2x^2)^n / (1*3*...*(2n+1))``.
      No term cancels another, so rounding stays at a few ulp; 30 terms reach double
      precision at ``|x| = 2`` (the ratio of consecutive terms is ``2x^2 / (2n+3)``);
    - for ``2 <= |x| < 6``, Laplace's continued fraction
      ``erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + (2/2)/(x + (3/2)/(x + ...))))``,
      evaluated from a fixed depth of 42 back to the front, then ``erf = 1 - erfc``; it
      converges faster the larger x is, and 42 levels reach double precision at 2.

    Beyond 6, ``erfc(x) < 2**-54`` and erf rounds to +-1 exactly. ``exp(-x^2)`` is computed
    with the rounding error of ``x*x`` put back (Dekker's exact product), which would
    otherwise cost ``x^2`` ulp. Arrays are processed in cache-sized chunks because each
    expansion is a few dozen passes over its data. Measured against ``math.erf``, the
    largest relative error is below 1e-15.

    float32 and float16 results need far fewer bits, and take two polynomials instead, in
    float64: ``erf(x) = x * P(x^2)`` for ``|x| < 2`` (degree 12) and
    ``erfc(x) = exp(-x^2) / x * Q(1/x^2)`` for ``2 <= |x| < 6`` (degree 8), least-squares fits
    in Chebyshev's basis over 40,001 points of ``math.erf`` and ``math.erfc`` (numpy's
    ``Chebyshev.fit``, converted to powers). Both keep the float64 value within 2**-35 of
    erf's (measured on 400,001 points each), 1/2048 of a float32 ulp. Their erf is then the
    float64 erf rounded, except where that lies within 1/2048 ulp of halfway between two
    floats (at most one ulp off there), in about half of float64's work: GELU's erf is most
    of a small transformer's elementwise time. With numba (`jit.enabled`) the first
    polynomial and the values beyond 6 are one compiled pass (`numba_math`), the second
    polynomial numpy's on the values between: numpy's numbers bit for bit, without the
    masks (32x1536 GELU-like values: 1.01 → 0.23 ms).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from . import jit

_SERIES_END = 2.0  # |x| below this uses the series, above it the continued fraction
_ONE_END = 6.0  # |x| from here on has erf(x) == +-1 in double precision
_SERIES_TERMS = 30
_FRACTION_DEPTH = 42
_CHUNK = 1 << 15  # elements per pass: the float64 temporaries stay in the L2 cache
# Coefficient n of the series in u = 2x^2 is 1 / (1*3*...*(2n+1)), each correctly rounded.
_SERIES = tuple(1.0 / math.prod(range(1, 2 * n + 2, 2)) for n in range(_SERIES_TERMS + 1))
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ONE_OVER_SQRT_PI = 1.0 / math.sqrt(math.pi)
_DEKKER_SPLIT = 134217729.0  # 2**27 + 1 splits a double into two 26-bit halves
# float32 and float16: erf(x) / x as a polynomial in x^2 (|x| < 2), and x exp(x^2) erfc(x) as
# one in 1 / x^2 (2 <= |x| < 6); powers from the constant term up
_NEAR_NARROW = (1.128379167087809, -0.37612638867693077, 0.11283791266244082,
                -0.02686615054386534, 0.005223923206069939, -0.0008547424531269439,
                0.00012045520480447783, -1.4852806603992182e-05, 1.6084401694277544e-06,
                -1.498498293467097e-07, 1.1254450057746636e-08, -5.927331344298338e-10,
                1.590273182200404e-11)
_MIDDLE_NARROW = (0.5641893685287578, -0.28206966151805324, 0.421904246365967,
                  -1.0235623783232137, 3.0963290968118904, -9.200463223106008,
                  21.651967416478794, -32.86448308814819, 23.141084944523328)


def _exp_neg_square(x: np.ndarray) -> np.ndarray:
    """exp(-x*x), without the error of rounding x*x."""
    square = x * x
    scaled = x * _DEKKER_SPLIT
    high = scaled - (scaled - x)
    low = x - high
    # square_error = x*x - square, exactly (all products of halves are exact)
    square_error = ((high * high - square) + 2.0 * high * low) + low * low
    # exp(-(square + e)) = exp(-square) * exp(-e), and |e| <= ulp(square) / 2
    return np.exp(-square) * (1.0 - square_error)


def _polynomial(coefficients: tuple[float, ...], t: np.ndarray) -> np.ndarray:
    """The polynomial with `coefficients` (constant term first) at t, by Horner's rule."""
    total = np.full_like(t, coefficients[-1])
    for coefficient in reversed(coefficients[:-1]):
        np.multiply(total, t, out=total)
        np.add(total, coefficient, out=total)
    return total


def _erf_series(x: np.ndarray) -> np.ndarray:
    """erf(x) for |x| < 2 by the series with positive terms."""
    total = _polynomial(_SERIES, 2.0 * x * x)
    return _TWO_OVER_SQRT_PI * x * _exp_neg_square(x) * total


def _erfc_fraction(a: np.ndarray) -> np.ndarray:
    """erfc(a) for 2 <= a < 6 by Laplace's continued fraction."""
    tail = a.copy()
    for k in range(_FRACTION_DEPTH, 0, -1):
        np.divide(k / 2.0, tail, out=tail)
        np.add(tail, a, out=tail)
    return _exp_neg_square(a) * _ONE_OVER_SQRT_PI / tail


def _erf_near_narrow(x: np.ndarray) -> np.ndarray:
    """erf(x) for |x| < 2, to float32's precision."""
    return x * _polynomial(_NEAR_NARROW, x * x)


def _erfc_middle_narrow(a: np.ndarray) -> np.ndarray:
    """erfc(a) for 2 <= a < 6, to float32's precision."""
    square = a * a
    return np.exp(-square) * _polynomial(_MIDDLE_NARROW, 1.0 / square) / a


def _erf_chunk(x: np.ndarray, full: bool) -> np.ndarray:
    """erf of a 1-d float64 array, to float64's precision where `full`, else to float32's
    (with numba's loops, `_erf_narrow_compiled`: the same numbers)."""
    if not full and jit.enabled():
        return _erf_narrow_compiled(x)
    near_erf, middle_erfc = (_erf_series, _erfc_fraction) if full else \
        (_erf_near_narrow, _erfc_middle_narrow)
    size = np.abs(x)
    if size.max(initial=0.0) < _SERIES_END:  # no NaN and all in the first range: no masks
        return near_erf(x)
    out = np.sign(x)  # +-1 beyond _ONE_END, NaN stays NaN
    near = size < _SERIES_END
    out[near] = near_erf(x[near])
    middle = (size >= _SERIES_END) & (size < _ONE_END)
    out[middle] = np.copysign(1.0 - middle_erfc(size[middle]), x[middle])
    return out


def _erf_narrow_compiled(x: np.ndarray) -> np.ndarray:
    """`_erf_chunk`'s float32-precision erf in one compiled pass for |x| < 2 and beyond 6
    (`numba_math.compile_erf_near`), numpy's `_erfc_middle_narrow` for the values between:
    the numbers of the numpy form, without its masks (ten passes over a chunk)."""
    out = np.empty_like(x)
    middle = np.empty(x.size, dtype=np.int64)
    count = _erf_near_loop()(np.ascontiguousarray(x), out, middle)
    if count:
        at = middle[:count]
        values = x[at]
        out[at] = np.copysign(1.0 - _erfc_middle_narrow(np.abs(values)), values)
    return out


@functools.cache
def _erf_near_loop() -> Callable[..., int]:
    """`_erf_narrow_compiled`'s loop (numba imported on first use)."""
    from .numba_math import compile_erf_near  # optional: numba, the extra "jit"

    return compile_erf_near(_NEAR_NARROW, _SERIES_END, _ONE_END)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, computed in float64 whatever the float dtype of `x` (to float64's
    precision for float64, to float32's for the narrower dtypes)."""
    full = np.asarray(x).dtype == np.float64
    flat = np.asarray(x, dtype=np.float64).reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _CHUNK):
        out[start:start + _CHUNK] = _erf_chunk(flat[start:start + _CHUNK], full)
    return out.reshape(np.shape(x))


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0) in one pass (-0 gives +0, NaN stays NaN)."""
    return np.maximum(x, x.dtype.type(0))


def rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x); float16 is computed in float32 so that it is rounded once."""
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    return np.reciprocal(np.sqrt(x))


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a ** b``; for integers a negative exponent gives ``1 / a**-b`` truncated toward
    zero: 1 for a == 1, +-1 for a == -1 by the parity of b, else 0."""
    if a.dtype.kind == "f":
        return np.power(a, b)
    negative = b < 0
    if not negative.any():
        return np.power(a, b)
    result = np.power(a, np.where(negative, 0, b))
    odd = (b & 1).astype(bool)
    reciprocal = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
    return np.where(negative, reciprocal, result).astype(a.dtype, copy=False)
