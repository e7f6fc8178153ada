"""Moving bytes in and out: from_bytes, to_bytes and to_bytes_async.

pyburn's byte format is C-ordered, little-endian, one byte per bool and uint8. float32,
int32 and float16 are stored that way already: uploads and reads are plain copies of a
contiguous range. uint8 and bool take a word per element on the GPU (see `kinds`), so
uploads widen the bytes with a map kernel and reads pack them back (``bytes.wgsl``),
both on the GPU: no per-element work in Python, which matters in the browser.
"""

from __future__ import annotations

from ...dtypes import DType, bool_, int32, uint8
from .elementwise import WORKGROUP, Read, contiguous, copy_into, launch_map
from .handle import GpuTensor, Shape
from .kinds import kind_of
from .launch import Box, Gpu, Operand
from .templates import render

_BYTE_SIZED = (uint8, bool_)
#: reads a byte of a buffer of u32 words; {at} is the byte's offset
_BYTE = "(({buf}[({at}) / 4] >> (8u * u32(({at}) % 4))) & 0xffu)"


def from_bytes(gpu: Gpu, data: bytes | memoryview, shape: Shape, dtype: DType) -> GpuTensor:
    """A contiguous tensor holding `data`."""
    kind = kind_of(dtype)
    if dtype not in _BYTE_SIZED:
        return GpuTensor(gpu.pool.upload(data), shape, dtype)
    raw = gpu.pool.upload(data)
    out = gpu.empty(shape, dtype)
    byte = Read("v", Operand(raw, 0, out.strides, itemsize=1), "u32", _BYTE)
    launch_map(gpu, out, [byte], kind.store("v"))
    return out


def _readable(gpu: Gpu, x: GpuTensor) -> tuple[GpuTensor, int, int]:
    """A tensor with x's elements that can be read as bytes: (tensor, byte offset, byte
    count), the offset a multiple of 4."""
    n = x.numel
    if x.dtype in _BYTE_SIZED:
        x = contiguous(gpu, x)
        words = -(-n // 4)
        packed = gpu.empty((words,), int32)
        source = render("bytes", workgroup=WORKGROUP)

        def meta(box: Box) -> list[int]:
            return [box.size, box.starts[0], n, box.operands[2].offset,
                    box.operands[1].offset]

        operands = {1: Operand.of(packed), 2: Operand(x.storage, x.offset, (4,), tail=3)}
        gpu.run(source, (words,), operands, meta, lambda box: -(-box.size // WORKGROUP))
        return packed, 0, n
    itemsize = x.kind.itemsize
    x = contiguous(gpu, x)
    if x.offset * itemsize % 4:  # a float16 view starting mid-word: copy it to a fresh buffer
        fresh = gpu.empty(x.shape, x.dtype)
        copy_into(gpu, fresh, x)
        x = fresh
    return x, x.offset * itemsize, n * itemsize


def to_bytes(gpu: Gpu, x: GpuTensor) -> bytes:
    """The elements as C-ordered little-endian bytes; blocks until they are ready."""
    for hook in gpu.read_hooks:
        hook.settle()
    if x.numel == 0:
        return b""
    t, start, size = _readable(gpu, x)
    return gpu.runtime.read(t.storage.buffer, start, -(-size // 4) * 4)[:size]


async def to_bytes_async(gpu: Gpu, x: GpuTensor) -> bytes:
    """Awaitable `to_bytes`."""
    for hook in gpu.read_hooks:
        await hook.settle_async()
    if x.numel == 0:
        return b""
    t, start, size = _readable(gpu, x)
    return (await gpu.runtime.read_async(t.storage.buffer, start, -(-size // 4) * 4))[:size]
