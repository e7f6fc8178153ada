"""The numba loops of `extra_math`'s float32 erf: imported only by `extra_math`, when numba is
there and $PYBURN_CPU_JIT does not say no. See `extra_math` for what they compute."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit


def compile_erf_near(coefficients: tuple[float, ...], near_end: float,
                     one_end: float) -> Callable[..., int]:
    """``near(x, out, middle) -> count`` over flat float64 arrays: ``out = x * P(x * x)``
    where ``|x| < near_end`` (P the polynomial of `coefficients`, constant term first, by
    Horner's rule with each product and sum rounded apart, in numpy's order: the values of
    `extra_math._polynomial`, bit for bit), ``sign(x)`` from `one_end` on (NaN stays NaN),
    and the positions of the values between the two ends written to `middle`, whose count
    it returns. The polynomial runs over every value in one vectorised loop (its value where
    it does not apply is overwritten); a second loop sorts out the rest. Compiled once per
    coefficient tuple, which numba's cache keys the closure by."""
    degree = len(coefficients) - 1
    table = np.array(coefficients, dtype=np.float64)

    @njit(cache=True, nogil=True, error_model="numpy")
    def near(x: np.ndarray, out: np.ndarray, middle: np.ndarray) -> int:
        for i in range(x.size):
            v = x[i]
            t = v * v
            total = table[degree]
            for k in range(degree - 1, -1, -1):
                total = total * t + table[k]
            out[i] = v * total
        count = 0
        for i in range(x.size):
            v = x[i]
            size = abs(v)
            if size < near_end:
                continue
            if size < one_end:
                middle[count] = i
                count += 1
            else:  # beyond one_end, and NaN (which fails every comparison)
                out[i] = v if v != v else (1.0 if v > 0.0 else -1.0)
        return count

    return near
