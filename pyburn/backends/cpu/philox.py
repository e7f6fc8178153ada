"""Philox-4x32-10 on numpy arrays: every block of a request computed at once.

The generator is specified in ``pyburn.random`` (``philox_block``); this is the same round
function applied to a whole array of counters, so the words match ``random_words`` exactly.
"""

from __future__ import annotations

import numpy as np

from ...random import MASK32, PHILOX_M0, PHILOX_M1, PHILOX_ROUNDS, PHILOX_W0, PHILOX_W1

_M0 = np.uint64(PHILOX_M0)
_M1 = np.uint64(PHILOX_M1)
_LOW = np.uint64(MASK32)
_32 = np.uint64(32)
_MASK64 = (1 << 64) - 1


def philox_words(n: int, seed: int, offset: int) -> np.ndarray:
    """Words ``offset .. offset + n - 1`` of the stream for `seed`, as a 1-d uint32 array."""
    first = offset // 4
    blocks = (offset + n + 3) // 4 - first
    # A counter has 128 bits, as four uint32 words; its low and high halves are uint64
    # arrays, the high half taking the carry where the low one wraps.
    low_start = np.uint64(first & _MASK64)
    low = np.arange(blocks, dtype=np.uint64) + low_start
    high = (low < low_start).astype(np.uint64) + np.uint64((first >> 64) & _MASK64)
    # Every word is held in a uint64 so that a 32x32-bit product keeps its high half.
    c0, c1, c2, c3 = low & _LOW, low >> _32, high & _LOW, high >> _32
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for _ in range(PHILOX_ROUNDS):
        p0 = c0 * _M0
        p1 = c2 * _M1
        c0, c1, c2, c3 = ((p1 >> _32) ^ c1 ^ np.uint64(k0), p1 & _LOW,
                          (p0 >> _32) ^ c3 ^ np.uint64(k1), p0 & _LOW)
        k0 = (k0 + PHILOX_W0) & MASK32
        k1 = (k1 + PHILOX_W1) & MASK32
    words = np.stack((c0, c1, c2, c3), axis=1).astype(np.uint32).reshape(-1)
    start = offset - first * 4
    return words[start:start + n]
