"""The wasm backend's creation kernels on wasmtime: fills, aranges (float64 arithmetic, then
rounded), and Philox words equal to ``pyburn.random``'s, across block and 128-bit counter
boundaries."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from pyburn.backends.wasm import creation, native
from pyburn.backends.wasm.assemble import Module
from pyburn.random import random_words

OUT, CANARY = 4096, b"\xa5" * 16


@pytest.fixture(scope="module")
def kernels():
    engine = native.NativeEngine(2)
    return engine, engine.instantiate(Module(creation.kernels()).binary())


def _run(kernels, name: str, nbytes: int, *args) -> bytes:
    engine, exports = kernels
    engine.write(OUT, bytes(nbytes) + CANARY)
    exports[name](OUT, *args)
    assert engine.read(OUT + nbytes, 16) == CANARY  # nothing written past the output
    return engine.read(OUT, nbytes)


@pytest.mark.parametrize("n", [0, 1, 5, 16, 37])
def test_fills_write_n_elements(kernels, n):
    assert _run(kernels, "fill_1", n, 0x1FF, n) == b"\xff" * n
    bits = struct.unpack("<i", struct.pack("<f", -2.5))[0]
    assert _run(kernels, "fill_4", 4 * n, bits, n) == struct.pack("<f", -2.5) * n


def test_aranges_compute_as_the_protocol_says(kernels):
    got = np.frombuffer(_run(kernels, "arange_f32", 4 * 23, 0.1, 0.3, 23), np.float32)
    np.testing.assert_array_equal(got, (0.1 + np.arange(23) * 0.3).astype(np.float32))
    got = np.frombuffer(_run(kernels, "arange_i32", 4 * 9, -7, 3, 9), np.int32)
    np.testing.assert_array_equal(got, -7 + 3 * np.arange(9))


@pytest.mark.parametrize("seed, offset, n", [(0, 0, 1), (42, 0, 17), (2**40 + 5, 3, 9),
                                             (7, 2**34 * 4 - 6, 12), ((1 << 64) - 1, 1, 4),
                                             (3, 4 * ((1 << 96) - 1) + 2, 7)])
def test_philox_words_are_the_streams(kernels, seed, offset, n):
    block = offset // 4
    counter = [(block >> (32 * w)) & 0xFFFFFFFF for w in range(4)]
    got = _run(kernels, "philox", 4 * n, n, offset % 4, *counter, seed & 0xFFFFFFFF,
               (seed >> 32) & 0xFFFFFFFF)
    assert list(struct.unpack(f"<{n}I", got)) == random_words(n, seed, offset)
