"""Seeded permutations for shuffling, the same on every platform, Python and numpy version.

Epoch ``e`` of seed ``s`` sorts the items by 64-bit keys: key ``i`` is words ``2i`` (high half)
and ``2i + 1`` (low half) of the Philox-4x32-10 stream of `pyburn.random` with key ``s``,
starting at word ``e * 2**32``. Each epoch so reads its own stretch of the stream (a dataset
holds at most 2**31 items, two words each), and the sort is stable, so the rare equal keys
keep index order. `random.Random` is not used: Python does not promise that its shuffle
stays the same across versions.
"""

from __future__ import annotations

from ..errors import ArgumentError
from ..random import random_words

SEED_MASK = (1 << 64) - 1
#: words of the stream each epoch may use: two per item
EPOCH_STRIDE = 1 << 32
MAX_ITEMS = EPOCH_STRIDE // 2


def _numpy():
    """numpy, or None where it is missing (Pyodide without it): only used for speed."""
    try:
        import numpy  # optional: numpy, only for speed
    except ImportError:
        return None
    return numpy


def permutation(n: int, seed: int, epoch: int = 0) -> list[int]:
    """A random order of ``range(n)`` fixed by `seed` (any int, taken modulo 2**64) and
    `epoch` (>= 0): the same list on every platform, with or without numpy.

    >>> sorted(permutation(5, seed=1)) == list(range(5))
    True
    """
    if not 0 <= n <= MAX_ITEMS:
        raise ArgumentError(f"cannot shuffle {n} items: between 0 and {MAX_ITEMS} are allowed")
    if epoch < 0:
        raise ArgumentError(f"epoch must be >= 0, got {epoch}")
    seed &= SEED_MASK
    offset = epoch * EPOCH_STRIDE
    np = _numpy()
    if np is not None:
        from ..backends.cpu.philox import philox_words  # optional: numpy (philox needs it)

        words = philox_words(2 * n, seed, offset).astype(np.uint64)
        keys = (words[0::2] << np.uint64(32)) | words[1::2]
        return np.argsort(keys, kind="stable").tolist()
    words = random_words(2 * n, seed, offset)
    keys = [(words[2 * i] << 32) | words[2 * i + 1] for i in range(n)]
    return sorted(range(n), key=keys.__getitem__)
