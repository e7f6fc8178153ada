"""A fused kernel's table of constants: every scalar it reads, in one small buffer.

A Python number in a tensor expression (``x * 0.9``, an optimizer's betas, its learning rate
and bias corrections) reaches the fusion graph as a ready tensor over a one-element buffer
of `launch.ScalarCache`, read with zero strides, whose value the host knows
(`launch.scalar_of`). Read as inputs, those would take one storage binding each, and WebGPU
guarantees only 8 per shader stage (metadata and output included): Adam's update alone reads
seven scalars. So a kernel reads all of them from one table, bound once: a buffer of 32-bit
words, content-cached like kernel metadata (`launch.MetaCache`), so a training loop uploads
a table again only when its values change.

Each walk of a graph (a map kernel's, a reduction's producers and its epilogue) reads its
constants as one WGSL array, ``<prefix>k``, loaded where the kernel loads its inputs that
are the same at every point, and each constant as one word of it: ``bitcast<f32>(lk[2])``.
Floats are stored as float32 bits (float16 constants too, as the float32 of the same value,
which is what loading the float16 element gives), int32 as its bits, uint8 and bool as the
word they are stored in. The code depends on the constants' dtypes and positions, never on
their values: Adam's bias corrections change every step and reuse one kernel.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ....dtypes import float16
from ...pool import Storage
from ..elementwise import Read
from ..handle import GpuTensor
from ..kinds import Kind
from ..launch import Gpu, Operand, scalar_of


def word(t: GpuTensor) -> bytes | None:
    """The table word of `t` when it is a constant (see the module docstring), else None."""
    stored = scalar_of(t)
    if stored is None or t.dtype is not float16:
        return stored
    return struct.pack("<f", struct.unpack("<e", stored[:2])[0])


def value(kind: Kind, word: str) -> str:
    """WGSL: the compute-type value of a constant of `kind` held in the u32 `word`."""
    return {"f32": f"bitcast<f32>({word})", "i32": f"bitcast<i32>({word})"}.get(kind.compute,
                                                                                 word)


@dataclass(frozen=True)
class Table:
    """One kernel's constants, uploaded: `storage` holds `words` words."""

    storage: Storage
    words: int

    @classmethod
    def of(cls, gpu: Gpu, words: Sequence[bytes]) -> Table | None:
        """The table holding `words` (None when there are none)."""
        if not words:
            return None
        return cls(gpu.meta.storage(b"".join(words)), len(words))

    def read(self, name: str, first: int, count: int, rank: int) -> Read:
        """Words ``first .. first + count - 1`` as `name`, an ``array<u32, count>`` that is
        the same at every point of a space of `rank` dims. The operand is the whole table as
        one element (its offset 0, its strides 0), so every kernel binds all of it, from its
        first word, and loads it once, with its inputs that are the same at every point."""
        words = ", ".join(f"{{buf}}[{first + j}]" for j in range(count))
        return Read(name, Operand(self.storage, 0, (0,) * rank, 4 * self.words), "u32",
                    f"array<u32, {count}>({words})")
