"""Seeded draws for the data package, the same on every platform, Python and numpy version.

Every draw is a transform of words of the Philox-4x32-10 stream of `pyburn.random` keyed by a
64-bit seed; epoch ``e`` of a loader or sampler reads the stretch that starts at word
``e * 2**32``, so epochs never share words.

- `permutation` (shuffling): epoch ``e`` of seed ``s`` sorts the items by 64-bit keys, key ``i``
  being words ``2i`` (high half) and ``2i + 1`` (low half) of the stretch (a dataset holds at
  most 2**31 items, two words each); the sort is stable, so the rare equal keys keep index
  order.
- `uniform_ints` (sampling with replacement): Lemire's multiply-shift with rejection, one word
  per int.
- `uniform_floats` (weighted sampling): two words per float, as `pyburn.rand` makes float64.

`random.Random` is not used: Python does not promise that its shuffle stays the same across
versions.
"""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ..random import MASK32, default_generator, random_words

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


def check_seed(seed: Any, what: str) -> int | None:
    """`seed` modulo 2**64, or None for None; `ArgumentError` for anything else."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"{what} seed must be an int or None, got {seed!r}")
    return seed & SEED_MASK


def fresh_seed() -> int:
    """64 bits from pyburn's default generator, so that `pyburn.manual_seed` fixes the
    order of a loader or sampler created without a seed."""
    seed, offset = default_generator.take(2)
    high, low = random_words(2, seed, offset)
    return (high << 32) | low


def stream_words(n: int, seed: int, offset: int) -> list[int]:
    """`pyburn.random.random_words`: the same words, computed by numpy where it is there."""
    if _numpy() is None:
        return random_words(n, seed, offset)
    from ..backends.cpu.philox import philox_words  # optional: numpy (philox needs it)

    return philox_words(n, seed, offset).tolist()


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


def uniform_ints(count: int, n: int, seed: int, offset: int) -> list[int]:
    """`count` ints uniform in ``[0, n)`` (``1 <= n <= 2**32``), from the words from `offset`
    on, in order: Lemire's multiply-shift, ``(word * n) >> 32``, keeping a word only when the
    low half of its product is at least ``2**32 % n``. The rejected words are those that would
    make some results more likely than others (a fraction below ``n / 2**32``), so there is no
    modulo bias; each kept word gives one int, so the draw reads ``count`` words and the few
    rejected.

    >>> all(0 <= i < 6 for i in uniform_ints(100, 6, seed=1, offset=0))
    True
    """
    threshold = (1 << 32) % n
    out: list[int] = []
    while len(out) < count:
        words = stream_words(count - len(out), seed, offset)
        offset += len(words)
        for word in words:
            product = word * n
            if product & MASK32 >= threshold:
                out.append(product >> 32)
    return out


def uniform_floats(count: int, seed: int, offset: int) -> list[float]:
    """`count` floats uniform in ``[0, 1)``, multiples of 2**-53, from two words each, as
    `pyburn.rand` makes float64: 26 bits of the first and 27 of the second,
    ``((w0 & (2**26 - 1)) * 2**27 + (w1 & (2**27 - 1))) * 2**-53``."""
    words = stream_words(2 * count, seed, offset)
    return [((words[2 * i] & 0x3FFFFFF) * 2.0**27 + (words[2 * i + 1] & 0x7FFFFFF)) * 2.0**-53
            for i in range(count)]
