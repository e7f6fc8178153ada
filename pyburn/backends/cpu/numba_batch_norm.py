"""The numba loop of `fused.batch_norm_eval` (the cpu backend's "batch_norm_eval"
capability): imported only by `fused`, when numba is there and $PYBURN_CPU_JIT does not say
no."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def scale_shift(x: np.ndarray, scale: np.ndarray, shift: np.ndarray, out: np.ndarray) -> None:
    """``out[n, c, i] = x[n, c, i] * scale[c] + shift[c]`` over contiguous (N, C, S) arrays
    of one dtype: the product rounded, then the sum (numba contracts no multiply-add
    without its fastmath flags), as numpy's two passes round them."""
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            s, b = scale[c], shift[c]
            for i in range(x.shape[2]):
                out[n, c, i] = x[n, c, i] * s + b
