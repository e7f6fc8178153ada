"""The "quant_matmul" capability in numpy (contract: ``pyburn.ops.capability.quantized``).

Weights are unpacked a tile of rows at a time, so that the integers and the float tile made
from them stay in cache while BLAS multiplies it: 8-bit words are viewed as their bytes, 4-bit
ones split into low and high nibbles. The weight-only product dequantizes each tile to
float32, ``(q - zero) * scale``, and runs one float32 matrix product per tile. The integer
product is exact in float32 BLAS: both factors are integers of magnitude at most 255, so a
sum over at most `EXACT_DEPTH` of them stays below 2**24, where float32 holds every integer;
longer rows are summed in pieces of that depth, and the pieces' exact values added in int32.
"""

from __future__ import annotations

import numpy as np

#: rows of the weight unpacked at a time: a float32 tile of 256 rows of 1024 is 1 MiB, which
#: stays in cache (measured on one core, a 1024 x 1024 int8 weight per channel: 256 rows of
#: x 6.9 ms in tiles of 256 rows, 7.2 ms unpacked whole, float32 6.5 ms; one row of x
#: 0.18 ms in tiles of 256, 0.22 in tiles of 64)
TILE = 256
#: the longest sum of products of two integers within [-255, 255] that float32 holds exactly
#: (255 * 255 * 258 < 2**24)
EXACT_DEPTH = 256


def unpack(data: np.ndarray, bits: int, signed: bool, k: int) -> np.ndarray:
    """The integers (N, k) of packed int32 words `data` (N, W), as int8 (signed) or uint8."""
    raw = np.ascontiguousarray(data).view(np.uint8)  # little-endian: element k at byte k
    if bits == 4:
        raw = np.stack([raw & 0xF, raw >> 4], axis=-1).reshape(raw.shape[0], -1)
        if signed:
            return ((raw ^ 8).view(np.int8) - 8)[:, :k]
    return (raw.view(np.int8) if signed else raw)[:, :k]


def _spread(p: np.ndarray, block: int, k: int) -> np.ndarray:
    """A (rows, nb) block parameter repeated over its blocks: (rows, k)."""
    return np.repeat(p, block, axis=1)[:, :k]


def quant_linear(x: np.ndarray, data: np.ndarray, scale: np.ndarray, zero: np.ndarray | None,
                 bits: int, signed: bool, block: int, k: int,
                 bias: np.ndarray | None) -> np.ndarray:
    """float32 ``x @ ((q - zero) * scale).T + bias``, one tile of weight rows at a time.
    With one block per row (per tensor, per channel) the scale multiplies the tile's
    products instead of its weights: one pass less over the tile."""
    n = data.shape[0]
    out = np.empty((x.shape[0], n), dtype=np.float32)
    whole_rows = scale.shape[1] == 1
    for start in range(0, n, TILE):
        stop = min(start + TILE, n)
        tile = unpack(data[start:stop], bits, signed, k).astype(np.float32)
        if zero is not None:
            z = zero[start:stop]
            tile -= (z if whole_rows else _spread(z, block, k)).astype(np.float32)
        if not whole_rows:
            tile *= _spread(scale[start:stop], block, k)
        product = out[:, start:stop]
        np.matmul(x, tile.T, out=product)
        if whole_rows:
            product *= scale[start:stop, 0]
    if bias is not None:
        out += bias
    return out


def quant_matmul_int(a: np.ndarray, a_zero: np.ndarray | None, data: np.ndarray,
                     zero: np.ndarray | None, bits: int, signed: bool, k: int) -> np.ndarray:
    """int32 ``(a - a_zero) @ (q - zero).T``, exact (see the module docstring)."""
    left = (a if a_zero is None else a - a_zero).astype(np.float32)
    n = data.shape[0]
    out = np.zeros((a.shape[0], n), dtype=np.int32)
    for start in range(0, n, TILE):
        stop = min(start + TILE, n)
        right = unpack(data[start:stop], bits, signed, k).astype(np.float32)
        if zero is not None:
            right -= zero[start:stop].astype(np.float32)
        for depth in range(0, k, EXACT_DEPTH):
            end = min(depth + EXACT_DEPTH, k)
            out[:, start:stop] += (left[:, depth:end] @ right[:, depth:end].T).astype(np.int32)
    return out
