"""The one random number generator: Philox-4x32-10, counter based, the same on every backend.

A stream is fixed by a 64-bit `seed`. Word ``i`` of the stream is word ``i % 4`` of the block
``philox(counter=i // 4, key=seed)``. Each random tensor takes the next ``numel`` words, so
``manual_seed(s)`` followed by the same calls gives the same words on flex, cpu and wgpu.
The transforms from words to numbers (uniform, normal, integers) are tensor-layer
composites shared by every backend: exact for uniform and integer draws, so those are the
same numbers everywhere; normal draws take log, sqrt and cos, which backends round
differently, so they agree to about an ulp (measured: about 1 value in 250 of a float32
ViT position embedding differs by one ulp between cpu and flex).
"""

from __future__ import annotations

import os
import threading

PHILOX_M0 = 0xD2511F53
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9
PHILOX_W1 = 0xBB67AE85
PHILOX_ROUNDS = 10
MASK32 = 0xFFFFFFFF


def philox_block(counter: int, seed: int) -> tuple[int, int, int, int]:
    """The four uint32 words of Philox-4x32-10 for a counter (up to 128 bits; streams use
    64) and a 64-bit key."""
    c0, c1, c2, c3 = ((counter >> shift) & MASK32 for shift in (0, 32, 64, 96))
    k0, k1 = seed & MASK32, (seed >> 32) & MASK32
    for _ in range(PHILOX_ROUNDS):
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & MASK32)
        k0 = (k0 + PHILOX_W0) & MASK32
        k1 = (k1 + PHILOX_W1) & MASK32
    return c0, c1, c2, c3


def random_words(n: int, seed: int, offset: int) -> list[int]:
    """Words ``offset .. offset + n - 1`` of the stream for `seed`, as uint32 ints."""
    if n <= 0:
        return []
    first, last = offset // 4, (offset + n - 1) // 4
    words: list[int] = []
    for block in range(first, last + 1):
        words.extend(philox_block(block, seed))
    start = offset - first * 4
    return words[start:start + n]


class Generator:
    """A seed and a position in its stream; thread-safe."""

    def __init__(self, seed: int | None = None):
        self._lock = threading.Lock()
        self.seed = int.from_bytes(os.urandom(8), "little") if seed is None else seed
        self.offset = 0

    def manual_seed(self, seed: int) -> None:
        """Restart the stream of `seed` (taken modulo 2**64)."""
        with self._lock:
            self.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
            self.offset = 0

    def take(self, n: int) -> tuple[int, int]:
        """Reserve the next `n` words; returns (seed, offset of the first)."""
        with self._lock:
            offset = self.offset
            self.offset += n
            return self.seed, offset

    def get_state(self) -> dict[str, int]:
        """The state as a dict, for checkpoints."""
        return {"seed": self.seed, "offset": self.offset}

    def set_state(self, state: dict[str, int]) -> None:
        """Restore a state returned by `get_state`."""
        with self._lock:
            self.seed, self.offset = int(state["seed"]), int(state["offset"])


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: the same calls then give the same numbers everywhere."""
    default_generator.manual_seed(seed)
    return default_generator
