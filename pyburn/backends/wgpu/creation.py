"""Creation primitives for wgpu: full, arange and random bits.

`full` stores its value once and returns it expanded (every stride 0): handles are
immutable, so a filled tensor never needs more than one element of memory, and the scalar
operands the tensor layer makes for ``x + 1`` cost one cached element each (`ScalarCache`).
"""

from __future__ import annotations

import struct

from ...dtypes import DType, bool_, float16, int32, uint8
from .handle import GpuTensor, Shape
from .kinds import kind_of
from .launch import Box, Gpu, Operand
from .templates import render

WORKGROUP = 256
_PACK = {float16: "<e", uint8: "<I", bool_: "<I", int32: "<i"}


def scalar_bytes(value: float | int | bool, dtype: DType) -> bytes:
    """`value` as one stored element of `dtype`, padded to a 4-byte word."""
    packed = struct.pack(_PACK.get(dtype, "<f"), value)
    return packed + bytes(-len(packed) % 4)


def full(gpu: Gpu, shape: Shape, value: float | int | bool, dtype: DType) -> GpuTensor:
    """`value` everywhere: one stored element, expanded to `shape`."""
    kind_of(dtype)  # refuse float64/int64 before storing anything
    storage = gpu.scalars.get(dtype, scalar_bytes(value, dtype))
    return GpuTensor(storage, shape, dtype, (0,) * len(shape), 0)


def arange(gpu: Gpu, start: float | int, step: float | int, n: int, dtype: DType) -> GpuTensor:
    """``start + i * step``: exact (wrapping) integer arithmetic for int32, float32
    arithmetic for floats, rounded once to float16 where that is the dtype."""
    out = gpu.empty((n,), dtype)
    kind = out.kind
    compute = "f32" if dtype.is_floating_point else "i32"
    fmt = "<f" if compute == "f32" else "<i"
    bits = [struct.unpack("<i", struct.pack(fmt, v))[0] for v in (start, step)]
    store = kind.store("value" if compute == kind.compute else "u32(value)")
    source = render("arange", workgroup=WORKGROUP, out_type=kind.storage, T=compute,
                    store=store)

    def meta(box: Box) -> list[int]:
        return [box.size, box.starts[0], *bits, box.operands[1].offset]

    gpu.run(source, (n,), {1: Operand.of(out)}, meta, lambda box: -(-box.size // WORKGROUP))
    return out


def random_bits(gpu: Gpu, shape: Shape, seed: int, offset: int) -> GpuTensor:
    """int32 words ``offset ..`` of the Philox-4x32-10 stream for `seed`."""
    out = gpu.empty(shape, int32)
    n = out.numel
    source = render("philox", workgroup=WORKGROUP)
    key = [_signed(seed & 0xFFFFFFFF), _signed(seed >> 32 & 0xFFFFFFFF)]

    def meta(box: Box) -> list[int]:
        first_word = offset + box.starts[0]
        block = first_word // 4
        return [box.size, _signed(block & 0xFFFFFFFF), _signed(block >> 32 & 0xFFFFFFFF),
                first_word % 4, *key, box.operands[1].offset]

    def groups(box: Box) -> int:
        blocks = ((offset + box.starts[0]) % 4 + box.size + 3) // 4
        return -(-blocks // WORKGROUP)

    gpu.run(source, (n,), {1: Operand(out.storage, 0, (1,))}, meta, groups)
    return out


def _signed(word: int) -> int:
    """A uint32 as the int32 with the same bits (metadata is int32)."""
    return word - (1 << 32) if word >= 1 << 31 else word
