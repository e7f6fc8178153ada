"""The wasm backend's strided copy kernel on wasmtime against numpy's views: permuted,
sliced, flipped and broadcast sources, into contiguous and strided destinations, for each
element size."""

from __future__ import annotations

import numpy as np
import pytest

from pyburn.backends.wasm import native
from pyburn.backends.wasm.assemble import Module
from pyburn.backends.wasm.movement import copy_kernel

DTYPES = {1: np.uint8, 4: np.int32, 8: np.int64}
SRC, DST, META = 1 << 16, 1 << 18, 1024


@pytest.fixture(scope="module")
def kernels():
    engine = native.NativeEngine(8)
    module = Module([*(copy_kernel(size) for size in DTYPES), copy_kernel(4, accumulate=True)])
    return engine, engine.instantiate(module.binary())


def _views(base: np.ndarray) -> dict[str, np.ndarray]:
    return {"contiguous": base, "permuted": base.transpose(2, 0, 1),
            "sliced": base[1:, ::2, 1:4], "flipped": base[::-1, :, ::-2],
            "broadcast": np.broadcast_to(base[:, :1, :2], (3, 4, 2)),
            "one dim": base.reshape(-1)[::3]}


@pytest.mark.parametrize("size", list(DTYPES))
@pytest.mark.parametrize("view", ["contiguous", "permuted", "sliced", "flipped", "broadcast",
                                  "one dim"])
@pytest.mark.parametrize("into", ["contiguous", "transposed"])
def test_a_view_is_copied_as_numpy_reads_it(kernels, size, view, into):
    engine, exports = kernels
    base = np.arange(3 * 4 * 5, dtype=DTYPES[size]).reshape(3, 4, 5) * 7 + 1
    engine.write(SRC, base.tobytes())
    src = _views(base)[view]
    offset = src.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    shape = src.shape
    if into == "contiguous" or src.ndim < 2:
        dst_strides = np.empty(shape, DTYPES[size]).strides
        read = lambda raw: raw.reshape(shape)  # noqa: E731
    else:  # the destination is the transpose of a contiguous array of the reversed shape
        dst_strides = np.empty(shape[::-1], DTYPES[size]).T.strides
        read = lambda raw: raw.reshape(shape[::-1]).T  # noqa: E731
    rank = src.ndim
    meta = np.array([*shape, *src.strides, *dst_strides, *[0] * rank], np.int32)
    engine.write(META, meta.tobytes())
    engine.write(DST, bytes(src.size * size))
    exports[f"copy_{size}"](DST, SRC + offset, rank, META)
    raw = np.frombuffer(engine.read(DST, src.size * size), DTYPES[size])
    np.testing.assert_array_equal(read(raw), src)


def test_accumulating_into_overlapping_windows_adds_in_order(kernels):
    """A transposed convolution's pattern: windows of 3 with a step of 2 over 9 floats, so
    every other destination element takes two sources."""
    engine, exports = kernels
    src = np.arange(1, 13, dtype=np.float32).reshape(4, 3)  # 4 windows of 3
    dst = np.full(9, 0.5, np.float32)
    engine.write(SRC, src.tobytes())
    engine.write(DST, dst.tobytes())
    meta = np.array([4, 3, 12, 4, 8, 4, 0, 0], np.int32)  # shape, src strides, dst strides
    engine.write(META, meta.tobytes())
    exports["accumulate_f32"](DST, SRC, 2, META)
    want = dst.copy()
    for window in range(4):
        want[2 * window:2 * window + 3] += src[window]
    np.testing.assert_array_equal(np.frombuffer(engine.read(DST, 36), np.float32), want)
